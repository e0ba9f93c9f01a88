"""Durable group state: committed offsets and group metadata in `__consumer_offsets`.

`OffsetStore` is the only place that knows the records are kept in a log. It holds the
materialized view (latest offset per group/topic/partition, latest metadata per group) and writes
every change as keyed records (formats in `records`) through a `GroupLog`, the tiny interface to
the storage engine:

    append(partition, records, producer_id=-1, producer_epoch=-1, transactional=False)
    append_marker(partition, producer_id, producer_epoch, commit)
    replay(partition) -> iterable of LogEntry (in offset order)

`load()` replays every partition: later records win, a null value deletes, so a restarted broker
sees exactly the state it had (compaction only ever removes records that a later one shadows).
The records of consumer groups (KIP-848: key versions 3-16, `consumer_records`) are kept decoded,
latest per key, in `consumer`, from which `consumer_protocol` rebuilds the groups; they are
written with `write_consumer`. Share groups' (9-15) likewise in `share` (`write_share`), streams
groups' (17-23, `streams_records`) in `streams` (`write_streams`).

Transactional offsets (TxnOffsetCommit) are staged per producer id with `stage()`: they
are written as transactional records, kept in `pending`, and become visible offsets only when
`complete(producer_id, commit=True)` writes the commit marker; an abort drops them. Replay follows
the same rule, so a crash between the two leaves them invisible, as in Kafka. A transactional write
at an older producer epoch than the latest its partition saw for the producer (one that arrives
after its transaction ended) is refused with INVALID_PRODUCER_EPOCH, as Kafka's log fences it.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..log.errors import LogError
from ..log.log import AppendInfo, PartitionLog
from ..wire.errors import INVALID_PRODUCER_EPOCH
from . import consumer_records as CR
from . import records as R
from . import share_records as SR
from . import streams_records as STR
from .records import GroupKey, GroupValue, OffsetKey, OffsetValue

if TYPE_CHECKING:
    from ..core.partitions import Partitions

log = logging.getLogger("tidelog.groups")
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class LogEntry:
    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    transactional: bool = False
    control: bool | None = None  # None: a data record; True/False: a commit/abort marker
    producer_epoch: int = -1


class GroupLog(Protocol):
    def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool = False,
    ) -> Awaitable[None] | None: ...

    def append_marker(
        self, partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> Awaitable[None] | None: ...

    def replay(self, partition: int) -> Iterable[LogEntry]: ...


class MemoryGroupLog:
    """A GroupLog in memory: for unit tests, and as the fallback when no log engine is wired."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[LogEntry]] = {}

    def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool = False,
    ) -> None:
        self.partitions.setdefault(partition, []).extend(
            LogEntry(k, v, producer_id, transactional, None, producer_epoch) for k, v in records
        )

    def append_marker(self, partition: int, producer_id: int, producer_epoch: int, commit: bool) -> None:
        self.partitions.setdefault(partition, []).append(
            LogEntry(None, None, producer_id, True, commit, producer_epoch)
        )

    def replay(self, partition: int) -> list[LogEntry]:
        return list(self.partitions.get(partition, ()))


async def _maybe_await(res: Any) -> None:
    if inspect.isawaitable(res):
        await res


