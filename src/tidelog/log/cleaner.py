"""Log compaction (cleanup.policy=compact): keep the latest record of every key.

Scope: the closed segments (never the active one) whose largest timestamp is at least
min.compaction.lag.ms old, the "cleanable" prefix of the log. One pass builds key -> last offset
over that prefix; a second pass rewrites each segment that loses records:

- a record survives when it is the last one of its key in the cleanable prefix (records with a
  null key, which compacted topics refuse on produce, are kept);
- a tombstone (null value) that survives is removed as well once its segment's largest timestamp
  is older than delete.retention.ms;
- control batches (transaction markers) are kept as they are;
- offsets never change: a batch that loses records is rebuilt with its original base offset,
  lastOffsetDelta, producer fields and codec; a batch losing every record is dropped.

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .records import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    CREATE_TIME,
    build_batch,
    decode_records,
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


def _cleanable(log: "PartitionLog", now: int) -> list[LogSegment]:
    out = []
    for seg in log.segments[:-1]:
        if now - seg.largest_timestamp() < log.config.min_compaction_lag_ms:
            break
        out.append(seg)
    return out


def _records(seg: LogSegment):
    for pos, h in seg.batches():
        raw = seg.log.pread(pos, LOG_OVERHEAD + h[1])
        yield raw, h


def clean(log: "PartitionLog", now: int, force: bool = False) -> CleanStats:
    stats = CleanStats()
    cfg = log.config
    if not cfg.compact:
        stats.skipped = True
        return stats
    segs = _cleanable(log, now)
    if not segs:
        stats.skipped = True
        return stats
    total = sum(s.size for s in segs)
    dirty = sum(s.size for s in segs if s.base_offset >= log.first_dirty_offset)
    if not force and (total == 0 or dirty / total < cfg.min_cleanable_dirty_ratio):
        stats.skipped = True
        return stats
    latest: dict[bytes, int] = {}
    for seg in segs:
        for raw, h in _records(seg):
            if h[5] & CONTROL_FLAG_MASK:
                continue
            for r in decode_records(raw):
                if r.key is not None:
                    latest[r.key] = r.offset
    horizon = now - cfg.delete_retention_ms
    for seg in segs:
        drop_tombstones = seg.largest_timestamp() < horizon
        parts: list[bytes] = []
        removed = 0
        for raw, h in _records(seg):
            attrs = h[5]
            if attrs & CONTROL_FLAG_MASK:
                parts.append(raw)
                continue
            recs = decode_records(raw)
            keep = [
                r for r in recs
                if r.key is None or (latest.get(r.key) == r.offset and not (r.value is None and drop_tombstones))
            ]
            removed += len(recs) - len(keep)
            if len(keep) == len(recs):
                parts.append(raw)
            elif keep:
                lat = attrs & TIMESTAMP_TYPE_MASK
                parts.append(
                    build_batch(
                        keep, base_offset=h[0], codec=attrs & COMPRESSION_CODEC_MASK,
                        timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME,
                        producer_id=h[9], producer_epoch=h[10], base_sequence=h[11],
                        transactional=bool(attrs & TRANSACTIONAL_FLAG_MASK), partition_leader_epoch=h[2],
                        max_timestamp=h[8] if lat else None, last_offset_delta=h[6],
                    )
                )
        if not removed:
            continue
        data = b"".join(parts)
        stats.segments_rewritten += 1
        stats.records_removed += removed
        stats.bytes_before += seg.size
        stats.bytes_after += len(data)
        log._replace_segment(seg, _swap(log, seg, data, now), now)
    log.first_dirty_offset = segs[-1].next_offset
    return stats


def _swap(log: "PartitionLog", old: LogSegment, data: bytes, now: int) -> LogSegment:
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
