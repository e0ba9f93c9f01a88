"""Log compaction (cleanup.policy=compact): keep the latest record of every key.

Scope: the closed segments (never the active one) whose largest timestamp is at least
min.compaction.lag.ms old and that end at or below the first unstable offset (the first offset
of the oldest transaction without a marker, and the LSO the transaction layer keeps): the
"cleanable" prefix of the log. Cleaning never reaches into an open transaction.

Transactions (KIP-98's cleaner rules): a header pass over the whole log names each
transaction by (producer id, first batch offset) and finds which ones were aborted (ABORT
marker). One pass builds key -> offset of the key's latest record over the cleanable prefix,
counting committed and non-transactional records only; a second pass rewrites each segment:

- a record of an aborted transaction is removed, and never shadows a committed one;
- any other record survives when it is the last committed one of its key in the cleanable
  prefix (records with a null key, which compacted topics refuse on produce, are kept);
- a tombstone (null value) that survives is removed as well once its segment's largest timestamp
  is older than delete.retention.ms;
- a transaction marker (control batch) stays while its transaction has records in the log; once
  they are gone it is stamped with a delete horizon of now + delete.retention.ms (attribute bit
  0x40, the horizon in its first timestamp, as KIP-534) and removed by the first pass after that;
- offsets never change: a batch that loses records is rebuilt with its original base offset,
  lastOffsetDelta, producer fields and codec; a batch losing every record is dropped.

The same rules hold for `__consumer_offsets` (an aborted TxnOffsetCommit never shadows a
committed offset) and `__transaction_state` (written without transactions).

Swap protocol (crash safe): the new log is written to `<base>.log.cleaned` and fsynced, renamed
to `<base>.log.swap` (complete), the old indexes are removed, and the swap file replaces
`<base>.log`; indexes are then rebuilt. At open, `complete_interrupted_swaps` finishes a swap
found on disk and deletes leftover `.cleaned` files.

The dirty ratio (bytes of cleanable segments at or after `first_dirty_offset` over all cleanable
bytes) gates a run against min.cleanable.dirty.ratio; progress is kept in memory only, so the
first run after a restart cleans everything.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .records import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_ABORT,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    CREATE_TIME,
    DELETE_HORIZON_FLAG_MASK,
    FIRST_TIMESTAMP_OFFSET,
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_BASE_SEQUENCE,
    H_LAST_OFFSET_DELTA,
    H_LEADER_EPOCH,
    H_LENGTH,
    H_MAX_TS,
    H_PRODUCER_EPOCH,
    H_PRODUCER_ID,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    build_batch,
    compute_crc,
    decode_records,
    parse_control_record,
)
from .records import (
    H_FIRST_TS as H_FIRST_TIMESTAMP,
)
from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment

if TYPE_CHECKING:
    from .log import PartitionLog

logger = logging.getLogger("tidelog.log")

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


@dataclass(slots=True)
class CleanStats:
    segments_rewritten: int = 0
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    markers_removed: int = 0
    skipped: bool = False


def complete_interrupted_swaps(directory: Path) -> None:
    for name in os.listdir(directory):
        path = directory / name
        if name.endswith(CLEANED_SUFFIX):
            path.unlink()
        elif name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            stem = name[: -len(LOG_SUFFIX + SWAP_SUFFIX)]
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                try:
                    (directory / (stem + suffix)).unlink()
                except FileNotFoundError:
                    pass
            os.replace(path, directory / (stem + LOG_SUFFIX))
            logger.warning("%s: completed an interrupted compaction swap", directory / (stem + LOG_SUFFIX))


def _cleanable(log: PartitionLog, now: int, first_unstable: int) -> list[LogSegment]:
    """Closed segments, oldest first, up to the first one that is too young for
    min.compaction.lag.ms or reaches the first unstable offset (an open transaction)."""
    out = []
    for seg in log.segments[:-1]:
        if now - seg.largest_timestamp() < log.config.min_compaction_lag_ms:
            break
        if seg.next_offset > first_unstable:
            break
        out.append(seg)
    return out


def _records(seg: LogSegment) -> Iterator[tuple[bytes, tuple[Any, ...]]]:
    for pos, h in seg.batches():
        raw = seg.log.pread(pos, LOG_OVERHEAD + h[H_LENGTH])
        yield raw, h


def _control_type(raw: bytes) -> int | None:
    """ABORT/COMMIT of a control batch; None for a control batch with no (valid) record."""
    try:
        recs = decode_records(raw)
        return parse_control_record(recs[0])[0] if recs else None
    except Exception:  # noqa: BLE001 - a marker we cannot read is kept as it is
        return None


TxnKey = tuple[int, int]  # (producer id, offset of the transaction's first batch still in the log)


class _TxnTracker:
    """Walks batch headers in offset order and names the transaction each batch belongs to.

    A transactional data batch of a producer with no open transaction opens one, keyed by
    (producer id, its base offset); later transactional batches of that producer belong to it
    until a control batch (marker) of the producer closes it. A marker with no open
    transaction (its data was already cleaned away) belongs to none."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open: dict[int, int] = {}

    def data(self, h: tuple[Any, ...]) -> TxnKey | None:
        if not h[H_ATTRIBUTES] & TRANSACTIONAL_FLAG_MASK:
            return None
        pid = h[H_PRODUCER_ID]
        first = self.open.setdefault(pid, h[H_BASE_OFFSET])
        return pid, first

    def marker(self, h: tuple[Any, ...]) -> TxnKey | None:
        pid = h[H_PRODUCER_ID]
        first = self.open.pop(pid, None)
        return None if first is None else (pid, first)


