"""`<base>.log`: a segment's record batches, back to back, exactly as received (offsets assigned).

File format: v2 record batches (see `records`), nothing else: no file header, no padding. The
byte size of the file is the end of the last batch.

Contract: `append` writes a whole record set with one positioned write at the end of the file
and returns its position; a failed write is cut back off, so the file only ever grows by whole
record sets. `headers(start)` walks batch headers without reading records (windowed preads).
Crash behaviour: the tail may hold a torn batch (a write that reached the disk only in part);
`scan_valid(start)` checks length, magic, offset order and CRC32C of every batch from `start` and
stops at the first bad one, so recovery can `truncate` there.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crc32c import crc32c

from .errors import KAFKA_STORAGE_ERROR, LogError
from .records import (
    ATTRIBUTES_OFFSET,
    H_BASE_OFFSET,
    H_CRC,
    H_LAST_OFFSET_DELTA,
    H_LENGTH,
    H_MAGIC,
    HEADER,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
)

logger = logging.getLogger("tidelog.log")
_MIN_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
HEADER_WINDOW = 64 * 1024
SCAN_WINDOW = 4 * 1024 * 1024


class LogFile:
    def __init__(self, path: Path, size: int | None = None) -> None:
        self.path = path
        self._fd: int | None = None
        self.size = path.stat().st_size if size is None else size

    @property
    def fd(self) -> int:
        """The open file descriptor (opened on first use); valid until close/delete."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def append(self, data: bytes | bytearray | memoryview) -> int:
        pos = self.size
        mv = memoryview(data)
        n = len(mv)
        fd = self.fd
        done = 0
        try:
            while done < n:
                done += os.pwrite(fd, mv[done:] if done else mv, pos + done)
        except OSError as e:
            try:
                os.ftruncate(fd, pos)
            except OSError:
                pass
            logger.error("write of %d bytes to %s failed (%s); cut back to %d bytes", n, self.path, e, pos)
            raise LogError(KAFKA_STORAGE_ERROR, f"write to {self.path} failed: {e}") from None
        self.size = pos + n
        return pos

    def pread(self, pos: int, n: int) -> bytes:
        return os.pread(self.fd, n, pos)

    def headers(
        self, start: int, end: int | None = None, window: int = HEADER_WINDOW
    ) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """(position, HEADER fields) of each whole batch from `start` (a batch boundary)."""
        end = self.size if end is None else end
        fd = self.fd
        pos, buf, bstart = start, b"", start
        unpack = HEADER.unpack_from
        while pos + RECORD_BATCH_OVERHEAD <= end:
            off = pos - bstart
            if off + RECORD_BATCH_OVERHEAD > len(buf):
                buf = os.pread(fd, min(window, end - pos), pos)
                bstart, off = pos, 0
                if len(buf) < RECORD_BATCH_OVERHEAD:
                    return
            h = unpack(buf, off)
            length = h[H_LENGTH]
            if length < _MIN_LENGTH or pos + LOG_OVERHEAD + length > end:
                return
            yield pos, h
            pos += LOG_OVERHEAD + length

    def scan_valid(self, start: int, next_offset: int) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """Like `headers`, but checks every batch (length, magic, offsets, CRC32C) and stops at
        the first bad one. After the generator is exhausted `valid_end` is the end of the last
        good batch."""
        end = self.size
        fd = self.fd
        pos, buf, bstart = start, b"", start
        self.valid_end = start
        while pos < end:
            off = pos - bstart
            if off + RECORD_BATCH_OVERHEAD > len(buf):
                buf = os.pread(fd, min(SCAN_WINDOW, end - pos), pos)
                bstart, off = pos, 0
                if len(buf) < RECORD_BATCH_OVERHEAD:
                    return
            h = HEADER.unpack_from(buf, off)
            length = h[H_LENGTH]
            size = LOG_OVERHEAD + length
            if (
                length < _MIN_LENGTH
                or h[H_MAGIC] != MAGIC_V2
                or pos + size > end
                or h[H_BASE_OFFSET] < next_offset
                or h[H_LAST_OFFSET_DELTA] < 0
            ):
                return
            if off + size > len(buf):
                buf = os.pread(fd, max(SCAN_WINDOW, size), pos)
                bstart, off = pos, 0
                if len(buf) < size:
                    return
            if crc32c(memoryview(buf)[off + ATTRIBUTES_OFFSET : off + size]) != h[H_CRC]:
                return
            yield pos, h
            next_offset = h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] + 1
            pos += size
            self.valid_end = pos

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fd, size)
        self.size = size

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def mtime_ms(self) -> int:
        try:
            return int(self.path.stat().st_mtime * 1000)
        except FileNotFoundError:
            return -1

    def close(self) -> None:
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
