"""`LogSegment`: one `.log` file with its lazily opened `.index`, `.timeindex` and `.txnindex`.

Files are named by the segment's base offset, zero-padded to 20 digits
(`00000000000000368769.log`); the base offset is the first offset the segment may hold.

Append (active segment only): the whole record set is written with one write; for each batch, if
more than `index.interval.bytes` were appended since the last index entry, an offset index entry
(batch last offset, batch position) and a time index entry (largest timestamp so far, last offset
of the batch that first reached it) are added. When rolled or closed, a final time index entry
records the segment's largest timestamp and the indexes are trimmed.

Indexes are opened on first use and sanity-checked (size, ordering, last offset entry against the
batch it points at, last time entry against the batch it names and against every batch after the
offset index's last entry, which no timestamp may exceed); a missing or failing index is rebuilt
from the log with a warning. A time index cut short by damage below the recovery point is caught
whenever a batch near the segment's end has a later timestamp than the surviving last entry (the
usual case: producers' clocks rise); it cannot be caught when the only later timestamps lie in
the middle of the segment without reading every header. A lookup
whose index entry does not land on a batch header also triggers a rebuild.

Crash recovery (`recover`): every batch is checked (`LogFile.scan_valid`); the log is truncated at
the first torn or corrupt batch and both indexes are rebuilt.
"""

from __future__ import annotations

import bisect
import logging
import os
import random
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import LogConfig
from .errors import CorruptIndexError
from .index import OffsetIndex, TimeIndex
from .logfile import HEADER_WINDOW, LogFile
from .records import (
    H_BASE_OFFSET,
    H_LAST_OFFSET_DELTA,
    H_LENGTH,
    H_MAGIC,
    H_MAX_TS,
    HEADER,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    record_timestamps,
)
from .txnindex import TransactionIndex
from .validation import ValidatedAppend

TAIL_BATCHES = 64  # most appended batches a `LogSegment` keeps in memory for tail reads

logger = logging.getLogger("tidelog.log")

INT32_MAX = 2**31 - 1
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"


def segment_prefix(directory: Path, base_offset: int) -> str:
    return str(directory / f"{base_offset:020d}")


@dataclass(slots=True)
class FileSlice:
    """Whole batches at [position, position + length) of a segment file.

    `fd` stays valid until the segment is deleted (retention, compaction, topic deletion) or
    the log closed: use it (os.sendfile) before yielding to anything that may run those.
    """

    path: Path
    fd: int
    position: int
    length: int
    first_offset: int  # base offset of the first batch (may be below the fetch offset)
    last_offset: int  # last offset of the last batch
    _data: bytes | None = field(default=None, repr=False)

    def tobytes(self) -> bytes:
        if self._data is None:
            self._data = os.pread(self.fd, self.length, self.position) if self.length else b""
        return self._data

    def __len__(self) -> int:
        return self.length