def _transactions(log: PartitionLog) -> tuple[set[TxnKey], int]:
    """One pass over every batch header of the log: the aborted transactions, and the first
    unstable offset (first offset of the oldest transaction with no marker yet; the log end
    when none), bounded as well by the LSO the transaction layer set."""
    tracker = _TxnTracker()
    aborted: set[TxnKey] = set()
    for seg in log.segments:
        for pos, h in seg.batches():
            if h[H_ATTRIBUTES] & CONTROL_FLAG_MASK:
                key = tracker.marker(h)
                if key is not None and _control_type(seg.log.pread(pos, LOG_OVERHEAD + h[H_LENGTH])) == CONTROL_ABORT:
                    aborted.add(key)
            else:
                tracker.data(h)
    first_unstable = min(tracker.open.values(), default=log.log_end_offset)
    return aborted, min(first_unstable, log.last_stable_offset)


def clean(log: PartitionLog, now: int, force: bool = False) -> CleanStats:
    stats = CleanStats()
    cfg = log.config
    if not cfg.compact:
        stats.skipped = True
        return stats
    aborted, first_unstable = _transactions(log)
    segs = _cleanable(log, now, first_unstable)
    if not segs:
        stats.skipped = True
        return stats
    total = sum(s.size for s in segs)
    dirty = sum(s.size for s in segs if s.base_offset >= log.first_dirty_offset)
    if not force and (total == 0 or dirty / total < cfg.min_cleanable_dirty_ratio):
        stats.skipped = True
        return stats
    rewrite = _Rewrite(aborted, _latest_offsets(segs, aborted), now, cfg.delete_retention_ms, stats)
    horizon = now - cfg.delete_retention_ms
    for seg in segs:
        data = rewrite.segment(seg, drop_tombstones=seg.largest_timestamp() < horizon)
        if data is None:
            continue
        stats.segments_rewritten += 1
        stats.bytes_before += seg.size
        stats.bytes_after += len(data)
        log._replace_segment(seg, _swap(log, seg, data, now), now)
    log.cleaned_to(segs[-1].next_offset)
    if stats.segments_rewritten:
        logger.info(
            "cleaned %s-%d: %d segments rewritten, %d records and %d markers removed, %d -> %d bytes",
            log.topic,
            log.partition,
            stats.segments_rewritten,
            stats.records_removed,
            stats.markers_removed,
            stats.bytes_before,
            stats.bytes_after,
        )
    return stats


def _latest_offsets(segs: list[LogSegment], aborted: set[TxnKey]) -> dict[bytes, int]:
    """The first pass: key -> offset of its latest committed (or non-transactional) record in
    `segs`; aborted data never counts."""
    latest: dict[bytes, int] = {}
    tracker = _TxnTracker()
    for seg in segs:
        for raw, h in _records(seg):
            if h[H_ATTRIBUTES] & CONTROL_FLAG_MASK:
                tracker.marker(h)
                continue
            if tracker.data(h) in aborted:
                continue
            for r in decode_records(raw):
                if r.key is not None:
                    latest[r.key] = r.offset
    return latest


