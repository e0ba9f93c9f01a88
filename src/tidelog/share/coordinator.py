"""The share coordinator (KIP-932): it answers the persister's five calls - Initialize, Read,
Write, Delete and ReadSummary ShareGroupState - for the share partitions whose partition of
`__share_group_state` this broker coordinates (every partition on a single node; in a cluster,
those it leads, loaded and unloaded as leadership moves, like the group coordinator).

Who may change a share partition's state, as Kafka's ShareCoordinatorShard decides it:

- the *leader epoch* is the data partition leader's. A Read at a higher epoch records it (a new
  share-partition leader took over); a Read or Write at a lower one is FENCED_LEADER_EPOCH. So
  once the new leader of a data partition has read the state, the deposed one can no longer
  overwrite it (it may not know it is deposed yet).
- the *state epoch* is the state's generation: Initialize (the group coordinator, when a share
  group first uses a partition or an administrator alters its start offset) writes a fresh state
  at a state epoch at least the current one; a Write at an older state epoch is
  FENCED_STATE_EPOCH (its writer loaded the state before it was replaced, and reloads).

Every answer rests on a write in a cluster: Initialize, Write and Delete write; a Read writes a
snapshot recording the reader's epoch even when it does not raise it, so that a deposed
coordinator (one that still believes it leads) cannot answer from memory - its write fails with
NOT_COORDINATOR and the caller asks the new one. ReadSummary (for administrators) answers from
memory.

A share partition with no state reads as start offset -1 (not initialized), as Kafka's. The calls
on one share partition run one at a time (as Kafka's coordinator runtime runs a partition's
operations), so a write never starts from a state another call is replacing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ..core.topics import SHARE_STATE_TOPIC
from ..log.errors import LogError
from . import state_records as SS
from .persister import Summary
from .state_store import ShareKey, ShareState, ShareStateStore, delivery_complete

if TYPE_CHECKING:
    from ..core.topics import TopicRegistry

log = logging.getLogger("tidelog.share")
NONE = 0
NO_EPOCH = -1  # a Read that records no leader epoch (the group coordinator's, an administrator's)


class ShareCoordinator:
    def __init__(self, store: ShareStateStore, registry: TopicRegistry) -> None:
        self.store = store
        self.registry = registry
        # cluster mode: the partitions of __share_group_state coordinated here -> leader epoch
        self.owned: dict[int, int] | None = {} if store.clustered else None
        self.loading: set[int] = set()
        self._locks: dict[ShareKey, asyncio.Lock] = {}  # one call at a time per share partition

    # ---- the coordinators' placement (cluster mode) ----------------------------------------------
    @property
    def num_partitions(self) -> int:
        return self.store.num_partitions

    def set_num_partitions(self, n: int) -> None:
        self.store.num_partitions = n

    def begin_load(self, partition: int) -> None:
        self.loading.add(partition)

    def load_partition(self, partition: int, leader_epoch: int) -> None:
        assert self.owned is not None
        self.loading.discard(partition)
        self.store.forget_partition(partition)
        n = self.store.load_partition(partition)
        self.owned[partition] = leader_epoch
        log.info(
            "%s-%d: coordinating its share state (epoch %d): %d records", SHARE_STATE_TOPIC, partition, leader_epoch, n
        )

    def unload_partition(self, partition: int) -> None:
        assert self.owned is not None
        self.loading.discard(partition)
        self.owned.pop(partition, None)
        self.store.forget_partition(partition)
        log.info("%s-%d: no longer coordinating its share state", SHARE_STATE_TOPIC, partition)

    async def resume(self) -> None:
        """Nothing is left half done by a load: each share partition's state is whole in its log."""

    # ---- the persister's calls -----------------------------------------------------------------
    def _lock(self, key: ShareKey) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> int:
        async with self._lock(key):
            return await self._initialize(key, state_epoch, start_offset)

    async def read(self, key: ShareKey, leader_epoch: int) -> tuple[int, ShareState | None]:
        """(error, state) - state None: not initialized."""
        async with self._lock(key):
            return await self._read(key, leader_epoch)

    async def write(
        self,
        key: ShareKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: Iterable[SS.StateBatch],
    ) -> int:
        async with self._lock(key):
            return await self._write_state(key, state_epoch, leader_epoch, start_offset, batches)

    async def delete(self, key: ShareKey) -> int:
        async with self._lock(key):
            return await self._delete(key)

    def status(self, key: ShareKey) -> int:
        """NONE when this broker coordinates `key` now, else the error the caller retries on."""
        if self.owned is None:
            return NONE
        p = self.store.partition_of(key)
        if p in self.owned:
            return NONE
        return E.coordinator_load_in_progress.value if p in self.loading else E.not_coordinator.value

    def _unknown(self, key: ShareKey) -> bool:
        topic = self.registry.by_id.get(key[1])
        return topic is None or not 0 <= key[2] < topic.partitions

    async def _initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> int:
        if code := self.status(key):
            return code
        if self._unknown(key):
            return E.unknown_topic_or_partition.value
        old = self.store.get(key)
        if old is not None and state_epoch != NO_EPOCH and state_epoch < old.state_epoch:
            return E.fenced_state_epoch.value
        epoch = old.state_epoch if state_epoch == NO_EPOCH and old is not None else max(state_epoch, 0)
        leader_epoch = old.leader_epoch if old is not None else 0
        return await self._write(key, start_offset, (), epoch, leader_epoch)

    async def _read(self, key: ShareKey, leader_epoch: int) -> tuple[int, ShareState | None]:
        if code := self.status(key):
            return code, None
        if self._unknown(key):
            return E.unknown_topic_or_partition.value, None
        old = self.store.get(key)
        if old is None:
            return NONE, None
        if leader_epoch != NO_EPOCH and leader_epoch < old.leader_epoch:
            return E.fenced_leader_epoch.value, None
        if self.owned is not None or leader_epoch > old.leader_epoch:  # confirmed (and recorded) by a write
            code = await self._write(
                key, old.start_offset, old.batches, old.state_epoch, max(leader_epoch, old.leader_epoch)
            )
            if code:
                return code, None
        return NONE, self.store.get(key)

    async def _write_state(
        self,
        key: ShareKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: Iterable[SS.StateBatch],
    ) -> int:
        if code := self.status(key):
            return code
        if self._unknown(key):
            return E.unknown_topic_or_partition.value
        old = self.store.get(key)
        if old is not None and leader_epoch < old.leader_epoch:
            return E.fenced_leader_epoch.value
        if old is not None and state_epoch < old.state_epoch:
            return E.fenced_state_epoch.value
        return await self._write(key, start_offset, batches, state_epoch, leader_epoch)

    async def _delete(self, key: ShareKey) -> int:
        if code := self.status(key):
            return code
        try:
            await self.store.delete([key])
        except LogError as e:
            return e.error_code
        return NONE

    def summary(self, key: ShareKey) -> tuple[int, Summary | None]:
        if code := self.status(key):
            return code, None
        if self._unknown(key):
            return E.unknown_topic_or_partition.value, None
        state = self.store.get(key)
        if state is None:
            return NONE, None
        return NONE, Summary(
            state.start_offset, state.leader_epoch, state.state_epoch, delivery_complete(state.batches)
        )

    async def _write(
        self, key: ShareKey, start: int, batches: Iterable[SS.StateBatch], state_epoch: int, leader_epoch: int
    ) -> int:
        try:
            await self.store.write(key, start, batches, state_epoch, leader_epoch)
        except LogError as e:
            log.info("share state of %s not written: %s", key, e)
            return e.error_code
        return NONE

    def of_group(self, group_id: str) -> dict[ShareKey, ShareState]:
        return self.store.of_group(group_id)
