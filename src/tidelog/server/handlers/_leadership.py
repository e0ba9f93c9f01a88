"""A leadership question shared by the partition API handlers (the others are the cluster view's,
cluster/view.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...cluster.view import ClusterView


def off_leader(cluster: ClusterView, topic: str, partition: int) -> bool:
    """The partition is one of the cluster's and another broker leads it (NOT_LEADER_OR_FOLLOWER);
    never on a single node, which leads every partition it has."""
    return cluster.replicated(topic, partition) and cluster.leader_check(topic, partition, -1)[0] != 0
