"""The share partitions led by this broker (KIP-932): ShareFetch and ShareAcknowledge's work, as
Kafka's SharePartitionManager.

For each (share group, topic, partition) a `partition.SharePartition` holds which records past the
share-partition start offset are available, acquired (by which member, until when), acknowledged
or archived. A ShareFetch reads whole batches from the log from the first available offset up to
the high watermark (the last stable offset for `share.isolation.level=read_committed`), acquires
up to `max_records` of their records for the member under an acquisition lock of
`share.record.lock.duration.ms`, and answers the batches' bytes with the acquired offset ranges
(the consumer delivers only those). Acknowledgements (piggy-backed on ShareFetch, or
ShareAcknowledge) accept, release or reject acquired records; locks that expire release theirs;
a record delivered `share.delivery.count.limit` times is archived.

Durability: every change of a share partition's state other than an acquisition is written to
`__share_group_state` (`state_store`) before the request is answered, so an acknowledged record is
never delivered again after a crash or restart, and delivery counts survive. Acquisitions are not
written: after a restart, records that were acquired are available again. A share partition's
state is created (its start offset fixed by `share.auto.offset.reset`) when the group coordinator
first assigns it, or at its first fetch.

Memory: the in-flight window of each share partition is bounded (`group.share.partition.max.
record.locks`); a fetch reads at most `max_bytes` of the log.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ..log import records as LR
from ..log.errors import LogError, OffsetOutOfRangeError
from . import state_records as SS
from .partition import AckBatch, AcquiredRange, SharePartition, StateBatch
from .sessions import ShareSessions
from .state_store import ShareKey, ShareStateStore, delivery_complete

if TYPE_CHECKING:
    from ..core.config import BrokerConfig
    from ..core.group_configs import GroupConfigs
    from ..core.partitions import Partitions
    from ..core.topics import TopicRegistry
    from ..log.log import PartitionLog

log = logging.getLogger("tidelog.share")
TopicIdPartition = tuple[uuid.UUID, int]


@dataclass
class Fetched:
    """One partition's part of a ShareFetch answer."""

    error: int = 0
    records: bytes | None = None
    acquired: list[AcquiredRange] = field(default_factory=list)


def _now_ms() -> int:
    return int(time.time() * 1000)


