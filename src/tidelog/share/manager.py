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

Durability: every change of a share partition's state other than an acquisition is written
through the persister to its share coordinator (`persister`, `coordinator`) before the request is
answered, so an acknowledged record is never delivered again after a crash, a restart or a
leadership change, and delivery counts survive. Acquisitions are not written: after a restart or
a new leader, records that were acquired are available again. Writes of one share partition are
made one at a time, each the whole state as it is when it is sent.

Leadership: only the leader of a data partition serves its share partitions (others answer
NOT_LEADER_OR_FOLLOWER). A share partition is loaded from its coordinator at the leader epoch this
broker leads at (the Read records that epoch, fencing the previous leader's writes), and loaded
again when that epoch changes. A write fenced by a newer leader or a newer state (an administrator
altered the start offset) drops the share partition here; it is loaded again when next used. A
share partition whose state the group coordinator initialized without a start offset (-1, as
Kafka's) starts where the group's `share.auto.offset.reset` says, fixed by its first write; a
single node also initializes a share partition that has no state at its first fetch. A new share
session has the group's share partitions checked against their coordinator's state epoch at their
next use, and one that holds no acquired records is loaded again when it moved on, so that a
change made by an administrator (AlterShareGroupOffsets on the empty group) is seen.

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
from typing import TYPE_CHECKING, Any, Protocol

from kio.schema.errors import ErrorCode as E

from ..log import records as LR
from ..log.errors import LogError, OffsetOutOfRangeError
from . import state_records as SS
from .partition import SharePartition
from .partition_types import AckBatch, AcquiredRange, StateBatch
from .sessions import ShareSessions
from .state_store import ShareKey

if TYPE_CHECKING:
    from ..core.config import BrokerConfig
    from ..core.group_configs import GroupConfigs
    from ..core.partitions import Partitions
    from ..core.topics import TopicRegistry
    from ..log.log import PartitionLog
    from .persister import Persister

log = logging.getLogger("tidelog.share")
NONE = 0
TopicIdPartition = tuple[uuid.UUID, int]


@dataclass
class Fetched:
    """One partition's part of a ShareFetch answer."""

    error: int = 0
    records: bytes | None = None
    acquired: list[AcquiredRange] = field(default_factory=list)


def _now_ms() -> int:
    return int(time.time() * 1000)


class Leadership(Protocol):
    """Which data partitions this broker leads, at which leader epoch (None: not led here)."""

    def leader_epoch(self, topic: str, partition: int) -> int | None: ...


class SingleNode:
    """A single node leads every partition, at leader epoch 0."""

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        return 0


class SharePartitions:
    def __init__(
        self,
        config: BrokerConfig,
        registry: TopicRegistry,
        partitions: Partitions,
        persister: Persister,
        group_configs: GroupConfigs,
        leadership: Leadership | None = None,
    ) -> None:
        self.config = config
        self.registry = registry
        self.partitions = partitions
        self.persister = persister
        self.group_configs = group_configs
        self.leadership: Leadership = leadership if leadership is not None else SingleNode()
        self.creates_state = leadership is None  # a single node initializes at the first fetch too
        self.parts: dict[ShareKey, SharePartition] = {}
        self.epochs: dict[ShareKey, tuple[int, int]] = {}  # (leader epoch, state epoch) loaded at
        self._locks: dict[ShareKey, asyncio.Lock] = {}  # loads and writes, one at a time per key
        self._verify: set[ShareKey] = set()  # to check against the coordinator's state epoch
        self.sessions = ShareSessions()
        self._expiry: asyncio.TimerHandle | None = None
        self._expiry_at = 0.0
        self.changed = asyncio.Event()  # set when locks expire: long polls look again
        self._tasks: set[asyncio.Task[None]] = set()

    def _reset_offset(self, group_id: str, plog: PartitionLog) -> int:
        """Where a new share partition starts: `share.auto.offset.reset` of the group."""
        policy = self.group_configs.get(group_id, "share.auto.offset.reset")
        if policy == "earliest":
            return plog.log_start_offset
        if policy.startswith("by_duration:"):
            from ..core.group_configs import parse_duration_ms

            found = plog.list_offset(_now_ms() - parse_duration_ms(policy.split(":", 1)[1]))
            return found[0] if found is not None else plog.high_watermark
        return plog.high_watermark

    def _log(self, topic_id: uuid.UUID, partition: int) -> tuple[str, PartitionLog] | None:
        topic = self.registry.by_id.get(topic_id)
        if topic is None:
            return None
        plog: PartitionLog | None = self.partitions.get(topic.name, partition)
        return None if plog is None else (topic.name, plog)

    def _lock(self, key: ShareKey) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def _drop(self, key: ShareKey) -> None:
        self.parts.pop(key, None)
        self.epochs.pop(key, None)
        self._verify.discard(key)

    async def _partition(self, key: ShareKey) -> tuple[int, SharePartition | None]:
        """(error, the share partition) at this broker's present leader epoch, loaded from its
        coordinator when needed; (0, None) when it has no state yet (nothing to deliver)."""
        found = self._log(key[1], key[2])
        if found is None:
            return E.unknown_topic_or_partition.value, None
        name, plog = found
        epoch = self.leadership.leader_epoch(name, key[2])
        if epoch is None:
            self._drop(key)
            return E.not_leader_or_follower.value, None
        sp = self.parts.get(key)
        if sp is not None and self.epochs[key][0] == epoch and key not in self._verify:
            return NONE, sp
        async with self._lock(key):
            sp = self.parts.get(key)  # loaded by another request meanwhile
            if sp is not None and self.epochs[key][0] == epoch:
                if key not in self._verify or not await self._altered(key, sp):
                    return NONE, sp
            self._drop(key)
            code, state = await self.persister.read(key, epoch)
            if code:
                return code, None
            if state is None and not self.creates_state:
                return NONE, None  # the group coordinator has not initialized it (yet)
            state_epoch = state.state_epoch if state is not None else 0
            batches: tuple[SS.StateBatch, ...] = ()
            if state is None or state.start_offset < 0:
                start = self._reset_offset(key[0], plog)
                code = await self.persister.write(key, state_epoch, epoch, start, ())
                if code:
                    return code, None
            else:
                start, batches = state.start_offset, state.batches
            group = key[0]
            sp = SharePartition(
                max(start, plog.log_start_offset),
                lock_ms=self.group_configs.get_int(group, "share.record.lock.duration.ms"),
                delivery_limit=self.group_configs.get_int(group, "share.delivery.count.limit"),
                max_in_flight=self.group_configs.get_int(group, "share.partition.max.record.locks"),
                state_batches=[
                    StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                    for b in batches
                    if b.last_offset >= plog.log_start_offset
                ],
            )
            self.parts[key] = sp
            self.epochs[key] = (epoch, state_epoch)
            return NONE, sp

    async def _persist(self, key: ShareKey, sp: SharePartition) -> None:
        """Write the share partition's state as it is now; LogError when it is not written (a
        fenced write drops the share partition: it is loaded again when next used)."""
        async with self._lock(key):
            if self.parts.get(key) is not sp:
                raise LogError(E.invalid_record_state.value, f"share partition {key} was reloaded")
            leader_epoch, state_epoch = self.epochs[key]
            batches = [
                SS.StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in sp.state_batches()
            ]
            code = await self.persister.write(key, state_epoch, leader_epoch, sp.start_offset, batches)
        if code:
            if code in (E.fenced_leader_epoch.value, E.fenced_state_epoch.value):
                log.info("share partition %s: write fenced (error %d), reloading it", key, code)
                if self.parts.get(key) is sp:
                    self._drop(key)
            raise LogError(code, f"share state of {key} not written (error {code})")

    def refresh(self, group_id: str, wanted: Iterable[TopicIdPartition]) -> None:
        """A new share session of the group: at their next use, its share partitions are checked
        against their coordinator's state epoch (an administrator may have altered them)."""
        for topic_id, p in wanted:
            key = (group_id, topic_id, p)
            if key in self.parts:
                self._verify.add(key)

    async def _altered(self, key: ShareKey, sp: SharePartition) -> bool:
        """Whether the share partition's state was replaced since it was loaded here (its state
        epoch moved on) while it holds nothing acquired: then it is loaded again. Called under
        the key's lock, so no write of it is under way."""
        self._verify.discard(key)
        if sp.members():
            return False  # a member holds records: an alter needs an empty group, so none was made
        code, found = await self.persister.summary(key)
        return not code and found is not None and found.state_epoch != self.epochs[key][1]

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
            found = self._log(topic_id, p)
            if found is None:
                unknown = topic_id not in self.registry.by_id
                out[(topic_id, p)] = Fetched(
                    E.unknown_topic_id.value if unknown else E.unknown_topic_or_partition.value
                )
                continue
            plog = found[1]
            code, sp = await self._partition(key)
            if code:
                out[(topic_id, p)] = Fetched(code)
                continue
            if sp is None:
                continue  # not initialized yet: nothing to deliver
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
            found = self._log(tp[0], tp[1])
            epoch = self.leadership.leader_epoch(found[0], tp[1]) if found is not None else None
            if found is not None and epoch is None:
                out[tp] = E.not_leader_or_follower.value
                continue
            sp = self.parts.get(key)
            if sp is None or self.epochs[key][0] != epoch:
                # nothing acquired here at this epoch (a restart, a new leader: the locks are gone)
                out[tp] = E.invalid_record_state.value
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
        self.persister.close()
