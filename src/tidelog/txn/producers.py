"""Per-partition producer state (KIP-98 idempotence and open transactions), from batch headers.

For each producer id seen on a partition: its epoch, the sequence and offset ranges of its last
`BATCHES_KEPT` batches (a retried batch is found there and answered with its original offsets),
its last timestamp, and the first offset of its open transaction. The open transactions give
the partition's first unstable offset, hence its last stable offset (LSO).

Checks on append, on v2 batch headers only (producerId, producerEpoch, baseSequence,
lastOffsetDelta, the transactional flag):

| condition                                                   | result                            |
|-------------------------------------------------------------|-----------------------------------|
| producer id -1                                              | not tracked                       |
| epoch below the producer's epoch                            | INVALID_PRODUCER_EPOCH (47)       |
| same epoch, same sequence range as a kept batch             | `DuplicateBatch` (original offsets)|
| higher epoch and baseSequence != 0                          | OUT_OF_ORDER_SEQUENCE_NUMBER (45) |
| same epoch, baseSequence != last sequence + 1 (wrapping)    | OUT_OF_ORDER_SEQUENCE_NUMBER (45) |
| unknown producer id the broker never issued                 | UNKNOWN_PRODUCER_ID (59) (1)      |
| transactional batch the coordinator does not vouch for      | INVALID_TXN_STATE (48) (KIP-890)  |
| non-transactional batch while the producer's txn is open    | INVALID_TXN_STATE (48)            |

(1) A transactional batch gets INVALID_PRODUCER_ID_MAPPING (49) instead, as Kafka's verification.

A producer id the broker issued but whose state is gone (expired, or its batches deleted by
retention) is accepted at any sequence, as Kafka does. `check` stages the changes and `apply`
commits them once the log write succeeded, so a refused append changes nothing.

Snapshots (`snapshot_bytes` / `from_snapshot`): JSON, tidelog's own format, written by the
service at segment roll and at clean shutdown as `<offset>.snapshot`; the state after a snapshot
is rebuilt by replaying batch headers (`replay_batch`, `replay_marker`).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..log.errors import LogAppendError
from ..log.txnindex import AbortedTxn
from ..log.validation import BatchInfo
from ..wire.errors import (
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    UNKNOWN_PRODUCER_ID,
)

BATCHES_KEPT = 5
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1

SNAPSHOT_VERSION = 1


class DuplicateBatch(Exception):
    """A retried batch already in the log; carries its original offsets."""

    def __init__(self, first_offset: int, last_offset: int) -> None:
        super().__init__(f"duplicate of batch at {first_offset}")
        self.first_offset = first_offset
        self.last_offset = last_offset


@dataclass(slots=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = -1
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=BATCHES_KEPT))
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    txn_first_offset: int | None = None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.producer_id,
            self.epoch,
            deque(self.batches, maxlen=BATCHES_KEPT),
            self.last_timestamp,
            self.coordinator_epoch,
            self.txn_first_offset,
        )


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


# verify(producer_id, epoch) -> 0 or an error code: the coordinator's word on a transactional batch
Verifier = Callable[[int, int], int]


class PartitionProducers:
    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.producers: dict[int, ProducerEntry] = {}

    # ---- append path -------------------------------------------------------------------------
    def check(
        self, batches: Iterable[BatchInfo], verify: Verifier | None = None, known: Callable[[int], bool] | None = None
    ) -> dict[int, ProducerEntry]:
        """Staged entries for the batches (validation.BatchInfo), or LogAppendError /
        DuplicateBatch. Nothing is changed until `apply`."""
        staged: dict[int, ProducerEntry] = {}
        for b in batches:
            pid = b.producer_id
            if pid < 0 or b.is_control:
                continue
            current = staged.get(pid) or self.producers.get(pid)
            epoch, first_seq = b.producer_epoch, b.base_sequence
            last_seq = b.last_sequence
            if current is not None and epoch < current.epoch:
                raise LogAppendError(
                    INVALID_PRODUCER_EPOCH, f"producer {pid} epoch {epoch} is older than {current.epoch}"
                )
            if current is not None and epoch == current.epoch and first_seq >= 0:
                for m in current.batches:
                    if m.first_seq == first_seq and m.last_seq == last_seq:
                        raise DuplicateBatch(m.first_offset, m.last_offset)
            if first_seq >= 0:
                if current is None:
                    if known is not None and not known(pid):
                        # transactional: Kafka's KIP-890 verification answers first, and a producer
                        # id the coordinator never mapped is INVALID_PRODUCER_ID_MAPPING there
                        raise LogAppendError(
                            INVALID_PRODUCER_ID_MAPPING if b.is_transactional else UNKNOWN_PRODUCER_ID,
                            f"producer id {pid} was never issued",
                        )
                elif epoch > current.epoch:
                    if first_seq != 0 and current.epoch >= 0:
                        raise LogAppendError(
                            OUT_OF_ORDER_SEQUENCE_NUMBER,
                            f"producer {pid}: new epoch {epoch} must start at sequence 0, got {first_seq}",
                        )
                elif current.batches and not in_sequence(current.last_seq, first_seq):
                    raise LogAppendError(
                        OUT_OF_ORDER_SEQUENCE_NUMBER,
                        f"producer {pid}: expected sequence {current.last_seq + 1}, got {first_seq}",
                    )
            if b.is_transactional:
                if verify is not None:
                    code = verify(pid, epoch)
                    if code:
                        raise LogAppendError(
                            code,
                            f"producer {pid} epoch {epoch} has no ongoing transaction "
                            f"with {self.topic}-{self.partition}",
                        )
            elif current is not None and current.txn_first_offset is not None:
                raise LogAppendError(
                    INVALID_TXN_STATE, f"producer {pid} sent a non-transactional batch inside its transaction"
                )
            entry = current.copy() if current is not None else ProducerEntry(pid)
            self._add_batch(
                entry,
                b.producer_epoch,
                first_seq,
                last_seq,
                b.base_offset,
                b.last_offset,
                b.max_timestamp,
                b.is_transactional,
            )
            staged[pid] = entry
        return staged

    @staticmethod
    def _add_batch(
        entry: ProducerEntry,
        epoch: int,
        first_seq: int,
        last_seq: int,
        first_offset: int,
        last_offset: int,
        timestamp: int,
        transactional: bool,
    ) -> None:
        if epoch != entry.epoch:
            entry.batches.clear()
            entry.epoch = epoch
        if first_seq >= 0:
            entry.batches.append(BatchMeta(first_seq, last_seq, first_offset, last_offset, timestamp))
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        if transactional and entry.txn_first_offset is None:
            entry.txn_first_offset = first_offset

    def apply(self, staged: dict[int, ProducerEntry]) -> None:
        self.producers.update(staged)

    # ---- markers -----------------------------------------------------------------------------
    def has_open_txn(self, producer_id: int) -> bool:
        e = self.producers.get(producer_id)
        return e is not None and e.txn_first_offset is not None

    def complete_txn(
        self,
        producer_id: int,
        epoch: int,
        marker_offset: int,
        commit: bool,
        coordinator_epoch: int = 0,
        timestamp: int = -1,
    ) -> AbortedTxn | None:
        """A COMMIT/ABORT marker at `marker_offset` closes the producer's open transaction; an
        abort returns the `.txnindex` entry to record (its LSO is the one after the marker)."""
        e = self.producers.get(producer_id)
        if e is None:
            e = self.producers[producer_id] = ProducerEntry(producer_id)
        first = e.txn_first_offset
        e.txn_first_offset = None
        if epoch > e.epoch:
            e.epoch = epoch
            e.batches.clear()
        e.coordinator_epoch = coordinator_epoch
        e.last_timestamp = max(e.last_timestamp, timestamp)
        if commit or first is None:
            return None
        fu = self.first_unstable_offset()
        lso = marker_offset + 1 if fu is None else min(fu, marker_offset + 1)
        return AbortedTxn(producer_id, first, marker_offset, lso)

    def first_unstable_offset(self) -> int | None:
        firsts = [e.txn_first_offset for e in self.producers.values() if e.txn_first_offset is not None]
        return min(firsts) if firsts else None

    def open_txn_count(self) -> int:
        return sum(1 for e in self.producers.values() if e.txn_first_offset is not None)

    # ---- replay (rebuild from the log) ----------------------------------------------------------
    def replay_batch(
        self,
        producer_id: int,
        epoch: int,
        base_seq: int,
        first_offset: int,
        last_offset: int,
        max_timestamp: int,
        transactional: bool,
    ) -> None:
        if producer_id < 0:
            return
        e = self.producers.get(producer_id)
        if e is None:
            e = self.producers[producer_id] = ProducerEntry(producer_id)
        last_seq = -1 if base_seq < 0 else (base_seq + last_offset - first_offset) % (2**31)
        self._add_batch(e, epoch, base_seq, last_seq, first_offset, last_offset, max_timestamp, transactional)

    # ---- expiry ------------------------------------------------------------------------------------
    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Drop producers idle longer than `expiration_ms` without an open transaction."""
        gone = [
            pid
            for pid, e in self.producers.items()
            if e.txn_first_offset is None and e.last_timestamp >= 0 and now_ms - e.last_timestamp > expiration_ms
        ]
        for pid in gone:
            del self.producers[pid]
        return len(gone)

    # ---- snapshots ---------------------------------------------------------------------------------
    def snapshot_bytes(self, offset: int) -> bytes:
        return json.dumps(
            {
                "version": SNAPSHOT_VERSION,
                "topic": self.topic,
                "partition": self.partition,
                "offset": offset,
                "producers": [
                    {
                        "id": e.producer_id,
                        "epoch": e.epoch,
                        "last_ts": e.last_timestamp,
                        "coord_epoch": e.coordinator_epoch,
                        "txn_first": e.txn_first_offset,
                        "batches": [
                            [m.first_seq, m.last_seq, m.first_offset, m.last_offset, m.timestamp] for m in e.batches
                        ],
                    }
                    for e in self.producers.values()
                ],
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_snapshot(cls, topic: str, partition: int, data: bytes) -> tuple[PartitionProducers, int]:
        """(state, snapshot offset); ValueError for a snapshot that does not parse."""
        doc = json.loads(data)
        if doc.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"unknown snapshot version {doc.get('version')}")
        st = cls(topic, partition)
        for p in doc["producers"]:
            e = ProducerEntry(
                int(p["id"]),
                int(p["epoch"]),
                deque(maxlen=BATCHES_KEPT),
                int(p["last_ts"]),
                int(p["coord_epoch"]),
                None if p["txn_first"] is None else int(p["txn_first"]),
            )
            for fs, ls, fo, lo, ts in p["batches"]:
                e.batches.append(BatchMeta(fs, ls, fo, lo, ts))
            st.producers[e.producer_id] = e
        return st, int(doc["offset"])
