"""`<base>.txnindex`: the aborted transactions whose markers landed in a segment (Kafka's format).

Each entry is 34 bytes, big-endian::

    version          int16   0
    producerId       int64
    firstOffset      int64   first offset of the aborted transaction
    lastOffset       int64   offset of its ABORT marker
    lastStableOffset int64   LSO right after the marker was written

Append-only; not preallocated; entries are in lastOffset order. The transactions work appends
entries (`append`) when it writes an ABORT marker; Fetch in read_committed asks
`collect_aborted(fetch_offset, upper_bound)` for the transactions overlapping the fetched range.
Lookup contract: every entry with lastOffset >= fetch_offset and firstOffset < upper_bound;
`complete` is True once an entry's lastStableOffset >= upper_bound (later segments cannot add
more). Crash behaviour: entries past a truncation point are dropped with `truncate_to`; a file
whose size is not a multiple of 34 is cut to whole entries (a torn last append) by
`sanity_check`; the first entry that cannot be right (unknown version, negative producer id,
offsets out of order or outside the segment, LSO not past the marker) and all after it are cut
off with a warning (a garbled tail). The file is read once, lazily, and kept in memory (it is small).
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("tidelog.log")

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = 34
VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] | None = None
        self._fd: int | None = None

    def _load(self) -> list[AbortedTxn]:
        if self._entries is None:
            entries: list[AbortedTxn] = []
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = b""
            prev_last = self.base_offset - 1
            for i in range(len(data) // ENTRY_SIZE):
                version, pid, first, last, lso = ENTRY.unpack_from(data, i * ENTRY_SIZE)
                if version != VERSION or pid < 0 or not 0 <= first <= last < lso or last <= prev_last:
                    # A torn or garbled tail: keep the entries before it (power-loss damage).
                    logger.warning(
                        "%s: entry %d is damaged (version %d, producer %d, offsets %d-%d, lso %d); "
                        "truncating the index there",
                        self.path,
                        i,
                        version,
                        pid,
                        first,
                        last,
                        lso,
                    )
                    self._cut(i * ENTRY_SIZE)
                    break
                prev_last = last
                entries.append(AbortedTxn(pid, first, last, lso))
            self._entries = entries
        return self._entries

    def _cut(self, size: int) -> None:
        self.close()
        with open(self.path, "r+b") as f:
            f.truncate(size)

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._load())

    def append(self, txn: AbortedTxn) -> None:
        entries = self._load()
        if entries and txn.last_offset < entries[-1].last_offset:
            raise ValueError(f"aborted transaction last offset {txn.last_offset} is below {entries[-1].last_offset}")
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(
            self._fd, ENTRY.pack(VERSION, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)
        )
        entries.append(txn)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        out = []
        for t in self._load():
            if t.last_offset >= fetch_offset and t.first_offset < upper_bound:
                out.append(t)
            if t.last_stable_offset >= upper_bound:
                return out, True
        return out, False

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after `offset`."""
        entries = self._load()
        keep = [t for t in entries if t.last_offset < offset]
        if len(keep) != len(entries):
            self._rewrite(keep)

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(
            b"".join(
                ENTRY.pack(VERSION, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in entries
            )
        )
        os.replace(tmp, self.path)
        self._entries = entries

    def sanity_check(self) -> None:
        """Cut a torn trailing entry; `_load` cuts the file at its first impossible entry, with a warning."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size % ENTRY_SIZE:
            with open(self.path, "r+b") as f:
                f.truncate(size - size % ENTRY_SIZE)
            self._entries = None
        self._load()

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        self._entries = []
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path
