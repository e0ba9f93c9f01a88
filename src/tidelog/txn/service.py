"""The broker's `txn` service: the transaction coordinator and its glue to the rest of the broker.

- The coordinator (`coordinator.TxnCoordinator`) keeps its records in `__transaction_state`
  (compacted, `transaction.state.log.num.partitions` partitions), replayed at start (single
  node) or per partition as this broker comes to lead it (cluster mode: cluster/coordinators.py).
- Its markers go to the partitions' producer state (`producer_states.ProducerStates`, the one
  owner of it), or in a cluster to each partition's leader (the `marker_sender`).
- Produce's `append` goes through here only to attach the coordinator's KIP-890 verification and
  the producer-id check to the producer state's append. Clients of transaction version 2 (Produce
  v12+, TxnOffsetCommit v5) have their partitions added first (`add_for_append`), by this
  broker's coordinator or the remote one (`Remote`: AddPartitionsToTxn v5 through the cluster).
- Timers: abort transactions past their timeout (and retry unfinished completions) every
  `transaction.abort.timed.out.transaction.cleanup.interval.ms`; expire transactional ids and
  idle producer ids every `transaction.remove.expired.transaction.cleanup.interval.ms`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from ..core.topics import OFFSETS_TOPIC, STATE_TOPIC
from ..log.clock import wall_clock_ms
from ..log.errors import LogError
from ..log.log import AppendInfo, PartitionLog
from ..log.records import H_BASE_OFFSET, H_LAST_OFFSET_DELTA, Record, decode_batches, transactional_producer
from ..wire.errors import (
    CONCURRENT_TRANSACTIONS,
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    INVALID_PRODUCER_EPOCH,
    INVALID_TXN_STATE,
    NETWORK_EXCEPTION,
    NONE,
    NOT_COORDINATOR,
    NOT_ENOUGH_REPLICAS,
    PRODUCER_FENCED,
    TRANSACTION_ABORTABLE,
)
from . import records as TR
from .coordinator import TxnCoordinator
from .pids import ProducerIdAllocator, ProducerIds
from .producer_states import ProducerStates

if TYPE_CHECKING:
    from ..core.admin import TopicAdmin
    from ..core.config import BrokerConfig
    from ..core.partitions import Partitions
    from ..groups import GroupCoordinator
    from ..groups.store import WriteGuard

log = logging.getLogger("tidelog.txn")

# (transactional id, producer id, epoch, partitions, add?) -> the remote coordinator's codes
Remote = Callable[[str, int, int, list[tuple[str, int]], bool], Awaitable[dict[tuple[str, int], int]]]
ADD_RETRY_BACKOFF_S = 0.02  # Kafka's add.partitions.to.txn.retry.backoff.ms
ADD_RETRY_FOR_S = 1.0  # while the coordinator answers CONCURRENT_TRANSACTIONS

_MOVED_OR_UNAVAILABLE = frozenset(
    {NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NETWORK_EXCEPTION}
)


def append_error(code: int, adding: bool) -> int:
    """A coordinator's answer for a partition about to be written, as the write's error (Kafka's
    AddPartitionsToTxnManager and ReplicaManager): PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, a
    partition outside the transaction INVALID_TXN_STATE, a coordinator moving or unreachable
    NOT_ENOUGH_REPLICAS (every client retries it without a metadata refresh), and so is
    CONCURRENT_TRANSACTIONS when only verifying; a client adding (transaction version 2) gets
    CONCURRENT_TRANSACTIONS itself."""
    if code == PRODUCER_FENCED:
        return INVALID_PRODUCER_EPOCH
    if code == TRANSACTION_ABORTABLE:
        return INVALID_TXN_STATE
    if code in _MOVED_OR_UNAVAILABLE or code == CONCURRENT_TRANSACTIONS and not adding:
        return NOT_ENOUGH_REPLICAS
    return code


# (producer id, epoch, commit, partitions, coordinator epoch, still owned?, transaction version)
# -> markers written
MarkerSend = Callable[[int, int, bool, list[tuple[str, int]], int, Callable[[], bool], int], Awaitable[None]]


class _StateLog:
    """The coordinator's `StateStore` over `__transaction_state`. With a `guard` (cluster mode,
    a `groups.store.WriteGuard`) a write is refused off the partition's leader and returns once
    replicated."""

    READ_BYTES = 1 << 20

    def __init__(self, service: TxnService, guard: WriteGuard | None = None) -> None:
        self.service = service
        self.guard = guard

    async def write(self, transactional_id: str, value: TR.TxnLogValue | None) -> None:
        s = self.service
        partition = TR.partition_for(transactional_id, s.num_partitions)
        lease = self.guard.check(STATE_TOPIC, partition) if self.guard is not None else None
        plog = s.partitions.get(STATE_TOPIC, partition)
        if plog is None:
            raise LogError(15, f"{STATE_TOPIC} is missing")
        version = TR.value_version(s.coordinator.transaction_version)
        rec = Record(
            TR.encode_key(transactional_id),
            None if value is None else TR.encode_value(value, version),
            wall_clock_ms(),
        )
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

    def __init__(self, service: TxnService) -> None:
        self.service = service

    async def write(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        partitions: Iterable[tuple[str, int]],
        transaction_version: int = 0,
    ) -> None:
        s = self.service
        if s.marker_sender is not None:
            # cluster mode: every marker goes to the partition's leader, the group offsets' ones
            # to the leader of their __consumer_offsets partition (the group coordinator); they
            # carry the coordinator epoch (the leader epoch of the transactional id's partition)
            meta = s.coordinator.by_pid.get(producer_id)
            txn_id = meta.transactional_id if meta is not None else None
            epoch = s.coordinator.coordinator_epoch(txn_id) if txn_id is not None else 0

            def still_owned() -> bool:  # the sender stops once this broker no longer coordinates it
                return txn_id is None or (
                    s.coordinator.status(txn_id) == 0 and s.coordinator.coordinator_epoch(txn_id) == epoch
                )

            await s.marker_sender(
                producer_id, producer_epoch, commit, list(partitions), epoch, still_owned, transaction_version
            )
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
            written = s.producers.write_marker(
                topic, partition, producer_id, producer_epoch, commit, transaction_version=transaction_version
            )
            if written is not None:
                to_flush.append(written[0])
        if to_flush:
            await asyncio.gather(*(s.partitions.group_commit.flush(plog) for plog in to_flush))


class TxnService:
    """Built by the broker's composition root after the group coordinator (which it completes
    transactional offset commits on, so that one starts and loads first), with its narrow
    collaborators: the broker configuration (transaction.* keys), the topic admin (creates
    `__transaction_state`, knows which partitions exist), the partitions (the log engine), the
    group coordinator and the producer state of every partition."""

    def __init__(
        self,
        config: BrokerConfig,
        admin: TopicAdmin,
        partitions: Partitions,
        groups: GroupCoordinator,
        producers: ProducerStates,
        *,
        pids: ProducerIds | None = None,
        marker_sender: MarkerSend | None = None,
        state_guard: WriteGuard | None = None,
    ) -> None:
        """Cluster mode: `pids` hands out producer ids from blocks reserved in etcd (else a local
        allocator); `marker_sender` sends every marker to its partition's leader (a
        WriteTxnMarkers call when that is another broker); `state_guard` (a
        `groups.store.WriteGuard`) makes `__transaction_state` writes count only on its leader,
        once replicated. KIP-890 verification is then done only where the coordinator's state is
        (elsewhere the Produce handler asks the coordinator: cluster/verify.py)."""
        cfg = config
        self.config = config
        self.admin = admin
        self.registry = admin.registry
        self.partitions = partitions
        self.groups = groups
        self.producers = producers
        self.abort_interval_s = cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000
        self.expire_interval_s = cfg["transaction.remove.expired.transaction.cleanup.interval.ms"] / 1000
        self.producer_expiration_ms = cfg["producer.id.expiration.ms"]
        self.pids: ProducerIds = pids if pids is not None else ProducerIdAllocator(cfg.log_dirs[0])
        self.state_log = _StateLog(self, state_guard)
        self.coordinator = TxnCoordinator(
            self.state_log,
            _Markers(self),
            self.pids,
            max_timeout_ms=cfg["transaction.max.timeout.ms"],
            expiration_ms=cfg["transactional.id.expiration.ms"],
            partition_exists=self._partition_exists,
            num_partitions=cfg["transaction.state.log.num.partitions"],
            transaction_version=cfg["transaction.version"],
        )
        self.marker_sender = marker_sender
        self.clustered = marker_sender is not None
        self._tasks: list[asyncio.Task[None]] = []

    # ---- cluster mode: the coordinators' placement (cluster/coordinators.py) ---------------------
    @property
    def owned(self) -> dict[int, int] | None:
        return self.coordinator.owned

    def begin_load(self, partition: int) -> None:
        self.coordinator.begin_load(partition)

    def load_partition(self, partition: int, leader_epoch: int) -> None:
        """This broker leads `partition` of `__transaction_state` at `leader_epoch`, its log all
        committed: coordinate its transactional ids, from the log."""
        self.coordinator.load_partition(partition, leader_epoch, self.state_log.read_partition(partition))

    def unload_partition(self, partition: int) -> None:
        self.coordinator.unload_partition(partition)

    async def resume(self) -> None:
        await self.coordinator.resume()

    # ---- cluster mode: KIP-890 verification (cluster/verify.py) ---------------------------------
    def partition_of(self, txn_id: str) -> int:
        return self.coordinator.partition_of(txn_id)

    async def coordinate(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]], add: bool
    ) -> dict[tuple[str, int], int]:
        """This broker coordinates `txn_id`: verify the partitions are in its transaction, or
        (transaction version 2) add them; the coordinator's codes."""
        if not add:
            return self.coordinator.verify_request(txn_id, producer_id, epoch, tps)
        try:
            return await self.coordinator.add_partitions(txn_id, producer_id, epoch, tps, 2)
        except Exception:
            log.exception("transactional id %s: adding %s failed", txn_id, tps)
            return dict.fromkeys(tps, COORDINATOR_NOT_AVAILABLE)

    async def add_for_append(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]], remote: Remote | None
    ) -> dict[tuple[str, int], int]:
        """Transaction version 2: the partitions a Produce v12+ or TxnOffsetCommit v5 is about to
        write join the producer's transaction first, through this broker's coordinator or
        `remote` (cluster mode, the id coordinated elsewhere); the coordinator's codes. As Kafka,
        CONCURRENT_TRANSACTIONS (another add or an ending transaction in flight) is retried here
        for a while rather than sent back at once."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ADD_RETRY_FOR_S
        while True:
            status = self.coordinator.status(txn_id)
            if status == NONE:
                codes = await self.coordinate(txn_id, producer_id, epoch, tps, True)
            elif status == NOT_COORDINATOR and remote is not None:
                codes = await remote(txn_id, producer_id, epoch, tps, True)
            else:
                return dict.fromkeys(tps, status)
            if CONCURRENT_TRANSACTIONS not in codes.values() or loop.time() >= deadline:
                return codes
            await asyncio.sleep(ADD_RETRY_BACKOFF_S)

    def needs_add(self, topic: str, partition: int, records: bytes | memoryview) -> tuple[int, int] | None:
        """(producer id, epoch) when this record set is a transactional batch whose transaction is
        not open on the partition here yet: a client of transaction version 2 must have the
        partition added to its transaction before the append."""
        producer = transactional_producer(records)
        if producer is None or self.producers.open_txn_at(topic, partition, *producer):
            return None
        return producer

    def open_here(self, topic: str, partition: int, producer_id: int, epoch: int) -> bool:
        return self.producers.open_txn_at(topic, partition, producer_id, epoch)

    def verify_here(self, producer_id: int) -> bool:
        """Whether KIP-890 verification of this producer's batches is done here: always on a
        single node; in a cluster where this broker coordinates its transactional id."""
        return not self.clustered or producer_id in self.coordinator.by_pid

    def _partition_exists(self, topic: str, partition: int) -> bool:
        t = self.registry.get(topic)
        return t is not None and 0 <= partition < t.partitions

    @property
    def num_partitions(self) -> int:
        """Of `__transaction_state`: the coordinator's (ids hash onto them)."""
        return self.coordinator.num_partitions

    def set_num_partitions(self, n: int) -> None:
        """`__transaction_state` has `n` partitions (cluster mode: known once the topic exists)."""
        self.coordinator.set_num_partitions(n)

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Single node: `__transaction_state` is created and every transactional id loaded. In a
        cluster the coordinator starts empty and loads the partitions this broker leads
        (cluster/coordinators.py)."""
        t0 = time.monotonic()
        if self.clustered:
            self.coordinator.start_clustered()
        else:
            topic = self.admin.ensure_internal(
                STATE_TOPIC,
                self.num_partitions,
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(self.config["transaction.state.log.segment.bytes"]),
                },
            )
            self.set_num_partitions(topic.partitions)
        open_txns = self.producers.load_all()
        if not self.clustered:
            self.coordinator.load(self.state_log.read_all())
        log.info(
            "producer state of %d partitions loaded in %.0f ms (%d open transactions)",
            len(self.producers.states),
            (time.monotonic() - t0) * 1000,
            open_txns,
        )
        self._tasks.append(asyncio.ensure_future(self._abort_loop()))
        self._tasks.append(asyncio.ensure_future(self._expire_loop()))

    def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        self.coordinator.close()
        self.producers.stop()

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
                now = wall_clock_ms()
                n = self.producers.expire(now, self.producer_expiration_ms)
                if n:
                    log.info("expired %d idle producer ids", n)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("transaction expiry pass failed")

    # ---- produce path --------------------------------------------------------------------------
    def append(
        self, topic: str, partition: int, plog: PartitionLog, records: bytes | memoryview, now_ms: int
    ) -> AppendInfo:
        """Produce's append: the producer state's, with this coordinator's KIP-890 verification
        (where it holds the producer's transactional id) and its producer-id check."""
        key = (topic, partition)
        coordinator = self.coordinator

        def verify(pid: int, epoch: int) -> int:
            return coordinator.verify(pid, epoch, key) if self.verify_here(pid) else 0

        return self.producers.append(topic, partition, plog, records, now_ms, verify, self.pids.issued)

    # ---- observability -------------------------------------------------------------------------------
    def metrics_counts(self) -> tuple[int, int]:
        return self.producers.producer_count(), self.coordinator.active_count()
