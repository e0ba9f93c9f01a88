"""What the request handlers ask about the cluster, and the single node's answers.

`SingleNode` is the default: this broker is the only one, leads every partition at epoch 0, is
the controller and hosts the coordinators (FindCoordinator answers it). `ClusterNode` (node.py)
answers the same questions from etcd's state when `etcd.connect` is set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class PartitionView:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


class ClusterView(Protocol):
    clustered: bool
    shared_security: Any  # cluster: ACL and credential changes go through etcd (security_state.py)

    async def start(self) -> None: ...
    async def controlled_shutdown(self) -> None: ...
    async def stop(self) -> None: ...
    def controller_id(self) -> int: ...
    def brokers(self, listener: str) -> list[dict[str, Any]]: ...
    def partition(self, topic: str, partition: int) -> PartitionView: ...
    def under_replicated(self) -> int: ...


class SingleNode:
    clustered = False
    shared_security = None  # ACLs and credentials are this broker's files

    def __init__(self, node_id: int, endpoint: Any) -> None:
        self.node_id = node_id
        self._endpoint = endpoint  # (listener name) -> {"node_id", "host", "port", "rack"}

    async def start(self) -> None:
        """Nothing to join."""

    async def controlled_shutdown(self) -> None:
        """No leadership to hand over."""

    async def stop(self) -> None:
        """Nothing to leave."""

    def controller_id(self) -> int:
        return self.node_id

    def brokers(self, listener: str) -> list[dict[str, Any]]:
        return [self._endpoint(listener)]

    def partition(self, topic: str, partition: int) -> PartitionView:
        n = self.node_id
        return PartitionView(n, 0, (n,), (n,), ())

    def under_replicated(self) -> int:
        return 0