class OffsetStore:
    def __init__(self, backend: GroupLog, num_partitions: int) -> None:
        self.backend = backend
        self.num_partitions = num_partitions
        self.offsets: dict[str, dict[TopicPartition, OffsetValue]] = {}
        self.groups: dict[str, GroupValue] = {}
        # consumer groups (KIP-848): group -> record key -> its latest value
        self.consumer: dict[str, dict[CR.ConsumerGroupRecordKey, CR.ConsumerGroupRecordValue]] = {}
        # share groups (KIP-932): group -> record key -> its latest value
        self.share: dict[str, dict[SR.ShareGroupRecordKey, SR.ShareGroupRecordValue]] = {}
        # streams groups (KIP-1071): group -> record key -> its latest value
        self.streams: dict[str, dict[STR.StreamsGroupRecordKey, STR.StreamsGroupRecordValue]] = {}
        # producer id -> group -> partition -> offset, not yet visible
        self.pending: dict[int, dict[str, dict[TopicPartition, OffsetValue]]] = {}
        # (partition, producer id) -> the latest epoch its transactional writes and markers carried
        self.producer_epochs: dict[tuple[int, int], int] = {}

    def set_num_partitions(self, n: int) -> None:
        """`__consumer_offsets` has `n` partitions (cluster mode: known once the topic exists)."""
        self.num_partitions = n

    def partition_for(self, group: str) -> int:
        return R.partition_for(group, self.num_partitions)

    # ---- loading ---------------------------------------------------------------------------
    def load(self) -> None:
        count = 0
        for p in range(self.num_partitions):
            count += self.load_partition(p)
        log.info(
            "loaded %d groups with committed offsets, %d group metadata records from %d records",
            len(self.offsets),
            len(self.groups),
            count,
        )

    def load_partition(self, partition: int) -> int:
        """Replay one partition into the view (cluster mode: this broker became its leader);
        the number of records read."""
        count = 0
        for entry in self.backend.replay(partition):
            count += 1
            try:
                self._apply(entry, partition)
            except R.RecordFormatError as e:
                log.warning("__consumer_offsets-%d: skipping unreadable record: %s", partition, e)
        return count

    def forget_partition(self, partition: int) -> None:
        """Drop the view of one partition's groups (cluster mode: leadership moved away)."""
        mine = self.partition_for
        for group in [g for g in self.offsets if mine(g) == partition]:
            del self.offsets[group]
        for group in [g for g in self.groups if mine(g) == partition]:
            del self.groups[group]
        for group in [g for g in self.consumer if mine(g) == partition]:
            del self.consumer[group]
        for group in [g for g in self.share if mine(g) == partition]:
            del self.share[group]
        for group in [g for g in self.streams if mine(g) == partition]:
            del self.streams[group]
        for pid, staged in list(self.pending.items()):
            for group in [g for g in staged if mine(g) == partition]:
                del staged[group]
            if not staged:
                del self.pending[pid]
        for key in [k for k in self.producer_epochs if k[0] == partition]:
            del self.producer_epochs[key]

    def _apply(self, entry: LogEntry, partition: int) -> None:
        if entry.transactional and entry.producer_id >= 0:
            self._saw_epoch(partition, entry.producer_id, entry.producer_epoch)
        if entry.control is not None:
            # a marker completes what the producer staged in this partition (its groups)
            staged = self.pending.get(entry.producer_id, {})
            here = {g: offs for g, offs in staged.items() if self.partition_for(g) == partition}
            for g in here:
                del staged[g]
            if not staged:
                self.pending.pop(entry.producer_id, None)
            if entry.control:
                for group, offs in here.items():
                    self.offsets.setdefault(group, {}).update(offs)
            return
        if entry.key is None:
            return
        kind = int.from_bytes(entry.key[:2], "big", signed=True) if len(entry.key) >= 2 else -1
        if kind in SR.RECORD_TYPES:
            skey = SR.decode_key(entry.key)
            if isinstance(skey, SR.ShareGroupPartitionMetadataKey):
                return  # Kafka 4.0's, unreadable since 4.1 (Kafka skips it too)
            sview = self.share.setdefault(skey.group, {})
            if entry.value is None:
                sview.pop(skey, None)
                if not sview:
                    del self.share[skey.group]
            else:
                sview[skey] = SR.decode_value(skey, entry.value)
            return
        if kind in STR.RECORD_TYPES:
            tkey = STR.decode_key(entry.key)
            if isinstance(tkey, STR.StreamsGroupPartitionMetadataKey):
                return  # Kafka 4.0-4.1's, skipped by Kafka 4.3.1 too
            tview = self.streams.setdefault(tkey.group, {})
            if entry.value is None:
                tview.pop(tkey, None)
                if not tview:
                    del self.streams[tkey.group]
            else:
                tview[tkey] = STR.decode_value(tkey, entry.value)
            return
        if kind >= CR.CONSUMER_GROUP_METADATA:
            if kind not in CR.RECORD_TYPES:
                return  # a record type of a later Kafka
            ckey = CR.decode_key(entry.key)
            if isinstance(ckey, CR.ConsumerGroupPartitionMetadataKey):
                return  # Kafka < 4.1's subscription metadata: replaced by the group's metadata hash
            view = self.consumer.setdefault(ckey.group, {})
            if entry.value is None:
                view.pop(ckey, None)
                if not view:
                    del self.consumer[ckey.group]
            else:
                view[ckey] = CR.decode_value(ckey, entry.value)
            return
        key = R.decode_key(entry.key)
        if isinstance(key, OffsetKey):
            tp = (key.topic, key.partition)
            if entry.transactional:
                if entry.value is not None:
                    self.pending.setdefault(entry.producer_id, {}).setdefault(key.group, {})[tp] = (
                        R.decode_offset_value(entry.value)
                    )
                return
            if entry.value is None:
                current = self.offsets.get(key.group)
                if current is not None:
                    current.pop(tp, None)
                    if not current:
                        del self.offsets[key.group]
            else:
                self.offsets.setdefault(key.group, {})[tp] = R.decode_offset_value(entry.value)
        else:
            if entry.value is None:
                self.groups.pop(key.group, None)
            else:
                self.groups[key.group] = R.decode_group_value(entry.value)

    # ---- reads -----------------------------------------------------------------------------
    def committed(self, group: str) -> dict[TopicPartition, OffsetValue]:
        return self.offsets.get(group, {})

    def has_pending(self, group: str, tp: TopicPartition) -> bool:
        return any(tp in staged.get(group, ()) for staged in self.pending.values())

    # ---- writes ----------------------------------------------------------------------------
    async def commit(self, group: str, offsets: dict[TopicPartition, OffsetValue]) -> None:
        if not offsets:
            return
        recs = [
            (R.encode_offset_key(OffsetKey(group, t, p)), R.encode_offset_value(v)) for (t, p), v in offsets.items()
        ]
        await _maybe_await(self.backend.append(self.partition_for(group), recs))
        self.offsets.setdefault(group, {}).update(offsets)

    async def delete_offsets(self, group: str, tps: Iterable[TopicPartition]) -> None:
        current = self.offsets.get(group, {})
        tps = [tp for tp in tps if tp in current]
        if not tps:
            return
        recs = [(R.encode_offset_key(OffsetKey(group, t, p)), None) for t, p in tps]
        await _maybe_await(self.backend.append(self.partition_for(group), recs))
        for tp in tps:
            current.pop(tp, None)
        if not current:
            self.offsets.pop(group, None)

    async def store_group(self, group: str, value: GroupValue) -> None:
        rec = (R.encode_group_key(GroupKey(group)), R.encode_group_value(value))
        await _maybe_await(self.backend.append(self.partition_for(group), [rec]))
        self.groups[group] = value

    async def delete_group(self, group: str) -> None:
        """Tombstones for every offset of `group` and for its metadata, in one append."""
        recs = [(R.encode_offset_key(OffsetKey(group, t, p)), None) for t, p in self.offsets.get(group, {})]
        recs.append((R.encode_group_key(GroupKey(group)), None))
        await _maybe_await(self.backend.append(self.partition_for(group), recs))
        self.offsets.pop(group, None)
        self.groups.pop(group, None)

    async def write_consumer(
        self,
        group: str,
        records: Sequence[tuple[CR.ConsumerGroupRecordKey | GroupKey, CR.ConsumerGroupRecordValue | GroupValue | None]],
    ) -> None:
        """Write a consumer group's records (`consumer_records` keys and values; None deletes) in one
        append, then keep them in the view. A classic `GroupKey` goes with them when the group
        converts (online migration): with None it deletes the classic group's metadata, with a
        GroupValue it writes it (the group is a classic one again). Raises the write's error
        (NOT_COORDINATOR...): the view is not changed."""
        if not records:
            return
        encoded: list[tuple[bytes, bytes | None]] = []
        for key, value in records:
            if isinstance(key, GroupKey):
                assert value is None or isinstance(value, GroupValue), "a classic group's key takes its own value"
                encoded.append((R.encode_group_key(key), None if value is None else R.encode_group_value(value)))
            else:
                assert not isinstance(value, GroupValue)
                encoded.append((CR.encode_key(key), None if value is None else CR.encode_value(value)))
        await _maybe_await(self.backend.append(self.partition_for(group), encoded))
        for key, value in records:
            if isinstance(key, GroupKey):
                if isinstance(value, GroupValue):
                    self.groups[key.group] = value
                else:
                    self.groups.pop(key.group, None)
                continue
            view = self.consumer.setdefault(group, {})
            if value is None:
                view.pop(key, None)
            elif not isinstance(value, GroupValue):
                view[key] = value
        if not self.consumer.get(group, True):
            del self.consumer[group]

    async def write_streams(
        self,
        group: str,
        records: Sequence[tuple[STR.StreamsGroupRecordKey | GroupKey, STR.StreamsGroupRecordValue | None]],
    ) -> None:
        """A streams group's records (`streams_records`; a classic `GroupKey` with None deletes the
        classic group's metadata), in one append, then kept in the view."""
        if not records:
            return
        encoded: list[tuple[bytes, bytes | None]] = []
        for key, value in records:
            if isinstance(key, GroupKey):
                assert value is None, "only a classic group's tombstone goes with a streams group's records"
                encoded.append((R.encode_group_key(key), None))
            else:
                encoded.append((STR.encode_key(key), None if value is None else STR.encode_value(value)))
        await _maybe_await(self.backend.append(self.partition_for(group), encoded))
        for key, value in records:
            if isinstance(key, GroupKey):
                self.groups.pop(key.group, None)
                continue
            view = self.streams.setdefault(group, {})
            if value is None:
                view.pop(key, None)
            else:
                view[key] = value
        if not self.streams.get(group, True):
            del self.streams[group]

    async def write_share(
        self, group: str, records: Sequence[tuple[SR.ShareGroupRecordKey, SR.ShareGroupRecordValue | None]]
    ) -> None:
        """A share group's records (`share_records`), in one append, then kept in the view."""
        if not records:
            return
        encoded = [(SR.encode_key(k), None if v is None else SR.encode_value(v)) for k, v in records]
        await _maybe_await(self.backend.append(self.partition_for(group), encoded))
        view = self.share.setdefault(group, {})
        for key, value in records:
            if value is None:
                view.pop(key, None)
            else:
                view[key] = value
        if not view:
            del self.share[group]

    # ---- transactional offsets (TxnOffsetCommit) -------------------------------------------
    async def stage(
        self, producer_id: int, producer_epoch: int, group: str, offsets: dict[TopicPartition, OffsetValue]
    ) -> None:
        partition = self.partition_for(group)
        latest = self.producer_epochs.get((partition, producer_id), -1)
        if producer_epoch < latest:
            # a transactional write of an ended transaction, arriving late (its producer was
            # fenced and its transaction aborted meanwhile): refused, as the producer state of
            # Kafka's log refuses it - staged, the producer's next commit marker would make it
            # visible (simulation seed 5384)
            raise LogError(
                INVALID_PRODUCER_EPOCH,
                f"producer {producer_id} epoch {producer_epoch} is older than its latest {latest} here",
            )
        self._saw_epoch(partition, producer_id, producer_epoch)
        recs = [
            (R.encode_offset_key(OffsetKey(group, t, p)), R.encode_offset_value(v)) for (t, p), v in offsets.items()
        ]
        await _maybe_await(self.backend.append(partition, recs, producer_id, producer_epoch, True))
        self.pending.setdefault(producer_id, {}).setdefault(group, {}).update(offsets)

    async def complete(self, producer_id: int, producer_epoch: int, commit: bool) -> None:
        staged = self.pending.get(producer_id)
        if not staged:
            return
        for partition in sorted({self.partition_for(g) for g in staged}):
            await self.complete_partition(producer_id, producer_epoch, commit, partition)

    async def complete_partition(self, producer_id: int, producer_epoch: int, commit: bool, partition: int) -> None:
        """The transaction's marker on one partition: what the producer staged for this
        partition's groups becomes visible (commit) or is dropped (abort).

        The marker is appended even when memory holds nothing staged here, as Kafka does (and
        as the data partitions do): a retried marker is then written again, harmlessly, and a
        staged write whose outcome was unknown (in the log, not in memory: its replication wait
        failed) is closed by this transaction's marker. Without it the producer's next
        transaction's marker would complete those orphaned offsets on replay - the offsets of an
        aborted transaction made visible (simulation seed 3069)."""
        self._saw_epoch(partition, producer_id, producer_epoch)
        await _maybe_await(self.backend.append_marker(partition, producer_id, producer_epoch, commit))
        staged = self.pending.get(producer_id)
        here = {g: offs for g, offs in (staged or {}).items() if self.partition_for(g) == partition}
        if not here:
            return
        assert staged is not None
        for g in here:
            staged.pop(g, None)
        if not staged:
            self.pending.pop(producer_id, None)
        if commit:
            for group, offs in here.items():
                self.offsets.setdefault(group, {}).update(offs)

    def _saw_epoch(self, partition: int, producer_id: int, producer_epoch: int) -> None:
        key = (partition, producer_id)
        if producer_epoch > self.producer_epochs.get(key, -1):
            self.producer_epochs[key] = producer_epoch


