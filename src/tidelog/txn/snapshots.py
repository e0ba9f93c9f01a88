"""Producer state on disk: `<offset>.snapshot` files beside a partition's segments, and the
rebuild from the log after the newest usable snapshot.

A snapshot holds the state of every producer as of `offset` (all batches below it applied). At
load the newest snapshot at or below the log end offset is read (newer ones, left by a log that
recovery truncated, are deleted; an unreadable one is skipped with a warning) and the batches
from its offset on are replayed from their headers; control batches (tiny) are decoded to tell
COMMIT from ABORT. An ABORT marker found while replaying whose `.txnindex` entry is missing (the
crash came between marker and index write) gets its entry back. No snapshot: replay from the
log start. Writes go to a temporary file renamed into place; at most `KEEP` files are kept.
"""

from __future__ import annotations

import bisect
import logging
import os
from pathlib import Path

from ..log.log import PartitionLog
from ..log.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CONTROL_FLAG_MASK,
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_BASE_SEQUENCE,
    H_LAST_OFFSET_DELTA,
    H_LENGTH,
    H_MAX_TS,
    H_PRODUCER_EPOCH,
    H_PRODUCER_ID,
    LOG_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
    decode_records,
    parse_control_record,
)
from ..log.validation import BatchInfo
from .producers import PartitionProducers

log = logging.getLogger("tidelog.txn")

SUFFIX = ".snapshot"
KEEP = 2


def snapshot_files(directory: Path) -> list[tuple[int, Path]]:
    out = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        stem, dot, ext = name.partition(".")
        if dot and ext == "snapshot" and stem.isdigit():
            out.append((int(stem), directory / name))
    return sorted(out)


def write_snapshot(plog: PartitionLog, state: PartitionProducers, offset: int | None = None) -> Path:
    offset = plog.log_end_offset if offset is None else offset
    path: Path = plog.dir / f"{offset:020d}{SUFFIX}"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(state.snapshot_bytes(offset))
    os.replace(tmp, path)
    for _, old in snapshot_files(plog.dir)[:-KEEP]:
        old.unlink(missing_ok=True)
    return path


def load_state(plog: PartitionLog) -> PartitionProducers:
    """The partition's producer state: newest usable snapshot plus replay of the log after it."""
    leo = plog.log_end_offset
    state, start = PartitionProducers(plog.topic, plog.partition), plog.log_start_offset
    for offset, path in reversed(snapshot_files(plog.dir)):
        if offset > leo:
            path.unlink(missing_ok=True)
            continue
        try:
            state, snap_offset = PartitionProducers.from_snapshot(plog.topic, plog.partition, path.read_bytes())
            start = max(snap_offset, plog.log_start_offset)
            break
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("%s-%d: ignoring unreadable producer snapshot %s: %s", plog.topic, plog.partition, path, e)
    replay(plog, state, start)
    return state


def replay(plog: PartitionLog, state: PartitionProducers, offset: int) -> None:
    """Apply every batch whose last offset is >= `offset`, reading batch headers only (a
    control batch, a few dozen bytes, is read whole to tell COMMIT from ABORT)."""
    end = plog.log_end_offset
    segs = plog.segments
    first = max(0, bisect.bisect_right([seg.base_offset for seg in segs], offset) - 1)
    for seg in segs[first:]:
        if offset >= end:
            return
        found = seg.find_batch(offset)
        if found is None:
            continue
        for pos, f in seg.log.headers(found[0]):
            base, last = f[H_BASE_OFFSET], f[H_BASE_OFFSET] + f[H_LAST_OFFSET_DELTA]
            if last < offset:
                continue
            if base >= end:
                break
            attrs = f[H_ATTRIBUTES]
            pid, epoch = f[H_PRODUCER_ID], f[H_PRODUCER_EPOCH]
            if attrs & CONTROL_FLAG_MASK:
                _replay_marker(plog, state, seg.log.pread(pos, LOG_OVERHEAD + f[H_LENGTH]), pid, epoch, base)
            else:
                state.replay_batch(
                    pid, epoch, f[H_BASE_SEQUENCE], base, last, f[H_MAX_TS], bool(attrs & TRANSACTIONAL_FLAG_MASK)
                )
            offset = last + 1


def replay_appended(
    plog: PartitionLog, state: PartitionProducers, data: bytes | bytearray | memoryview, batches: list[BatchInfo]
) -> None:
    """`replay` of batches just appended from `data` (a follower's fetch), from their validated
    headers, without reading them back from the segment; `batches` as `append_as_follower`
    returned them (positions within `data`)."""
    for b in batches:
        if b.is_control:
            batch = bytes(data[b.position : b.position + b.size])
            _replay_marker(plog, state, batch, b.producer_id, b.producer_epoch, b.base_offset)
        else:
            state.replay_batch(
                b.producer_id,
                b.producer_epoch,
                b.base_sequence,
                b.base_offset,
                b.last_offset,
                b.max_timestamp,
                b.is_transactional,
            )


def _replay_marker(
    plog: PartitionLog, state: PartitionProducers, batch: bytes, pid: int, epoch: int, offset: int
) -> None:
    try:
        records = decode_records(batch)
        ctype, coord_epoch = parse_control_record(records[0])
    except Exception as e:  # noqa: BLE001 - a damaged marker is skipped, not fatal
        log.warning("%s-%d: unreadable control batch at %d: %s", plog.topic, plog.partition, offset, e)
        return
    if ctype not in (CONTROL_COMMIT, CONTROL_ABORT):
        return
    aborted = state.complete_txn(pid, epoch, offset, ctype == CONTROL_COMMIT, coord_epoch)
    if aborted is None:
        return
    seg = None
    for s in plog.segments:
        if s.base_offset <= offset:
            seg = s
    if seg is None:
        return
    entries = seg.txn_index.entries
    if entries and entries[-1].last_offset >= offset:
        return
    seg.txn_index.append(aborted)
    log.info(
        "%s-%d: restored .txnindex entry for aborted transaction of producer %d at %d",
        plog.topic,
        plog.partition,
        pid,
        offset,
    )
