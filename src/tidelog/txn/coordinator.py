"""The transaction coordinator (KIP-98): producer ids and epochs per transactional id, and the
life of each transaction, driven through the transition table in `state`.

Every state change is written to `__transaction_state` (through `store.write`, which returns once
the record is appended and flushed) before it is applied in memory or any effect follows: a
restart replays that topic (`load`) and resumes where it stopped (`resume`: PrepareCommit and
PrepareAbort finish their markers; Ongoing transactions stay open until their timeout).

Ending a transaction: PrepareCommit/PrepareAbort is written, `markers.write(...)` appends the
COMMIT/ABORT control batches to every partition of the transaction (and completes the staged
group offsets), then CompleteCommit/CompleteAbort is written. EndTxn is answered after the
markers, so a committed transaction is readable when the producer hears of it. While a state
write or the markers are in flight the transactional id is busy: other requests for it get
CONCURRENT_TRANSACTIONS and the clients retry.

Fencing: InitProducerId for a transactional id with an Ongoing transaction (a new instance of
the producer) and the timeout scan both move Ongoing -> PrepareEpochFence -> PrepareAbort with
the epoch bumped, so the old instance's later requests are refused (PRODUCER_FENCED, or
INVALID_PRODUCER_EPOCH on Produce) and its open transaction is aborted.

Transaction version 2 (KIP-890 part 2, `end_txn_bumping`, epoch_bump.py): EndTxn v5 bumps the
epoch of every transaction it ends and answers the new producer id and epoch; partitions join a
transaction from Produce v12+ and TxnOffsetCommit v5 (the broker calls `add_partitions` for
them, with `client_version` 2). Each id records the transaction version its client ran its last
transaction with (`client_txn_version`, persisted: a coordinator that takes over completes it the
same way) and the markers carry it. The finalized `transaction_version` (the broker's) decides
the record format (records.py) and how a timed-out or fenced transaction is aborted.

Cluster mode (`owned` is not None, placement.py): this broker coordinates the transactional ids
of the `__transaction_state` partitions it leads, as in Kafka. The cluster node calls `begin_load` when
it becomes a partition's leader, `load_partition` once the high watermark has reached the log end
it started leading at (its ids are replayed, then `resume` finishes what was being prepared: the
same recovery as a restart) and `unload_partition` when it stops; until loaded the ids get
COORDINATOR_LOAD_IN_PROGRESS, other ids NOT_COORDINATOR. Only committed state is ever answered
from: a record the previous leader appended but never committed may yet be truncated by a later
leader (issue 26: an Ongoing transaction read from such a record let a producer write to
partitions that the next coordinator never heard of, a transaction left open for ever). A state
write refused because leadership moved meanwhile answers NOT_COORDINATOR.

All on the event loop; no locks. Error results are Kafka error codes (ints).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..log.clock import wall_clock_ms
from ..log.errors import LogError
from ..wire.errors import (
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    NONE,
    OPERATION_NOT_ATTEMPTED,
    PRODUCER_FENCED,
    TRANSACTION_ABORTABLE,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from .epoch_bump import decide, epoch_exhausted
from .metadata import MAX_EPOCH, MOVED, MarkerWriter, StateStore, TopicPartition, TxnMetadata
from .pids import ProducerIds
from .placement import Placement
from .state import COMPLETED, PREPARING, check_transition
from .state import TxnState as S

log = logging.getLogger("tidelog.txn")


class TxnCoordinator(Placement):
    def __init__(
        self,
        store: StateStore,
        markers: MarkerWriter,
        pids: ProducerIds,
        *,
        max_timeout_ms: int = 900_000,
        expiration_ms: int = 604_800_000,
        partition_exists: Callable[[str, int], bool] | None = None,
        clock: Callable[[], int] = wall_clock_ms,
        num_partitions: int = 50,
        transaction_version: int = 2,
    ) -> None:
        """`transaction_version`: the finalized level (0-2) of the broker, as Kafka's feature."""
        self.store = store
        self.transaction_version = transaction_version
        self.markers = markers
        self.pids = pids
        self.max_timeout_ms = max_timeout_ms
        self.expiration_ms = expiration_ms
        self.partition_exists = partition_exists or (lambda t, p: True)
        self.clock = clock
        super().__init__(num_partitions)

    async def resume(self) -> None:
        """Finish the markers of transactions that were in PrepareCommit/PrepareAbort."""
        for meta in list(self.txns.values()):
            if meta.state in PREPARING and not meta.busy:
                try:
                    await self._finish(meta)
                except LogError as e:  # moved, or too few replicas: the next coordinator resumes
                    log.info(
                        "transactional id %s: completing %s not done yet: %s",
                        meta.transactional_id,
                        meta.state.kafka_name,
                        e,
                    )
                except Exception:
                    log.exception(
                        "transactional id %s: completing %s failed", meta.transactional_id, meta.state.kafka_name
                    )

    # ---- state writes -----------------------------------------------------------------------------
    async def _persist(self, meta: TxnMetadata, **changes: Any) -> None:
        target = changes.get("state", meta.state)
        check_transition(meta.state, target)
        changes.setdefault("last_update_ms", self.clock())
        changes.setdefault("prev_producer_id", meta.producer_id)  # as Kafka: the id before this change
        meta.busy = True
        try:
            await self.store.write(meta.transactional_id, meta.value(**changes))
        finally:
            meta.busy = False
        if "producer_id" in changes and changes["producer_id"] != meta.producer_id:
            if self.by_pid.get(meta.producer_id) is meta:
                del self.by_pid[meta.producer_id]
        for k, v in changes.items():
            setattr(meta, k, set(v) if k == "partitions" else v)
        self.by_pid[meta.producer_id] = meta

    async def _finish(self, meta: TxnMetadata) -> None:
        commit = meta.state == S.PREPARE_COMMIT
        meta.busy = True
        try:
            await self.markers.write(
                meta.producer_id, meta.producer_epoch, commit, sorted(meta.partitions), meta.client_txn_version
            )
        finally:
            meta.busy = False
        changes: dict[str, Any] = {}
        if meta.client_txn_version >= 2 and meta.next_producer_id >= 0:  # TV2: the epoch overflowed
            changes = {"producer_id": meta.next_producer_id, "producer_epoch": 0}
        await self._persist(
            meta,
            state=S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT,
            partitions=set(),
            next_producer_id=-1,
            **changes,
        )
        log.debug("transactional id %s: %s", meta.transactional_id, meta.state.kafka_name)

    async def _confirm(self, meta: TxnMetadata) -> None:
        """Cluster mode: write the id's state again, unchanged, before a success answered from
        memory (a retried EndTxn, partitions already added, an epoch bump already made).

        Memory may be a deposed coordinator's: cut off from etcd, it still believes it leads the
        id's `__transaction_state` partition while the new coordinator has moved the id on (a new
        transaction under the same producer epoch). A write counts only once replicated to the
        whole ISR under this leader epoch, which a deposed leader cannot get (the new leader was
        in that ISR and no longer follows it): it raises NOT_COORDINATOR or
        COORDINATOR_NOT_AVAILABLE instead, and the client asks again elsewhere. Raft's leader
        does the same before it answers a read. A single node has no other coordinator."""
        if self.owned is None:
            return
        meta.busy = True
        try:
            await self.store.write(meta.transactional_id, meta.value())
        finally:
            meta.busy = False

    async def _fence_and_abort(self, meta: TxnMetadata, why: str) -> None:
        check_transition(meta.state, S.PREPARE_EPOCH_FENCE)
        meta.state = S.PREPARE_EPOCH_FENCE
        epoch = meta.producer_epoch + 1 if meta.producer_epoch < MAX_EPOCH else meta.producer_epoch
        # as Kafka, the abort is made at the broker's transaction version: with TV2 an exhausted
        # epoch moves the producer to a new id once the abort completes
        tv = self.transaction_version
        next_pid = self.pids.next_id() if tv >= 2 and epoch_exhausted(meta.producer_epoch) else -1
        log.info(
            "transactional id %s: aborting the ongoing transaction of producer %d (%s); epoch now %d",
            meta.transactional_id,
            meta.producer_id,
            why,
            epoch,
        )
        try:
            await self._persist(
                meta,
                state=S.PREPARE_ABORT,
                producer_epoch=epoch,
                last_producer_epoch=-1,
                next_producer_id=next_pid,
                client_txn_version=tv,
            )
        except BaseException:
            meta.state = S.ONGOING
            raise
        await self._finish(meta)

    def _lookup(self, txn_id: str, producer_id: int, epoch: int) -> tuple[int, TxnMetadata | None]:
        meta = self.txns.get(txn_id)
        if meta is None or meta.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING, None
        if epoch != meta.producer_epoch:
            return PRODUCER_FENCED, None
        if meta.busy or meta.state in PREPARING or meta.state == S.PREPARE_EPOCH_FENCE:
            return CONCURRENT_TRANSACTIONS, None
        return NONE, meta

    # ---- APIs ------------------------------------------------------------------------------------
    async def init_producer_id(
        self, txn_id: str | None, timeout_ms: int, producer_id: int = -1, epoch: int = -1
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch)."""
        if not txn_id:
            return NONE, self.pids.next_id(), 0
        if code := self.status(txn_id):
            return code, -1, -1
        try:
            return await self._init_producer_id(txn_id, timeout_ms, producer_id, epoch)
        except LogError as e:
            if e.error_code in MOVED:
                return e.error_code, -1, -1
            raise

    async def _init_producer_id(
        self, txn_id: str, timeout_ms: int, producer_id: int, epoch: int
    ) -> tuple[int, int, int]:
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return INVALID_TRANSACTION_TIMEOUT, -1, -1
        meta = self.txns.get(txn_id)
        if meta is None:
            meta = TxnMetadata(txn_id, self.pids.next_id(), -1, timeout_ms, S.EMPTY)
            self.txns[txn_id] = meta
            try:
                await self._persist(meta, producer_epoch=0, timeout_ms=timeout_ms)
            except BaseException:
                self.txns.pop(txn_id, None)
                raise
            log.info("transactional id %s: producer id %d epoch 0", txn_id, meta.producer_id)
            return NONE, meta.producer_id, 0
        if meta.busy or meta.state in PREPARING or meta.state == S.PREPARE_EPOCH_FENCE:
            return CONCURRENT_TRANSACTIONS, -1, -1
        if producer_id >= 0:  # KIP-360: an existing producer re-initialising
            if producer_id != meta.producer_id or epoch not in (meta.producer_epoch, meta.last_producer_epoch):
                return PRODUCER_FENCED, -1, -1
            if epoch == meta.last_producer_epoch and meta.state in COMPLETED:
                await self._confirm(meta)
                return NONE, meta.producer_id, meta.producer_epoch  # the bump already happened
        if meta.state == S.ONGOING:
            await self._fence_and_abort(meta, "a new producer initialised")
        if meta.producer_epoch >= MAX_EPOCH - 1:
            pid, new_epoch, last = self.pids.next_id(), 0, -1
        else:
            pid, new_epoch, last = meta.producer_id, meta.producer_epoch + 1, meta.producer_epoch
        await self._persist(
            meta,
            state=S.EMPTY,
            producer_id=pid,
            producer_epoch=new_epoch,
            timeout_ms=timeout_ms,
            partitions=set(),
            start_ms=-1,
            last_producer_epoch=last,
        )
        log.info("transactional id %s: producer id %d epoch %d", txn_id, pid, new_epoch)
        return NONE, pid, new_epoch

    async def add_partitions(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[TopicPartition], client_version: int = 0
    ) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn (client_version 0) or, with transaction version 2, the partitions a
        Produce v12+ or TxnOffsetCommit v5 writes to, added by the broker (client_version 2)."""

        def all_(code: int) -> dict[TopicPartition, int]:
            return {tp: code for tp in tps}

        if code := self.status(txn_id):
            return all_(code)
        err, meta = self._lookup(txn_id, producer_id, epoch)
        if meta is None:
            return all_(err)
        unknown = {tp for tp in tps if not self.partition_exists(*tp)}
        if unknown:
            return {tp: UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else OPERATION_NOT_ATTEMPTED for tp in tps}
        if meta.state != S.ONGOING and meta.state not in COMPLETED:
            return all_(INVALID_TXN_STATE)
        start = meta.start_ms if meta.state == S.ONGOING else self.clock()
        try:
            if meta.state == S.ONGOING and set(tps) <= meta.partitions:
                await self._confirm(meta)  # already added
            else:
                await self._persist(
                    meta,
                    state=S.ONGOING,
                    partitions=meta.partitions | set(tps),
                    start_ms=start,
                    client_txn_version=client_version,
                )
        except LogError as e:
            if e.error_code in MOVED:
                return all_(e.error_code)
            raise
        return all_(NONE)

    async def end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        if code := self.status(txn_id):
            return code
        try:
            return await self._end_txn(txn_id, producer_id, epoch, commit)
        except LogError as e:
            if e.error_code in MOVED:
                return e.error_code
            raise

    async def _end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        meta = self.txns.get(txn_id)
        if meta is None or meta.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        if epoch != meta.producer_epoch:
            return PRODUCER_FENCED
        if meta.busy or meta.state == S.PREPARE_EPOCH_FENCE:
            return CONCURRENT_TRANSACTIONS
        st = meta.state
        if st == S.ONGOING:
            # as Kafka, ended at version 0 whatever added the partitions (a client may write with
            # Produce v12+ yet end with EndTxn v4): the markers keep the epoch
            await self._persist(meta, state=S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, client_txn_version=0)
            await self._finish(meta)
            return NONE
        if st in PREPARING:
            return CONCURRENT_TRANSACTIONS if (st == S.PREPARE_COMMIT) == commit else INVALID_TXN_STATE
        if st == S.COMPLETE_COMMIT and commit or st == S.COMPLETE_ABORT and not commit:
            await self._confirm(meta)
            return NONE  # a retried EndTxn
        return INVALID_TXN_STATE

    async def end_txn_bumping(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> tuple[int, int, int]:
        """EndTxn v5+ (transaction version 2): (error, producer id, epoch) - the id and epoch the
        producer continues with, bumped (epoch_bump.py); -1, -1 with an error."""
        if code := self.status(txn_id):
            return code, -1, -1
        try:
            return await self._end_txn_bumping(txn_id, producer_id, epoch, commit)
        except LogError as e:
            if e.error_code in MOVED:
                return e.error_code, -1, -1
            raise

    async def _end_txn_bumping(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> tuple[int, int, int]:
        meta = self.txns.get(txn_id)
        if meta is None:
            return INVALID_PRODUCER_ID_MAPPING, -1, -1
        if meta.busy or meta.state == S.PREPARE_EPOCH_FENCE:
            return CONCURRENT_TRANSACTIONS, -1, -1
        d = decide(meta.state, meta.producer_id, meta.producer_epoch, meta.prev_producer_id, producer_id, epoch, commit)
        if d.target is None:
            if d.code:
                return d.code, -1, -1
            await self._confirm(meta)  # a retry of an EndTxn already done
            return NONE, meta.producer_id, meta.producer_epoch
        now = self.clock()
        if meta.producer_epoch == MAX_EPOCH and d.target == S.PREPARE_ABORT:
            bumped = meta.producer_epoch  # already broken: the abort goes through without a bump
        else:
            bumped = meta.producer_epoch + 1
        next_pid = self.pids.next_id() if epoch_exhausted(meta.producer_epoch) else -1
        await self._persist(
            meta,
            state=d.target,
            producer_epoch=bumped,
            last_producer_epoch=meta.producer_epoch,
            next_producer_id=next_pid,
            client_txn_version=2,
            start_ms=now if d.empty else meta.start_ms,
            last_update_ms=now,
        )
        await self._finish(meta)
        log.debug(
            "transactional id %s: ended with producer id %d epoch %d", txn_id, meta.producer_id, meta.producer_epoch
        )
        return NONE, meta.producer_id, meta.producer_epoch

    def verify(self, producer_id: int, epoch: int, tp: TopicPartition) -> int:
        """KIP-890: may a transactional batch of (producer, epoch) go to `tp` now?"""
        meta = self.by_pid.get(producer_id)
        if meta is None:
            return INVALID_TXN_STATE
        if epoch < meta.producer_epoch:
            return INVALID_PRODUCER_EPOCH
        if epoch != meta.producer_epoch or meta.state != S.ONGOING or tp not in meta.partitions:
            return INVALID_TXN_STATE
        return NONE

    def verify_request(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+ with verify_only (a partition leader asking, KIP-890), as Kafka's
        coordinator answers it: TRANSACTION_ABORTABLE for a partition not in the transaction."""
        if code := self.status(txn_id):
            return dict.fromkeys(tps, code)
        meta = self.txns.get(txn_id)
        if meta is None or meta.producer_id != producer_id:
            code = INVALID_PRODUCER_ID_MAPPING
        elif epoch != meta.producer_epoch:
            code = PRODUCER_FENCED
        elif meta.state in PREPARING:
            code = CONCURRENT_TRANSACTIONS
        else:
            return {tp: NONE if tp in meta.partitions else TRANSACTION_ABORTABLE for tp in tps}
        return dict.fromkeys(tps, code)

    def check_offsets_commit(self, txn_id: str, producer_id: int, epoch: int, tp: TopicPartition) -> int:
        """TxnOffsetCommit: the producer owns an Ongoing transaction that includes `tp`."""
        meta = self.txns.get(txn_id)
        if meta is None or meta.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        if epoch != meta.producer_epoch:
            return PRODUCER_FENCED
        if meta.state != S.ONGOING or tp not in meta.partitions:
            return INVALID_TXN_STATE
        return NONE

    # ---- timers ------------------------------------------------------------------------------------
    async def abort_timed_out(self, now: int | None = None) -> int:
        now = self.clock() if now is None else now
        n = 0
        for meta in list(self.txns.values()):
            if (
                meta.state == S.ONGOING
                and not meta.busy
                and meta.start_ms >= 0
                and now - meta.start_ms > meta.timeout_ms
            ):
                try:
                    await self._fence_and_abort(meta, f"transaction.timeout.ms {meta.timeout_ms} expired")
                    n += 1
                except LogError as e:  # tried again at the next scan
                    log.warning("transactional id %s: timeout abort not done yet: %s", meta.transactional_id, e)
                except Exception:
                    log.exception("transactional id %s: timeout abort failed", meta.transactional_id)
        return n

    async def expire_ids(self, now: int | None = None) -> int:
        """Forget transactional ids idle in a completed state longer than transactional.id.expiration.ms."""
        now = self.clock() if now is None else now
        n = 0
        for meta in list(self.txns.values()):
            if meta.state in COMPLETED and not meta.busy and now - meta.last_update_ms > self.expiration_ms:
                check_transition(meta.state, S.DEAD)
                await self.store.write(meta.transactional_id, None)
                meta.state = S.DEAD
                self.txns.pop(meta.transactional_id, None)
                if self.by_pid.get(meta.producer_id) is meta:
                    del self.by_pid[meta.producer_id]
                n += 1
        return n

    # ---- admin -------------------------------------------------------------------------------------
    def list(
        self,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        min_duration_ms: int = -1,
        id_pattern: re.Pattern[str] | None = None,
    ) -> tuple[list[str], list[TxnMetadata]]:
        """(unknown state filters, matching transactions), as Kafka's TransactionStateManager: Dead
        ones (being removed) never; with `min_duration_ms` >= 0 only those that started more than
        that long ago; with `id_pattern` only transactional ids it matches whole."""
        wanted, unknown = set(), []
        for name in states:
            st = S.from_kafka_name(name)
            if st is None:
                unknown.append(name)
            else:
                wanted.add(st)
        pids = set(producer_ids)
        now = self.clock()
        out = []
        for meta in self.txns.values():
            if meta.state == S.DEAD:
                continue
            if wanted and meta.state not in wanted:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if min_duration_ms >= 0 and now - meta.start_ms <= min_duration_ms:  # as Kafka: by start time
                continue
            if id_pattern is not None and not id_pattern.fullmatch(meta.transactional_id):
                continue
            out.append(meta)
        return unknown, sorted(out, key=lambda m: m.transactional_id)

    def active_count(self) -> int:
        return sum(1 for m in self.txns.values() if m.state == S.ONGOING or m.state in PREPARING)