class WriteGuard(Protocol):
    """Cluster mode: a coordinator writes only to internal-topic partitions this broker leads,
    and a write counts once replicated (acks=all) under the leader epoch it was made at: `check`
    answers the lease (an opaque token) the append is made under, `replicated` waits with it.
    Both raise `LogError` with NOT_COORDINATOR (leadership moved) or COORDINATOR_NOT_AVAILABLE
    (not replicated in time)."""

    def check(self, topic: str, partition: int) -> object: ...

    def replicated(self, lease: object, offset: int) -> Awaitable[None]: ...


class EngineGroupLog:
    """A GroupLog over the log engine: one v2 record batch per append, to the partition log of
    `__consumer_offsets` that owns the group; replay reads whole batches from the log start.
    With a `guard` (cluster mode) an append is refused off the leader and returns once replicated."""

    READ_BYTES = 1 << 20

    def __init__(self, partitions: Partitions, topic: str, guard: WriteGuard | None = None) -> None:
        self.partitions = partitions  # the broker's Partitions service
        self.topic = topic
        self.guard = guard

    def _log(self, partition: int, writing: bool = True) -> tuple[PartitionLog, object]:
        """The partition's log, and the guard's lease when writing (None on a single node)."""
        lease = self.guard.check(self.topic, partition) if writing and self.guard is not None else None
        plog: PartitionLog | None = self.partitions.get(self.topic, partition)
        if plog is None:
            raise RuntimeError(f"{self.topic}-{partition} does not exist")
        return plog, lease

    async def _written(self, plog: PartitionLog, info: AppendInfo, lease: object) -> None:
        self.partitions.notify(self.topic, plog.partition)
        if info.flush_needed:
            await self.partitions.group_commit.flush(plog)
        if self.guard is not None:
            await self.guard.replicated(lease, info.last_offset)

    async def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool = False,
    ) -> None:
        from ..log.records import Record

        plog, lease = self._log(partition)
        now = int(time.time() * 1000)
        info = plog.append_records(
            [Record(k, v, now) for k, v in records],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=transactional,
        )
        await self._written(plog, info, lease)

    async def append_marker(self, partition: int, producer_id: int, producer_epoch: int, commit: bool) -> None:
        from ..log.records import CONTROL_ABORT, CONTROL_COMMIT

        plog, lease = self._log(partition)
        info = plog.append_control(CONTROL_COMMIT if commit else CONTROL_ABORT, producer_id, producer_epoch, 0)
        await self._written(plog, info, lease)

    def replay(self, partition: int) -> Iterator[LogEntry]:
        from ..log import records as LR

        plog, _ = self._log(partition, writing=False)
        offset, end = plog.log_start_offset, plog.log_end_offset
        while offset < end:
            data = plog.read(offset, self.READ_BYTES, max_offset=end).data
            if not data:
                break
            for batch in LR.decode_batches(data):
                h = batch.header
                attrs, pid, epoch = h[LR.H_ATTRIBUTES], h[LR.H_PRODUCER_ID], h[LR.H_PRODUCER_EPOCH]
                txn = bool(attrs & LR.TRANSACTIONAL_FLAG_MASK)
                for r in batch.records:
                    if r.offset < offset:
                        continue
                    if attrs & LR.CONTROL_FLAG_MASK:
                        ctype, _ = LR.parse_control_record(r)
                        yield LogEntry(None, None, pid, True, ctype == LR.CONTROL_COMMIT, epoch)
                    else:
                        yield LogEntry(r.key, r.value, pid, txn, None, epoch)
                offset = max(offset, h[LR.H_BASE_OFFSET] + h[LR.H_LAST_OFFSET_DELTA] + 1)
