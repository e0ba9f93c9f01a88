"""Sparse, fixed-width, memory-mapped segment indexes: `OffsetIndex` (.index) and `TimeIndex` (.timeindex).

Both map a key to a position in the log *approximately*: entries are written at most every
`index.interval.bytes` of log data, so a lookup returns the largest entry whose key is <= the
target (or the segment's start when there is none) and the caller scans batch headers forward
from there. Keys only increase.

Life cycle: the active segment's index file is preallocated to `segment.index.bytes` (rounded
down to whole entries) and mapped; entries are written through the mapping. When the segment is
rolled or closed the file is trimmed to its entries. Closed segments' indexes are opened lazily
(the first lookup maps them), so opening a log with many segments reads no index.

Crash behaviour: index files carry no checksum. After an unclean shutdown the indexes of every
segment past the recovery point are rebuilt from the log; an index that fails `sanity_check()` or
is missing is rebuilt from its segment's log (see `segment.LogSegment`). The number of entries of a
file opened from disk is its size / entry size, which is why files are trimmed on close.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import Any

from .errors import CorruptIndexError


class AbstractIndex:
    """A fixed-width entry file mapped in memory; subclasses define the entry and its key."""

    ENTRY: struct.Struct
    ENTRY_SIZE: int

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._fd: int | None = None
        # the mapping (None while closed or empty); typed Any so the hot lookups (`_key`, `entry`),
        # only ever called with entries mapped, pay no None check
        self._mm: Any = None
        self._entries = 0
        self._max_entries = 0
        self._prealloc = False
        self._reserved = 0

    # -- opening, resizing ----------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def open(self, preallocate: bool) -> None:
        """Map the file; `preallocate` for the active segment (room for appends)."""
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size % self.ENTRY_SIZE:
                raise CorruptIndexError(f"{self.path}: size {size} is not a multiple of {self.ENTRY_SIZE}")
            self._fd = fd
            self._entries = size // self.ENTRY_SIZE
            self._map(preallocate)
        except BaseException:
            self._fd = None
            os.close(fd)
            raise

    def _map(self, preallocate: bool) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        used = self._entries * self.ENTRY_SIZE
        if preallocate:
            length = max(self.max_index_size // self.ENTRY_SIZE * self.ENTRY_SIZE, used, self.ENTRY_SIZE)
        else:
            length = used
        assert self._fd is not None
        os.ftruncate(self._fd, length)
        self._reserved = used  # bytes below this are backed by disk blocks (see _reserve)
        self._prealloc = preallocate
        self._max_entries = length // self.ENTRY_SIZE
        self._mm = mmap.mmap(self._fd, length) if length else None

    def make_active(self) -> None:
        """Preallocate for appends (the segment became the active one)."""
        if self._fd is None:
            self.open(preallocate=True)
        elif not self._prealloc:
            self._map(True)

    def trim(self) -> None:
        """Shrink the file to its entries (on roll and close)."""
        if self._fd is not None and self._prealloc:
            self._map(False)

    def reset(self) -> None:
        """Drop every entry (before a rebuild); the file is zero-filled again, so a rebuilt
        index is byte for byte what appends would have written."""
        if self._fd is None:
            if self.path.exists():
                self.path.unlink()
            self.open(preallocate=True)
        self._entries = 0
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        self._map(True)

    def flush(self) -> None:
        if self._mm is not None:
            self._mm.flush()
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is None:
            return
        self.trim()
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        os.close(self._fd)
        self._fd = None

    def release(self) -> None:
        """Close the mapping and descriptor without touching the file (it may be gone)."""
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def _reserve(self, end: int) -> bool:
        """Back the mapping with written file pages up to byte `end` before storing there.

        The preallocated tail of an active index is a hole. Touching a page of a hole through
        the mapping (a) raises SIGBUS and kills the process when the disk is full, and (b) costs
        a page fault that allocates the block inside the fault: measured at 1-3 ms a page on
        ext4 in a VM, which made the first minutes after a start (every partition's indexes
        growing into new pages at once) several times slower than the rest. So the next page is
        written with zeros through pwrite first (the ordinary write path: the block is reserved
        or allocated there and the page enters the page cache, so the store through the mapping
        is a minor fault), from `_reserved`, below which every byte is already written, so no
        entry is overwritten; on failure (ENOSPC) the caller skips the entry, which a sparse
        index can always afford (lookups just scan a little further)."""
        if end <= self._reserved:
            return True
        start = self._reserved
        page_end = start - start % mmap.PAGESIZE + mmap.PAGESIZE
        upto = min(max(end, page_end), len(self._mm)) if self._mm is not None else end
        try:
            assert self._fd is not None
            if os.pwrite(self._fd, bytes(upto - start), start) != upto - start:
                return False
        except OSError:
            return False
        self._reserved = upto
        return True

    # -- entries ---------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def truncate_entries(self, n: int) -> None:
        """Keep the first `n` entries; the slots of the others are zeroed (as never written)."""
        n = min(self._entries, max(0, n))
        if n < self._entries and self._mm is not None:
            self._mm[n * self.ENTRY_SIZE : self._entries * self.ENTRY_SIZE] = bytes(
                (self._entries - n) * self.ENTRY_SIZE
            )
        self._entries = n

    def _key(self, slot: int) -> int:
        raise NotImplementedError

    def _floor_slot(self, target: int) -> int:
        """Largest slot whose key <= target, or -1."""
        n = self._entries
        if n == 0 or self._key(0) > target:
            return -1
        lo, hi = 0, n - 1
        key = self._key
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if key(mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _ceil_slot(self, target: int) -> int:
        """Smallest slot whose key >= target, or -1."""
        n = self._entries
        if n == 0 or self._key(n - 1) < target:
            return -1
        lo, hi = 0, n - 1
        key = self._key
        while lo < hi:
            mid = (lo + hi) >> 1
            if key(mid) >= target:
                hi = mid
            else:
                lo = mid + 1
        return lo


class OffsetIndex(AbstractIndex):
    """`<base>.index`: 8-byte entries (relative offset int32, position int32), big-endian.

    An entry (r, p) says: the batch whose *last* offset is base + r starts at byte p of the log.
    Contract: `lookup(t)` returns (offset, position) of the largest entry with offset <= t, or
    (base_offset, 0). Invariants: relative offsets and positions strictly increase; an entry is
    written only when more than index.interval.bytes were appended since the previous one.
    """

    ENTRY = struct.Struct(">ii")
    ENTRY_SIZE = 8
    _REL = struct.Struct(">i")

    def _key(self, slot: int) -> int:
        value: int = self._REL.unpack_from(self._mm, slot * 8)[0]
        return value

    def entry(self, slot: int) -> tuple[int, int]:
        rel, pos = self.ENTRY.unpack_from(self._mm, slot * 8)
        return self.base_offset + rel, pos

    def lookup(self, target_offset: int) -> tuple[int, int]:
        slot = self._floor_slot(target_offset - self.base_offset)
        if slot < 0:
            return self.base_offset, 0
        return self.entry(slot)

    def last_entry(self) -> tuple[int, int]:
        return self.entry(self._entries - 1) if self._entries else (self.base_offset, 0)

    def append(self, offset: int, position: int) -> None:
        if self._entries >= self._max_entries:
            raise CorruptIndexError(f"{self.path} is full")
        rel = offset - self.base_offset
        if not self._reserve((self._entries + 1) * 8):
            return  # disk full: skip this sparse entry rather than fault on the mapping
        self.ENTRY.pack_into(self._mm, self._entries * 8, rel, position)
        self._entries += 1

    def truncate_to(self, offset: int) -> None:
        """Remove entries for offsets >= `offset`."""
        slot = self._ceil_slot(offset - self.base_offset)
        if slot >= 0:
            self.truncate_entries(slot)

    def sanity_check(self, log_size: int) -> None:
        if not self._entries:
            return
        first_rel, first_pos = self.ENTRY.unpack_from(self._mm, 0)
        last_rel, last_pos = self.ENTRY.unpack_from(self._mm, (self._entries - 1) * 8)
        strict = self._entries > 1
        if first_rel < 0 or first_pos < 0 or (strict and (last_rel <= first_rel or last_pos <= first_pos)):
            raise CorruptIndexError(f"{self.path}: entries are not increasing")
        if last_pos >= log_size:
            raise CorruptIndexError(f"{self.path}: position {last_pos} beyond log size {log_size}")


class TimeIndex(AbstractIndex):
    """`<base>.timeindex`: 12-byte entries (timestamp int64, relative offset int32), big-endian.

    An entry (t, r) says: the largest timestamp of the records up to the batch whose last offset
    is base + r is t, and no earlier batch reached t. Contract: `lookup(T)` returns the largest
    entry with timestamp <= T, or (-1, base_offset). An entry is appended only when the largest
    timestamp so far grows (so timestamps and offsets both increase), at index intervals, plus a
    final entry (the segment's largest timestamp) when the segment is rolled or closed: the last
    entry of a closed segment is its largest timestamp, used by retention. One slot is kept free
    for that final entry.
    """

    ENTRY = struct.Struct(">qi")
    ENTRY_SIZE = 12
    _TS = struct.Struct(">q")

    def _key(self, slot: int) -> int:
        value: int = self._TS.unpack_from(self._mm, slot * 12)[0]
        return value

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries - 1

    def entry(self, slot: int) -> tuple[int, int]:
        ts, rel = self.ENTRY.unpack_from(self._mm, slot * 12)
        return ts, self.base_offset + rel

    def lookup(self, timestamp: int) -> tuple[int, int]:
        slot = self._floor_slot(timestamp)
        if slot < 0:
            return -1, self.base_offset
        return self.entry(slot)

    def last_entry(self) -> tuple[int, int]:
        return self.entry(self._entries - 1) if self._entries else (-1, self.base_offset)

    def maybe_append(self, timestamp: int, offset: int, final: bool = False) -> None:
        if self._entries:
            last_ts, last_off = self.entry(self._entries - 1)
            if timestamp <= last_ts or offset < last_off:
                return
        elif timestamp < 0:
            return
        if self._entries >= self._max_entries - (0 if final else 1):
            return
        if not self._reserve((self._entries + 1) * 12):
            return  # disk full: skip this sparse entry rather than fault on the mapping
        self.ENTRY.pack_into(self._mm, self._entries * 12, timestamp, offset - self.base_offset)
        self._entries += 1

    def truncate_to(self, offset: int) -> None:
        """Remove entries for offsets >= `offset`."""
        n = self._entries
        while n and self.entry(n - 1)[1] >= offset:
            n -= 1
        self.truncate_entries(n)

    def sanity_check(self, log_size: int) -> None:
        if not self._entries:
            return
        first_ts, first_off = self.entry(0)
        last_ts, last_off = self.entry(self._entries - 1)
        if first_off < self.base_offset or last_off < first_off or (self._entries > 1 and last_ts <= first_ts):
            raise CorruptIndexError(f"{self.path}: entries are not increasing")
        if log_size == 0:
            raise CorruptIndexError(f"{self.path}: entries for an empty log")
