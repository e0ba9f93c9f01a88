"""Leadership checks shared by the partition API handlers in cluster mode (a single node leads
every partition and never calls these)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode as E


def leader_check(cluster: Any, topic: str, partition: int, current_epoch: int) -> tuple[int, Any]:
    """(error code, the leader's replica): NOT_LEADER_OR_FOLLOWER off the leader; KIP-320's epoch
    checks when the client names the leader epoch it knows."""
    replica = cluster.leader_replica(topic, partition)
    if replica is None:
        return E.not_leader_or_follower.value, None
    if current_epoch >= 0:
        if current_epoch < replica.leader_epoch:
            return E.fenced_leader_epoch.value, None
        if current_epoch > replica.leader_epoch:
            return E.unknown_leader_epoch.value, None
    return 0, replica


def off_leader(cluster: Any, topic: str, partition: int) -> bool:
    """The partition is one of the cluster's and another broker leads it (NOT_LEADER_OR_FOLLOWER)."""
    return bool(cluster.partition(topic, partition).replicas) and cluster.leader_replica(topic, partition) is None
