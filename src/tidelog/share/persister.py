"""The persister (KIP-932): how the share partitions' leaders and the group coordinator reach the
share coordinator that keeps a share partition's state. On a single node it is the share
coordinator itself (`LocalPersister`); in a cluster the coordinator of a share partition is the
leader of its partition of `__share_group_state`, anywhere in the cluster, reached with the
persister APIs between brokers (`cluster.share_persister`, which has the same calls).

Every call answers an error code (0: done); the states are `state_store.ShareState`. A call whose
outcome is unknown (the coordinator moved, timed out) answers a retriable error after the
persister has retried for a while; each call is idempotent (a Write or an Initialize sends a
whole state), so retrying one is safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from . import state_records as SS
from .state_store import ShareState

if TYPE_CHECKING:
    from .coordinator import ShareCoordinator
    from .state_store import ShareKey


@dataclass(frozen=True, slots=True)
class Summary:
    """ReadShareGroupStateSummary's answer for a share partition with state."""

    start_offset: int
    leader_epoch: int
    state_epoch: int
    delivery_complete_count: int  # -1: not known


ABSENT_EPOCH = -1  # the state epoch a Read answers for a share partition with no state


def state_of_read(p: Any) -> ShareState | None:
    """A ReadShareGroupState answer's partition (kio) as a state; None when it has none (start
    offset and state epoch -1: tidelog's coordinators tell "no state" from a state initialized
    without a start offset, at state epoch 0 or more)."""
    if int(p.start_offset) < 0 and int(p.state_epoch) == ABSENT_EPOCH:
        return None
    return ShareState(
        int(p.start_offset),
        int(p.state_epoch),
        tuple(
            SS.StateBatch(int(b.first_offset), int(b.last_offset), int(b.delivery_state), int(b.delivery_count))
            for b in p.state_batches
        ),
    )


def summary_of_read(p: Any) -> Summary:
    """A ReadShareGroupStateSummary answer's partition (kio) as a summary."""
    return Summary(
        int(p.start_offset), int(p.leader_epoch), int(p.state_epoch), int(getattr(p, "delivery_complete_count", -1))
    )


class Persister(Protocol):
    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> int: ...

    async def read(self, key: ShareKey, leader_epoch: int) -> tuple[int, ShareState | None]: ...

    async def write(
        self,
        key: ShareKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: Iterable[SS.StateBatch],
    ) -> int: ...

    async def delete(self, key: ShareKey) -> int: ...

    async def summary(self, key: ShareKey) -> tuple[int, Summary | None]: ...

    def close(self) -> None:
        """Close what it holds open (connections to other brokers)."""


class LocalPersister:
    """A single node's persister: the share coordinator on this broker, called directly."""

    def __init__(self, coordinator: ShareCoordinator) -> None:
        self.coordinator = coordinator

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> int:
        return await self.coordinator.initialize(key, state_epoch, start_offset)

    async def read(self, key: ShareKey, leader_epoch: int) -> tuple[int, ShareState | None]:
        return await self.coordinator.read(key, leader_epoch)

    async def write(
        self,
        key: ShareKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: Iterable[SS.StateBatch],
    ) -> int:
        return await self.coordinator.write(key, state_epoch, leader_epoch, start_offset, batches)

    async def delete(self, key: ShareKey) -> int:
        return await self.coordinator.delete(key)

    async def summary(self, key: ShareKey) -> tuple[int, Summary | None]:
        return self.coordinator.summary(key)

    def close(self) -> None:
        pass
