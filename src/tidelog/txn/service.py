"""The broker's `txn` service: producer state of every partition, the transaction coordinator,
and the glue between them and the rest of the broker.

- Produce calls `append(...)`: the batch headers are checked against the partition's producer
  state (`producers.PartitionProducers`) between validation and the write; a retried batch gets
  its original offsets back; transactional batches must belong to an Ongoing transaction that
  includes the partition (asked of the coordinator: KIP-890 verification).
- `write_marker(...)` appends a COMMIT/ABORT control batch (always: a retry, or a newer
  coordinator's marker where nothing is open, is written too), closes the producer's open
  transaction on the partition, records aborted transactions in `.txnindex`, and moves the LSO.
- `__transaction_state` (compacted, `transaction.state.log.num.partitions` partitions) holds the
  coordinator's records; it is replayed at start.
- Timers: abort transactions past their timeout (and retry unfinished completions) every
  `transaction.abort.timed.out.transaction.cleanup.interval.ms`; expire transactional ids and
  idle producer ids every `transaction.remove.expired.transaction.cleanup.interval.ms`.
- Producer state snapshots at segment roll and at clean shutdown (`snapshots`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Iterator

from ..wire.errors import INVALID_PRODUCER_EPOCH, INVALID_TOPIC_EXCEPTION, TRANSACTION_COORDINATOR_FENCED
from ..log.records import H_BASE_OFFSET, H_LAST_OFFSET_DELTA
from ..log.errors import LogAppendError, LogError
from ..log.log import AppendInfo, PartitionLog
from ..log.records import CONTROL_ABORT, CONTROL_COMMIT, Record, decode_batches
from . import records as TR
from .coordinator import TxnCoordinator
from .pids import ProducerIdAllocator
from .producers import DuplicateBatch, PartitionProducers
from .snapshots import load_state, replay, write_snapshot

if TYPE_CHECKING:
    from ..groups import GroupCoordinator
    from ..core.admin import TopicAdmin
    from ..core.config import BrokerConfig
    from ..core.partitions import Partitions

log = logging.getLogger("tidelog.txn")

STATE_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
UNTRACKED = (STATE_TOPIC, OFFSETS_TOPIC)  # written by coordinators, never through Produce


def _now() -> int:
    return time.time_ns() // 1_000_000


class _StateLog:
    """The coordinator's `StateStore` over `__transaction_state`. With a `guard` (cluster mode,
    a `groups.store.WriteGuard`) a write is refused off the partition's leader and returns once
    replicated."""

    READ_BYTES = 1 << 20

    def __init__(self, service: "TxnService") -> None:
        self.service = service
        self.guard: Any = None

    async def write(self, transactional_id: str, value: TR.TxnLogValue | None) -> None:
        s = self.service
        partition = TR.partition_for(transactional_id, s.num_partitions)
        lease = self.guard.check(STATE_TOPIC, partition) if self.guard is not None else None
        plog = s.partitions.get(STATE_TOPIC, partition)
        if plog is None:
            raise LogError(15, f"{STATE_TOPIC} is missing")
        rec = Record(TR.encode_key(transactional_id), None if value is None else TR.encode_value(value), _now())
        info = plog.append_records([rec])
        await s.partitions.group_commit.flush(plog)
        if self.guard is not None:
            await self.guard.replicated(lease, info.last_offset)

    def read_all(self) -> Iterator[tuple[str, TR.TxnLogValue | None]]:
        for p in range(self.service.num_partitions):
            yield from self.read_partition(p)

    def read_partition(self, p: int) -> Iterator[tuple[str, TR.TxnLogValue | None]]:
        s = self.service
        plog = s.partitions.get(STATE_TOPIC, p)
        if plog is not None:
            offset, end = plog.log_start_offset, plog.log_end_offset
            while offset < end:
                data = plog.read(offset, self.READ_BYTES, max_offset=end).data
                if not data:
                    break
                for batch in decode_batches(data):
                    for r in batch.records:
                        if r.offset < offset or r.key is None:
                            continue
                        try:
                            yield TR.decode_key(r.key), None if r.value is None else TR.decode_value(r.value)
                        except TR.RecordFormatError as e:
                            log.warning("%s-%d: skipping unreadable record at %d: %s", STATE_TOPIC, p, r.offset, e)
                    h = batch.header
                    offset = max(offset, h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] + 1)


class _Markers:
    """The coordinator's `MarkerWriter`: markers on data partitions, group offsets completed."""

    def __init__(self, service: "TxnService") -> None:
        self.service = service

    async def write(self, producer_id: int, producer_epoch: int, commit: bool,
                    partitions: Iterable[tuple[str, int]]) -> None:
        s = self.service
        if s.marker_sender is not None:
            # cluster mode: every marker goes to the partition's leader, the group offsets' ones
            # to the leader of their __consumer_offsets partition (the group coordinator); they
            # carry the coordinator epoch (the leader epoch of the transactional id's partition)
            meta = s.coordinator.by_pid.get(producer_id)
            txn_id = meta.transactional_id if meta is not None else None
            epoch = s.coordinator.coordinator_epoch(txn_id) if txn_id is not None else 0

            def still_owned() -> bool:  # the sender stops once this broker no longer coordinates it
                return txn_id is None or (s.coordinator.status(txn_id) == 0
                                          and s.coordinator.coordinator_epoch(txn_id) == epoch)

            await s.marker_sender(producer_id, producer_epoch, commit, list(partitions), epoch, still_owned)
            return
        to_flush = []
        offsets_done = False
        data: list[tuple[str, int]] = []
        for topic, partition in partitions:
            if topic == OFFSETS_TOPIC:
                if not offsets_done:
                    offsets_done = True
                    store = s.groups.store
                    if store is not None:
                        await store.complete(producer_id, producer_epoch, commit)
                continue
            data.append((topic, partition))
        for topic, partition in data:
            written = s.write_marker(topic, partition, producer_id, producer_epoch, commit)
            if written is not None:
                to_flush.append(written[0])
        if to_flush:
            await asyncio.gather(*(s.partitions.group_commit.flush(plog) for plog in to_flush))


