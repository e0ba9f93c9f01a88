"""What the five persister APIs' handlers share (KIP-932; Initialize / Read / Write / Delete /
ReadSummary ShareGroupState, sent by other brokers of the cluster to the share coordinator): the
(topic id, partition) keys of a request, each answered by `share.coordinator.ShareCoordinator`
(NOT_COORDINATOR where this broker does not coordinate the key's state: the sender looks again).
Authorization: ClusterAction on the cluster (`security.rules_share`)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def per_partition(
    group_id: str, topics: Iterable[Any], answer: Callable[[tuple[str, uuid.UUID, int], Any], Awaitable[T]]
) -> list[tuple[uuid.UUID, list[T]]]:
    """[(topic id, [answer per partition])] in the request's order."""
    out: list[tuple[uuid.UUID, list[T]]] = []
    for t in topics:
        out.append((t.topic_id, [await answer((group_id, t.topic_id, p.partition), p) for p in t.partitions]))
    return out