class _Rewrite:
    """The second pass, segment by segment in offset order (the transactions seen so far carry
    over from one segment to the next): what each segment keeps (module docstring's rules)."""

    def __init__(
        self, aborted: set[TxnKey], latest: dict[bytes, int], now: int, retention_ms: int, stats: CleanStats
    ) -> None:
        self.aborted = aborted
        self.latest = latest
        self.now = now
        self.retention_ms = retention_ms
        self.stats = stats
        self.tracker = _TxnTracker()
        self.with_data: set[TxnKey] = set()  # transactions with records still in the cleaned log

    def segment(self, seg: LogSegment, drop_tombstones: bool) -> bytes | None:
        """The segment's new bytes, or None when it keeps everything as it is; counts the records
        and markers removed into the stats."""
        parts: list[bytes] = []
        removed = changed = 0
        for raw, h in _records(seg):
            if h[H_ATTRIBUTES] & CONTROL_FLAG_MASK:
                marker = self._marker(raw, h)
                if marker is not raw:
                    changed += 1
                if marker is not None:
                    parts.append(marker)
                continue
            batch, n = self._data(raw, h, drop_tombstones)
            removed += n
            if batch is not None:
                parts.append(batch)
        self.stats.records_removed += removed
        if not removed and not changed:
            return None
        return b"".join(parts)

    def _marker(self, raw: bytes, h: tuple[Any, ...]) -> bytes | None:
        """A transaction marker as it stays (`raw` itself when unchanged), or None: removed."""
        key = self.tracker.marker(h)
        if key is not None and key in self.with_data:
            return raw  # its transaction still has records: the marker stays
        if not h[H_ATTRIBUTES] & DELETE_HORIZON_FLAG_MASK:
            # its transaction's data is gone: keep it delete.retention.ms from now
            return _with_delete_horizon(raw, self.now + self.retention_ms)
        if self.now < h[H_FIRST_TIMESTAMP]:
            return raw  # within its delete horizon
        self.stats.markers_removed += 1
        return None

    def _data(self, raw: bytes, h: tuple[Any, ...], drop_tombstones: bool) -> tuple[bytes | None, int]:
        """A data batch as it stays (`raw` when whole, rebuilt with its offsets when it lost records,
        None when it lost all) and how many records it lost."""
        txn = self.tracker.data(h)
        recs = decode_records(raw)
        if txn is not None and txn in self.aborted:
            keep = []  # records of an aborted transaction are never kept
        else:
            latest = self.latest
            keep = [
                r
                for r in recs
                if r.key is None or (latest.get(r.key) == r.offset and not (r.value is None and drop_tombstones))
            ]
        if keep and txn is not None:
            self.with_data.add(txn)
        if len(keep) == len(recs):
            return raw, 0
        if not keep:
            return None, len(recs)
        attrs = h[H_ATTRIBUTES]
        lat = attrs & TIMESTAMP_TYPE_MASK
        batch = build_batch(
            keep,
            base_offset=h[H_BASE_OFFSET],
            codec=attrs & COMPRESSION_CODEC_MASK,
            timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME,
            producer_id=h[H_PRODUCER_ID],
            producer_epoch=h[H_PRODUCER_EPOCH],
            base_sequence=h[H_BASE_SEQUENCE],
            transactional=bool(attrs & TRANSACTIONAL_FLAG_MASK),
            partition_leader_epoch=h[H_LEADER_EPOCH],
            max_timestamp=h[H_MAX_TS] if lat else None,
            last_offset_delta=h[H_LAST_OFFSET_DELTA],
        )
        return batch, len(recs) - len(keep)


def _with_delete_horizon(raw: bytes, horizon_ms: int) -> bytes:
    """A copy of a marker batch with the delete-horizon attribute set and its first timestamp
    replaced by the horizon (KIP-534's encoding; the max timestamp, so the time index, is
    unchanged), CRC recomputed."""
    out = bytearray(raw)
    attrs = int.from_bytes(out[ATTRIBUTES_OFFSET : ATTRIBUTES_OFFSET + 2], "big") | DELETE_HORIZON_FLAG_MASK
    out[ATTRIBUTES_OFFSET : ATTRIBUTES_OFFSET + 2] = attrs.to_bytes(2, "big")
    out[FIRST_TIMESTAMP_OFFSET : FIRST_TIMESTAMP_OFFSET + 8] = horizon_ms.to_bytes(8, "big", signed=True)
    out[CRC_OFFSET : CRC_OFFSET + 4] = compute_crc(out, 0).to_bytes(4, "big")
    return bytes(out)


def _swap(log: PartitionLog, old: LogSegment, data: bytes, now: int) -> LogSegment:
    directory = old.directory
    stem = f"{old.base_offset:020d}"
    cleaned = directory / (stem + LOG_SUFFIX + CLEANED_SUFFIX)
    swap = directory / (stem + LOG_SUFFIX + SWAP_SUFFIX)
    fd = os.open(cleaned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data) if data else None
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(cleaned, swap)
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        try:
            (directory / (stem + suffix)).unlink()
        except FileNotFoundError:
            pass
    os.replace(swap, directory / (stem + LOG_SUFFIX))
    new = LogSegment(directory, old.base_offset, log.config, created_ms=old.created_ms, log_size=len(data))
    new.rebuild()
    return new
