"""KIP-951 on the hot paths: a partition answered NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH)
carries the current leader and its epoch, and the response the leaders' endpoints on the
connection's listener, so clients re-route without a Metadata request (wire/leader_hint.py
encodes them). Cluster mode only: a single node leads everything."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..wire import leader_hint as H

if TYPE_CHECKING:
    from ..cluster.view import ClusterView


class LeaderHints:
    def __init__(self, cluster: ClusterView, listener: str) -> None:
        self.cluster = cluster
        self.listener = listener
        self.leaders: set[int] = set()

    def current_leader(self, topic: str, partition: int) -> bytes | None:
        pv = self.cluster.partition(topic, partition)
        if pv.leader < 0 or pv.leader == self.cluster.node_id:
            return None
        self.leaders.add(pv.leader)
        return H.current_leader(pv.leader, pv.leader_epoch)

    def node_endpoints(self) -> bytes | None:
        if not self.leaders:
            return None
        nodes = [
            (b["node_id"], b["host"], b["port"], b["rack"])
            for b in self.cluster.brokers(self.listener)
            if b["node_id"] in self.leaders
        ]
        return H.node_endpoints(nodes) if nodes else None