class LogSegment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        created_ms: int,
        log_size: int | None = None,
        suffix: str = "",
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.config = config
        prefix = segment_prefix(directory, base_offset)
        self.log = LogFile(Path(prefix + LOG_SUFFIX + suffix), log_size)
        self.offset_index = OffsetIndex(Path(prefix + INDEX_SUFFIX + suffix), base_offset, config.segment_index_bytes)
        self.time_index = TimeIndex(Path(prefix + TIME_INDEX_SUFFIX + suffix), base_offset, config.segment_index_bytes)
        self.txn_index = TransactionIndex(Path(prefix + TXN_INDEX_SUFFIX + suffix), base_offset)
        self.created_ms = created_ms
        self.active = False
        self._indexes_ready = False
        self._next_offset: int | None = None
        self._max_ts: int | None = None
        self._offset_of_max_ts = -1
        self._rolling_ts: int | None = None
        self._rolling_ts_loaded = False
        self._bytes_since_index = 0
        # the last `TAIL_BATCHES` batches appended by this process to the active segment, up to
        # the log end (last and base offsets, positions, sizes; 32 bytes a batch): tail reads
        # (followers, caught-up consumers) are served from them without reading headers back
        self._tail_last = array("q")
        self._tail_base = array("q")
        self._tail_pos = array("q")
        self._tail_size = array("q")
        jitter = config.segment_jitter_ms
        self.roll_jitter_ms = random.randrange(jitter) if jitter > 0 else 0

    @classmethod
    def create(cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        seg = cls(directory, base_offset, config, created_ms=now_ms, log_size=0)
        for p in (seg.offset_index.path, seg.time_index.path, seg.txn_index.path):
            if p.exists():
                p.unlink()
        seg.log.truncate(0)
        seg._next_offset = base_offset
        seg._max_ts, seg._offset_of_max_ts = NO_TIMESTAMP, -1
        seg._rolling_ts_loaded = True
        seg.make_active()
        return seg

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, active={self.active})"

    # -- state ------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.log.size

    @property
    def next_offset(self) -> int:
        """One past the last offset in this segment (base offset when empty)."""
        if self._next_offset is None:
            self.ensure_indexes()
            if self._next_offset is None:
                self._next_offset = self._tail()[0]
        return self._next_offset

    def _tail(self) -> tuple[int, int]:
        """(next offset, largest batch maxTimestamp or -1) over the batches from the offset
        index's last entry to the end: the only headers neither index covers."""
        _, pos = self.offset_index.last_entry()
        nxt, max_ts = self.base_offset, NO_TIMESTAMP
        for _p, h in self.log.headers(pos):
            nxt = h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] + 1
            if h[H_MAX_TS] > max_ts:
                max_ts = h[H_MAX_TS]
        return max(nxt, self.base_offset), max_ts

    def _load_max_ts(self) -> None:
        if self._max_ts is None:
            self.ensure_indexes()
            if self._max_ts is None:
                ts, off = self.time_index.last_entry()
                self._max_ts, self._offset_of_max_ts = (ts, off) if self.time_index.entries else (NO_TIMESTAMP, -1)

    @property
    def max_timestamp(self) -> int:
        """Largest record timestamp (-1 when none: empty, or magic 0 data)."""
        self._load_max_ts()
        assert self._max_ts is not None
        return self._max_ts

    @property
    def offset_of_max_timestamp(self) -> int:
        """Last offset of the first batch that reached max_timestamp (-1 when none)."""
        self._load_max_ts()
        return self._offset_of_max_ts

    def largest_timestamp(self) -> int:
        """Retention's clock for this segment: max_timestamp, or the file's mtime without one."""
        ts = self.max_timestamp
        return ts if ts >= 0 else self.log.mtime_ms()

    @property
    def rolling_based_timestamp(self) -> int | None:
        """maxTimestamp of the first batch (segment.ms is measured from it)."""
        if not self._rolling_ts_loaded:
            self._rolling_ts_loaded = True
            if self.log.size >= RECORD_BATCH_OVERHEAD:
                h = HEADER.unpack_from(self.log.pread(0, RECORD_BATCH_OVERHEAD))
                self._rolling_ts = h[H_MAX_TS] if h[H_MAGIC] == MAGIC_V2 else None
        return self._rolling_ts

    # -- indexes ----------------------------------------------------------------------------

    def ensure_indexes(self) -> None:
        if self._indexes_ready:
            return
        try:
            if self.log.size > 0 and not (self.offset_index.path.exists() and self.time_index.path.exists()):
                raise CorruptIndexError("index file missing")
            self.offset_index.open(preallocate=self.active)
            self.time_index.open(preallocate=self.active)
            self.offset_index.sanity_check(self.log.size)
            self.time_index.sanity_check(self.log.size)
            if self.offset_index.entries:
                off, pos = self.offset_index.last_entry()
                h = HEADER.unpack_from(self.log.pread(pos, RECORD_BATCH_OVERHEAD).ljust(RECORD_BATCH_OVERHEAD, b"\0"))
                if h[H_MAGIC] != MAGIC_V2 or h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] != off:
                    raise CorruptIndexError(f"{self.offset_index.path}: last entry does not match the log")
            self._check_time_index()
            self.txn_index.sanity_check()
            self._indexes_ready = True
        except (CorruptIndexError, OSError, ValueError) as e:
            logger.warning("segment %s: rebuilding indexes (%s)", self.log.path, e)
            self.rebuild()

    def _check_time_index(self) -> None:
        """The last entry (t, o) must name the batch ending at o, whose maxTimestamp is t, and no
        batch after the offset index's last entry may exceed t (the last entry is the segment's
        largest timestamp: a time index cut short, or never given its final entry before a
        crash, fails this). An empty index is only right when the first batch has no timestamp.
        Cost: the batch headers from the offset index's last entry to the end, which also give
        `next_offset`."""
        if not self.log.size:
            return
        if not self.time_index.entries:
            h = HEADER.unpack_from(self.log.pread(0, RECORD_BATCH_OVERHEAD).ljust(RECORD_BATCH_OVERHEAD, b"\0"))
            if h[H_MAX_TS] >= 0 and not self.active:
                raise CorruptIndexError(f"{self.time_index.path}: empty for a log with timestamps")
            return
        ts, off = self.time_index.last_entry()
        _o, pos = self.offset_index.lookup(off)
        for _p, h in self.log.headers(pos):
            if h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] >= off:
                if h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] != off or h[H_MAX_TS] != ts:
                    raise CorruptIndexError(f"{self.time_index.path}: last entry does not match the log")
                break
        else:
            raise CorruptIndexError(f"{self.time_index.path}: last entry names no batch of the log")
        nxt, tail_ts = self._tail()
        if tail_ts > ts:
            raise CorruptIndexError(f"{self.time_index.path}: last entry {ts} is below a later batch's {tail_ts}")
        if self._next_offset is None:
            self._next_offset = nxt

    def rebuild(self) -> int:
        """Rebuild both indexes from the log without checking CRCs."""
        return self._scan(validate=False)

    def recover(self) -> int:
        """Check every batch; truncate at the first bad one; rebuild indexes. Bytes truncated."""
        return self._scan(validate=True)

    def _scan(self, validate: bool) -> int:
        self._forget_tail()
        oi, ti = self.offset_index, self.time_index
        oi.reset()
        ti.reset()
        interval = self.config.index_interval_bytes
        max_ts, off_max, since = NO_TIMESTAMP, -1, 0
        next_off, rolling, end = self.base_offset, None, 0
        it = self.log.scan_valid(0, self.base_offset) if validate else self.log.headers(0)
        for pos, h in it:
            last = h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA]
            bmax = h[H_MAX_TS]
            size = LOG_OVERHEAD + h[H_LENGTH]
            if rolling is None:
                rolling = bmax
            if bmax > max_ts:
                max_ts, off_max = bmax, last
            if since > interval and not oi.is_full:
                oi.append(last, pos)
                ti.maybe_append(max_ts, off_max)
                since = 0
            since += size
            next_off = last + 1
            end = pos + size
        truncated = 0
        if validate and end < self.log.size:
            truncated = self.log.size - end
            self.log.truncate(end)
        if validate:
            self.txn_index.truncate_to(next_off)
        self._next_offset = next_off
        self._max_ts, self._offset_of_max_ts = max_ts, off_max
        self._rolling_ts, self._rolling_ts_loaded = rolling, True
        self._bytes_since_index = since
        if not self.active:
            ti.maybe_append(max_ts, off_max, final=True)
            oi.trim()
            ti.trim()
        self._indexes_ready = True
        return truncated

    # -- append -----------------------------------------------------------------------------

    def make_active(self) -> None:
        self.active = True
        if self._indexes_ready:
            self.offset_index.make_active()
            self.time_index.make_active()
        else:
            self.ensure_indexes()
            self.offset_index.make_active()
            self.time_index.make_active()
        _ = self.next_offset, self.max_timestamp

    def should_roll(self, size: int, max_ts: int, last_offset: int, now_ms: int) -> str | None:
        """Why the active segment must be rolled before appending (None: it needn't)."""
        cfg = self.config
        if self.log.size > 0:
            if self.log.size + size > cfg.segment_bytes:
                return "segment.bytes"
            rolling = self.rolling_based_timestamp
            waited = (
                max_ts - rolling if rolling is not None and rolling >= 0 and max_ts >= 0 else now_ms - self.created_ms
            )
            if waited > cfg.segment_ms - self.roll_jitter_ms:
                return "segment.ms"
            if self.offset_index.is_full or self.time_index.is_full:
                return "index full"
        if last_offset - self.base_offset > INT32_MAX:
            return "relative offset overflow"
        return None

    def append(self, buf: bytes | bytearray | memoryview, info: ValidatedAppend) -> None:
        pos0 = self.log.append(buf)
        interval = self.config.index_interval_bytes
        oi, ti = self.offset_index, self.time_index
        since = self._bytes_since_index
        max_ts, off_max = self._max_ts, self._offset_of_max_ts
        assert max_ts is not None  # the active segment's indexes are loaded before appends
        t_last, t_base, t_pos, t_size = self._tail_last, self._tail_base, self._tail_pos, self._tail_size
        if len(t_last) + len(info.batches) > TAIL_BATCHES:  # the older half goes (not one per append)
            self._forget_tail(max(len(t_last) + len(info.batches) - TAIL_BATCHES, TAIL_BATCHES // 2))
        for b in info.batches:
            t_last.append(b.last_offset)
            t_base.append(b.base_offset)
            t_pos.append(pos0 + b.position)
            t_size.append(b.size)
            if b.max_timestamp > max_ts:
                max_ts, off_max = b.max_timestamp, b.last_offset
            if since > interval and not oi.is_full:
                oi.append(b.last_offset, pos0 + b.position)
                ti.maybe_append(max_ts, off_max)
                since = 0
            since += b.size
        self._bytes_since_index = since
        self._max_ts, self._offset_of_max_ts = max_ts, off_max
        if pos0 == 0 and info.batches:
            self._rolling_ts = info.batches[0].max_timestamp
            self._rolling_ts_loaded = True
        self._next_offset = info.last_offset + 1

    def truncate_to(self, offset: int) -> int:
        """Cut the log at the first batch whose last offset is >= `offset` (replica truncation),
        rebuild both indexes from what is left, drop .txnindex entries from there on. The segment
        becomes the active one. Bytes removed."""
        self._forget_tail()
        found = self.find_batch(offset)
        cut = found[0] if found is not None else self.log.size
        removed = self.log.size - cut
        self.active = True
        if removed:
            self.log.truncate(cut)
        self._scan(validate=False)
        self.txn_index.truncate_to(self._next_offset if self._next_offset is not None else offset)
        self.offset_index.make_active()
        self.time_index.make_active()
        return removed

    def on_roll(self) -> None:
        """Becomes inactive: final time index entry, trim, fsync everything."""
        self._forget_tail()
        self.ensure_indexes()
        if self._max_ts is not None and self._max_ts >= 0:
            self.time_index.maybe_append(self._max_ts, self._offset_of_max_ts, final=True)
        self.active = False
        self.offset_index.trim()
        self.time_index.trim()
        self.flush()

    # -- reads ------------------------------------------------------------------------------

    def find_batch(self, offset: int) -> tuple[int, tuple[Any, ...]] | None:
        """(position, header) of the first batch whose last offset >= offset, or None."""
        for attempt in (0, 1):
            self.ensure_indexes()
            idx_off, pos = self.offset_index.lookup(offset)
            for p, h in self.log.headers(pos):
                if (
                    p == pos
                    and pos
                    and (h[H_MAGIC] != MAGIC_V2 or h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] != idx_off)
                ):
                    if attempt == 0:
                        logger.warning("segment %s: index entry does not match the log; rebuilding", self.log.path)
                        self.rebuild()
                        break
                if h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] >= offset:
                    return p, h
            else:
                return None
        return None

    def _forget_tail(self, n: int | None = None) -> None:
        """Drop the oldest `n` remembered batches (all of them by default)."""
        for a in (self._tail_last, self._tail_base, self._tail_pos, self._tail_size):
            del a[:n]

    def read(self, offset: int, max_bytes: int, max_offset: int, min_one: bool, load: bool = True) -> FileSlice | None:
        """Whole batches from the one containing `offset`, ending before the first batch with an
        offset >= max_offset, within max_bytes (or the first batch alone if min_one).
        None when no batch of this segment reaches `offset`. An offset among the batches this
        process appended last is found in memory (`_tail_*`), else through the offset index and
        the headers after its entry."""
        lasts = self._tail_last
        batches: Iterable[tuple[int, int]]  # (last offset, size) of each batch from the first
        if lasts and offset >= self._tail_base[0]:
            i = bisect.bisect_left(lasts, offset)
            if i == len(lasts):
                return None  # past the last batch: the tail reaches the log end
            start, base0 = self._tail_pos[i], self._tail_base[i]
            batches = zip(lasts[i:], self._tail_size[i:])
        else:
            found = self.find_batch(offset)
            if found is None:
                return None
            start, base0 = found[0], found[1][H_BASE_OFFSET]
            window = max(HEADER_WINDOW, min(max_bytes, 1 << 20))
            batches = (
                (h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA], LOG_OVERHEAD + h[H_LENGTH])
                for _p, h in self.log.headers(start, window=window)
            )
        length, last = 0, -1
        for batch_last, size in batches:
            if batch_last >= max_offset:
                break
            if length + size > max_bytes and not (length == 0 and min_one):
                break
            length += size
            last = batch_last
            if length >= max_bytes:
                break
        sl = FileSlice(self.log.path, self.log.fd, start, length, base0, last)
        if load:
            sl.tobytes()
        return sl

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= target and offset >=
        starting_offset, or None."""
        self.ensure_indexes()
        _ts, t_off = self.time_index.lookup(timestamp)
        _o, pos = self.offset_index.lookup(max(t_off, starting_offset))
        for p, h in self.log.headers(pos):
            if h[H_MAX_TS] >= timestamp and h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] >= starting_offset:
                batch = self.log.pread(p, LOG_OVERHEAD + h[H_LENGTH])
                for off, ts in record_timestamps(batch):
                    if ts >= timestamp and off >= starting_offset:
                        return off, ts
        return None

    def batches(self, start_position: int = 0) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """(position, header) of every batch from start_position."""
        return self.log.headers(start_position)

    # -- durability, life cycle ---------------------------------------------------------------

    def flush(self) -> None:
        self.log.flush()
        if self._indexes_ready:
            self.offset_index.flush()
            self.time_index.flush()
        self.txn_index.flush()

    def update_config(self, config: LogConfig) -> None:
        """The topic's new config: index intervals and roll limits of future appends follow it."""
        self.config = config

    def close(self) -> None:
        if self.active and self._indexes_ready and self._max_ts is not None and self._max_ts >= 0:
            self.time_index.maybe_append(self._max_ts, self._offset_of_max_ts, final=True)
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.close()

    def delete(self) -> None:
        self.log.delete()
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    def unlink(self) -> None:
        """Remove the files but keep descriptors open (readers may still hold a FileSlice);
        `release` closes them later."""
        for path in (self.log.path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            try:
                path.unlink()
            except FileNotFoundError:
                pass

    def release(self) -> None:
        self.offset_index.release()
        self.time_index.release()
        self.txn_index.close()
        self.log.close()

    def change_suffix(self, old: str, new: str) -> None:
        """Rename every file from `...<old>` to `...<new>` (compaction's swap)."""
        for f in (self.log, self.offset_index, self.time_index, self.txn_index):
            name = str(f.path)
            base = name[: len(name) - len(old)] if old else name
            f.rename(Path(base + new))