class TxnService:
    """Built by the broker's composition root after the group coordinator (which it completes
    transactional offset commits on, so that one starts and loads first), with its narrow
    collaborators: the broker configuration (transaction.* keys), the topic admin (creates
    `__transaction_state`, tells of topic changes, knows which partitions exist), the
    partitions (the log engine) and the group coordinator."""

    def __init__(self, config: "BrokerConfig", admin: "TopicAdmin", partitions: "Partitions",
                 groups: "GroupCoordinator") -> None:
        cfg = config
        self.config = config
        self.admin = admin
        self.registry = admin.registry
        self.partitions = partitions
        self.groups = groups
        self.num_partitions = cfg["transaction.state.log.num.partitions"]
        self.abort_interval_s = cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000
        self.expire_interval_s = cfg["transaction.remove.expired.transaction.cleanup.interval.ms"] / 1000
        self.producer_expiration_ms = cfg["producer.id.expiration.ms"]
        self.pids = ProducerIdAllocator(cfg.log_dirs[0])
        self.state_log = _StateLog(self)
        self.coordinator = TxnCoordinator(
            self.state_log, _Markers(self), self.pids,
            max_timeout_ms=cfg["transaction.max.timeout.ms"],
            expiration_ms=cfg["transactional.id.expiration.ms"],
            partition_exists=self._partition_exists,
        )
        self.states: dict[tuple[str, int], PartitionProducers] = {}
        # Cluster mode (set by the cluster node): markers are written by each partition's leader
        # (a WriteTxnMarkers call when that is another broker), and KIP-890 verification is only
        # done where the coordinator's state is (elsewhere the pre-KIP-890 checks apply).
        self.marker_sender: Callable[[int, int, bool, list[tuple[str, int]], int, Callable[[], bool]],
                                     Awaitable[None]] | None = None
        self.verify_here: Callable[[int], bool] = lambda producer_id: True
        self._active_base: dict[tuple[str, int], int] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def _partition_exists(self, topic: str, partition: int) -> bool:
        t = self.registry.get(topic)
        return t is not None and 0 <= partition < t.partitions

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self, clustered: bool = False) -> None:
        """Single node: `__transaction_state` is created and every transactional id loaded. In a
        cluster the coordinator starts empty and loads the partitions this broker leads
        (cluster/coordinators.py)."""
        t0 = time.monotonic()
        if clustered:
            self.coordinator.owned = {}
            self.coordinator.loaded = True
        else:
            topic = self.admin.ensure_internal(STATE_TOPIC, self.num_partitions, {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.config["transaction.state.log.segment.bytes"]),
            })
            self.num_partitions = topic.partitions
        self.coordinator.num_partitions = self.num_partitions
        for plog in list(self.partitions.manager.logs()):
            if plog.topic not in UNTRACKED:
                self._load(plog)
        if not clustered:
            self.coordinator.load(self.state_log.read_all())
        self.admin.listeners.append(self._topic_event)
        open_txns = sum(s.open_txn_count() for s in self.states.values())
        log.info("producer state of %d partitions loaded in %.0f ms (%d open transactions)",
                 len(self.states), (time.monotonic() - t0) * 1000, open_txns)
        self._tasks.append(asyncio.ensure_future(self._abort_loop()))
        self._tasks.append(asyncio.ensure_future(self._expire_loop()))

    def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        self.coordinator.loaded = False
        for (topic, partition), state in list(self.states.items()):
            plog = self.partitions.manager.get(topic, partition)
            if plog is not None:
                try:
                    write_snapshot(plog, state)
                except OSError as e:
                    log.warning("%s-%d: producer snapshot not written: %s", topic, partition, e)

    def _load(self, plog: PartitionLog) -> PartitionProducers:
        state = load_state(plog)
        key = (plog.topic, plog.partition)
        self.states[key] = state
        self._active_base[key] = plog.segments[-1].base_offset
        plog.set_first_unstable_offset(state.first_unstable_offset())
        return state

    def state_for(self, topic: str, partition: int, plog: PartitionLog) -> PartitionProducers:
        state = self.states.get((topic, partition))
        return state if state is not None else self._load(plog)

    def forget(self, topic: str, partition: int) -> None:
        """The partition's local copy is gone (reassigned away): so is its producer state."""
        self.states.pop((topic, partition), None)
        self._active_base.pop((topic, partition), None)

    def _topic_event(self, event: str, topic: Any) -> None:
        if event == "deleted":
            for key in [k for k in self.states if k[0] == topic.name]:
                self.states.pop(key, None)
                self._active_base.pop(key, None)

    async def _abort_loop(self) -> None:
        await self.coordinator.resume()
        while True:
            await asyncio.sleep(self.abort_interval_s)
            try:
                await self.coordinator.abort_timed_out()
                await self.coordinator.resume()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("transaction timeout pass failed")

    async def _expire_loop(self) -> None:
        while True:
            await asyncio.sleep(self.expire_interval_s)
            try:
                await self.coordinator.expire_ids()
                now = _now()
                n = sum(s.expire(now, self.producer_expiration_ms) for s in self.states.values())
                if n:
                    log.info("expired %d idle producer ids", n)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("transaction expiry pass failed")

    # ---- produce path --------------------------------------------------------------------------
    def append(self, topic: str, partition: int, plog: "PartitionLog", records: bytes | memoryview, now_ms: int) -> AppendInfo:
        """Produce's append with producer-state checks; same AppendInfo as `plog.append`."""
        if topic in UNTRACKED:  # as Kafka: clients never write the coordinators' topics
            raise LogAppendError(INVALID_TOPIC_EXCEPTION, f"cannot append to internal topic {topic}")
        state = self.state_for(topic, partition, plog)
        key = (topic, partition)
        coordinator = self.coordinator
        staged = None

        def check(v: Any) -> None:
            nonlocal staged
            def verify(pid: int, epoch: int) -> int:
                return coordinator.verify(pid, epoch, key) if self.verify_here(pid) else 0
            staged = state.check(v.batches, verify, self.pids.issued)

        try:
            info = plog.append(records, now_ms=now_ms, before_write=check)
        except DuplicateBatch as d:
            log.debug("%s-%d: duplicate batch answered with offset %d", topic, partition, d.first_offset)
            return AppendInfo(d.first_offset, d.last_offset, -1, plog.log_start_offset, -1, -1, 0, 0)
        if staged:
            state.apply(staged)
            if any(e.txn_first_offset is not None for e in staged.values()):
                plog.set_first_unstable_offset(state.first_unstable_offset())
            self._after_append(plog, state)
        return info

    def _after_append(self, plog: PartitionLog, state: PartitionProducers) -> None:
        key = (plog.topic, plog.partition)
        base = plog.segments[-1].base_offset
        if self._active_base.get(key) != base:
            self._active_base[key] = base
            try:
                write_snapshot(plog, state)
            except OSError as e:
                log.warning("%s-%d: producer snapshot not written: %s", plog.topic, plog.partition, e)

    # ---- replication (cluster mode: this broker follows the partition's leader) -------------------
    def append_as_follower(self, topic: str, partition: int, plog: "PartitionLog", data: bytes) -> None:
        """Append batches fetched from the leader and replay their headers into the producer
        state (sequences, open transactions, markers and the .txnindex, the LSO), so this
        replica can lead with the same state."""
        state = self.state_for(topic, partition, plog)
        start = plog.log_end_offset
        v = plog.append_as_follower(data)
        if not v.batches:
            return
        replay(plog, state, start)
        plog.set_first_unstable_offset(state.first_unstable_offset())
        self._after_append(plog, state)

    def rebuild_after_truncate(self, topic: str, partition: int, plog: "PartitionLog") -> None:
        """The log was truncated: producer state is rebuilt from the newest snapshot still valid
        (`load_state` drops the snapshots past the new log end)."""
        self.states.pop((topic, partition), None)
        self._load(plog)

    # ---- markers ----------------------------------------------------------------------------------
    def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int = 0) -> tuple[PartitionLog, int] | None:
        """Append a COMMIT/ABORT marker for the producer, closing its open transaction on the
        partition if it has one: (the log written to, to flush; the marker's offset, to wait
        for its replication), or None when the partition does not exist here.

        The marker is appended even when nothing is open (as Kafka): a retried marker - the
        first one's replication wait failed, or its answer was lost - is then waited on like the
        first, and the coordinator epoch of a newer coordinator is recorded where its
        transaction left nothing, so that a deposed coordinator's late marker is refused there
        (TRANSACTION_COORDINATOR_FENCED) instead of ending the producer's next transaction. A
        marker of an older producer epoch is refused (INVALID_PRODUCER_EPOCH)."""
        plog: PartitionLog | None = self.partitions.get(topic, partition)
        if plog is None:
            return None
        state = self.state_for(topic, partition, plog)
        known = state.producers.get(producer_id)
        if known is not None and coordinator_epoch < known.coordinator_epoch:
            # a deposed coordinator (its partition has a newer leader epoch) must not end the
            # transaction the new one owns (Kafka's TRANSACTION_COORDINATOR_FENCED)
            raise LogError(TRANSACTION_COORDINATOR_FENCED,
                           f"{topic}-{partition}: marker of coordinator epoch {coordinator_epoch} for producer "
                           f"{producer_id}, which saw epoch {known.coordinator_epoch}")
        if known is not None and producer_epoch < known.epoch:
            raise LogError(INVALID_PRODUCER_EPOCH, f"{topic}-{partition}: marker of producer {producer_id} epoch "
                                                   f"{producer_epoch}, which is at epoch {known.epoch}")
        info = plog.append_control(CONTROL_COMMIT if commit else CONTROL_ABORT, producer_id, producer_epoch,
                                   coordinator_epoch)
        aborted = state.complete_txn(producer_id, producer_epoch, info.first_offset, commit, coordinator_epoch,
                                     _now())
        if aborted is not None:
            plog.append_aborted_txn(aborted)
        plog.set_first_unstable_offset(state.first_unstable_offset())
        self._after_append(plog, state)
        return plog, info.first_offset

    # ---- observability -------------------------------------------------------------------------------
    def metrics_counts(self) -> tuple[int, int]:
        pids: set[int] = set()
        for s in self.states.values():
            pids.update(s.producers)
        return len(pids), self.coordinator.active_count()