class SharePartitions:
    def __init__(
        self,
        config: BrokerConfig,
        registry: TopicRegistry,
        partitions: Partitions,
        store: ShareStateStore,
        group_configs: GroupConfigs,
    ) -> None:
        self.config = config
        self.registry = registry
        self.partitions = partitions
        self.store = store
        self.group_configs = group_configs
        self.parts: dict[ShareKey, SharePartition] = {}
        self.sessions = ShareSessions()
        self._expiry: asyncio.TimerHandle | None = None
        self._expiry_at = 0.0
        self.changed = asyncio.Event()  # set when locks expire: long polls look again
        self._tasks: set[asyncio.Task[None]] = set()

    # ---- state creation (the group coordinator's ShareInitializer) --------------------------------
    async def initialize(self, group_id: str, partitions: Mapping[uuid.UUID, Iterable[int]]) -> None:
        for topic_id, ps in partitions.items():
            for p in ps:
                key = (group_id, topic_id, p)
                if self.store.get(key) is None:
                    await self.store.write(key, self._reset_offset(group_id, topic_id, p), ())

    def _reset_offset(self, group_id: str, topic_id: uuid.UUID, partition: int) -> int:
        """Where a new share partition starts: `share.auto.offset.reset` of the group."""
        plog = self._log(topic_id, partition)
        if plog is None:
            return 0
        policy = self.group_configs.get(group_id, "share.auto.offset.reset")
        if policy == "earliest":
            return plog.log_start_offset
        if policy.startswith("by_duration:"):
            from ..core.group_configs import parse_duration_ms

            found = plog.list_offset(_now_ms() - parse_duration_ms(policy.split(":", 1)[1]))
            return found[0] if found is not None else plog.high_watermark
        return plog.high_watermark

    def _log(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | None:
        topic = self.registry.by_id.get(topic_id)
        if topic is None:
            return None
        plog: PartitionLog | None = self.partitions.get(topic.name, partition)
        return plog

    async def _partition(self, key: ShareKey) -> SharePartition | None:
        sp = self.parts.get(key)
        if sp is not None:
            return sp
        plog = self._log(key[1], key[2])
        if plog is None:
            return None
        state = self.store.get(key)
        if state is None:
            await self.store.write(key, self._reset_offset(*key), ())
            state = self.store.get(key)
            assert state is not None
        sp = self.parts.get(key)  # another request may have made it meanwhile
        if sp is None:
            group = key[0]
            sp = SharePartition(
                max(state.start_offset, plog.log_start_offset),
                lock_ms=self.group_configs.get_int(group, "share.record.lock.duration.ms"),
                delivery_limit=self.group_configs.get_int(group, "share.delivery.count.limit"),
                max_in_flight=self.config["group.share.partition.max.record.locks"],
                state_batches=[
                    StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                    for b in state.batches
                    if b.last_offset >= plog.log_start_offset
                ],
            )
            self.parts[key] = sp
        return sp

    async def _persist(self, key: ShareKey, sp: SharePartition) -> None:
        await self.store.write(
            key,
            sp.start_offset,
            [
                SS.StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in sp.state_batches()
            ],
        )

    # ---- fetching ----------------------------------------------------------------------------------
    async def fetch(
        self, group_id: str, member_id: str, wanted: Iterable[TopicIdPartition], max_records: int, max_bytes: int
    ) -> dict[TopicIdPartition, Fetched]:
        """Acquire records of `wanted` for the member; partitions with nothing to give are left out."""
        out: dict[TopicIdPartition, Fetched] = {}
        now = _now_ms()
        committed = self.group_configs.get(group_id, "share.isolation.level") == "read_committed"
        for topic_id, p in wanted:
            if max_records <= 0 or max_bytes <= 0:
                break
            key = (group_id, topic_id, p)
            plog = self._log(topic_id, p)
            if plog is None:
                unknown = topic_id not in self.registry.by_id
                out[(topic_id, p)] = Fetched(
                    E.unknown_topic_id.value if unknown else E.unknown_topic_or_partition.value
                )
                continue
            sp = await self._partition(key)
            if sp is None:
                out[(topic_id, p)] = Fetched(E.unknown_topic_or_partition.value)
                continue
            sp.expire(now)
            if sp.start_offset < plog.log_start_offset:
                sp.move_start(plog.log_start_offset)
            start = sp.fetch_offset()
            upto = plog.last_stable_offset if committed else plog.high_watermark
            if start >= upto:
                continue
            try:
                info = plog.read(start, max_bytes, upto, min_one=True)
            except OffsetOutOfRangeError:
                sp.move_start(plog.log_start_offset)
                continue
            if info.records is None:
                continue
            data = info.records.tobytes()
            headers = [h for _, h in LR.iter_batches(data)]
            batches = [(h.base_offset, h.last_offset) for h in headers]
            # never delivered: transaction markers, and with read_committed aborted transactions
            skipped = [(h.base_offset, h.last_offset) for h in headers if h.is_control]
            if committed and batches:
                aborted = plog.collect_aborted(batches[0][0], batches[-1][1] + 1)
                skipped += [
                    (h.base_offset, h.last_offset)
                    for h in headers
                    if h.is_transactional
                    and not h.is_control
                    and any(
                        a.producer_id == h.producer_id and a.first_offset <= h.base_offset <= a.last_offset
                        for a in aborted
                    )
                ]
            acquired = sp.acquire(member_id, batches, max_records, now, aborted=sorted(skipped))
            log.debug("%s: %s acquires %s (from %d)", key, member_id, acquired, start)
            if not acquired:
                continue
            max_records -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
            max_bytes -= len(data)
            out[(topic_id, p)] = Fetched(0, data, acquired)
        self._schedule_expiry()
        return out

    def next_offsets(self, group_id: str, wanted: Iterable[TopicIdPartition]) -> list[tuple[str, int]]:
        """The (topic, partition) logs a long poll waits on."""
        keys = []
        for topic_id, p in wanted:
            topic = self.registry.by_id.get(topic_id)
            if topic is not None:
                keys.append((topic.name, p))
        return keys

    # ---- acknowledging -----------------------------------------------------------------------------
    async def acknowledge(
        self, group_id: str, member_id: str, acks: Mapping[TopicIdPartition, list[AckBatch]]
    ) -> dict[TopicIdPartition, int]:
        """Apply acknowledgements; each partition's error (0, INVALID_RECORD_STATE, or the state
        write's). Answered once the new state is durable."""
        out: dict[TopicIdPartition, int] = {}
        now = _now_ms()
        for tp, batches in acks.items():
            key = (group_id, tp[0], tp[1])
            sp = self.parts.get(key)
            if sp is None:
                out[tp] = E.invalid_record_state.value  # nothing acquired here (a restart: locks are gone)
                continue
            sp.expire(now)
            codes = sp.acknowledge(member_id, batches, now, atomic=True)  # as Kafka: all or nothing
            err = next((c for c in codes if c), 0)
            log.debug("%s: %s acknowledges %s: %s", key, member_id, batches, codes)
            out[tp] = err
            if not err:
                try:
                    await self._persist(key, sp)
                except LogError as e:
                    out[tp] = e.error_code
        self.changed.set()
        self.changed = asyncio.Event()
        return out

    # ---- members and sessions ----------------------------------------------------------------------
    def release(self, group_id: str, member_id: str) -> None:
        """A member left (its share session closed, its connection or its group membership ended):
        the records it holds are available again."""
        now = _now_ms()
        for key, sp in list(self.parts.items()):
            if key[0] == group_id and sp.release_member(member_id, now):
                self._spawn(self._persist_logged(key, sp))
        self.changed.set()
        self.changed = asyncio.Event()

    def connection_closed(self, connection: object) -> None:
        for s in self.sessions.of_connection(connection):
            self.sessions.close(s.group_id, s.member_id)
            self.release(s.group_id, s.member_id)

    # ---- lock expiry -------------------------------------------------------------------------------
    def _schedule_expiry(self) -> None:
        deadlines = [d for sp in self.parts.values() if (d := sp.next_deadline()) is not None]
        if not deadlines:
            return
        at = min(deadlines) / 1000
        if self._expiry is not None and self._expiry_at <= at:
            return
        if self._expiry is not None:
            self._expiry.cancel()
        loop = asyncio.get_running_loop()
        self._expiry_at = at
        self._expiry = loop.call_later(max(0.0, at - time.time()), self._expire)

    def _expire(self) -> None:
        self._expiry = None
        now = _now_ms()
        for key, sp in list(self.parts.items()):
            if sp.expire(now):
                self._spawn(self._persist_logged(key, sp))
        self.changed.set()
        self.changed = asyncio.Event()
        self._schedule_expiry()

    async def _persist_logged(self, key: ShareKey, sp: SharePartition) -> None:
        try:
            await self._persist(key, sp)
        except LogError as e:
            log.warning("share state of %s not written: %s", key, e)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def stop(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        for t in self._tasks:
            t.cancel()

    # ---- admin (the group coordinator's share-offsets APIs) --------------------------------------
    def summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, int, int] | None:
        """(start offset, leader epoch, records past it whose delivery is complete) of a share
        partition with state, as ReadShareGroupStateSummary answers; None without state."""
        key = (group_id, topic_id, partition)
        sp = self.parts.get(key)
        if sp is not None:
            return sp.start_offset, 0, delivery_complete(sp.state_batches())
        state = self.store.get(key)
        if state is None:
            return None
        return state.start_offset, 0, delivery_complete(state.batches)

    def end_offset(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The partition's high watermark (the next offset a consumer could read), None when the
        partition is not here."""
        plog = self._log(topic_id, partition)
        return None if plog is None else plog.high_watermark

    async def reset(self, group_id: str, offsets: Mapping[uuid.UUID, Mapping[int, int]]) -> None:
        """AlterShareGroupOffsets: each share partition starts again at its offset with nothing in
        flight (the group is empty: nothing is acquired). Durable when this returns."""
        for topic_id, ps in offsets.items():
            for p, start in ps.items():
                key = (group_id, topic_id, p)
                self.parts.pop(key, None)
                await self.store.write(key, start, ())

    async def remove(self, group_id: str, partitions: Mapping[uuid.UUID, Iterable[int]]) -> None:
        """The share state of these partitions deleted (DeleteShareGroupOffsets, DeleteGroups).
        Durable when this returns."""
        keys = [(group_id, t, p) for t, ps in partitions.items() for p in ps]
        for k in keys:
            self.parts.pop(k, None)
        await self.store.delete(keys)
