"""`LeaderEpochCache`: which leader epoch wrote which offsets of a replicated partition (KIP-101,
KIP-279), kept in `<partition dir>/leader-epoch-checkpoint`.

File format (Kafka's): a version line `0`, a count line, then one `<epoch> <start offset>` line per
entry, epochs and start offsets both strictly increasing. An entry (e, s) says: the first batch
written under epoch e has base offset s; epoch e's records end where the next entry starts (the
last epoch's end is the log end offset).

Contract:
- `assign(epoch, start)`: a leader assigns its new epoch at its log end offset when it takes over;
  a follower assigns the `partitionLeaderEpoch` of each appended batch newer than the latest one.
  Older or equal epochs are ignored; an entry with a start offset at or beyond `start` is replaced.
- `end_offset_for(requested, log_end)` answers OffsetForLeaderEpoch: (the largest epoch <=
  requested, the start offset of the first epoch > requested), or (requested, log_end) when
  requested is the latest epoch, or (-1, -1) when no epoch <= requested is known. Cost:
  a binary search.
- `truncate_from_end(offset)` (log truncated to `offset`): entries starting at or after it go.
  `truncate_from_start(offset)` (log start moved): the entries wholly below it go, the one holding
  it starts there. `clear()` (log emptied).

Crash behaviour: every change rewrites the file (temporary file, fsync, rename), so it is either
the old or the new version; a file that does not parse is ignored with a warning and the cache
starts empty (the broker then truncates to its high watermark before following, which is safe).
"""

from __future__ import annotations

import bisect
import logging
from pathlib import Path

from .atomic import replace_file

log = logging.getLogger("tidelog.log")

FILE = "leader-epoch-checkpoint"
UNDEFINED = -1


class LeaderEpochCache:
    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE
        self._epochs: list[int] = []
        self._starts: list[int] = []
        self._load()

    def _load(self) -> None:
        try:
            raw = self.path.read_text("ascii")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as e:
            log.warning("ignoring unreadable %s: %s", self.path, e)
            return
        try:
            lines = raw.split("\n")
            if not raw.endswith("\n") or lines[0] != "0":
                raise ValueError("bad header or torn file")
            count = int(lines[1])
            body = lines[2:-1]
            if len(body) != count:
                raise ValueError(f"{len(body)} entries, {count} announced")
            epochs, starts = [], []
            for line in body:
                ep, so = line.split(" ")
                epochs.append(int(ep))
                starts.append(int(so))
            for i in range(1, count):
                if epochs[i] <= epochs[i - 1] or starts[i] < starts[i - 1]:
                    raise ValueError("entries are not increasing")
            self._epochs, self._starts = epochs, starts
        except (ValueError, IndexError) as e:
            log.warning("ignoring malformed %s: %s", self.path, e)

    def _write(self) -> None:
        replace_file(self.path, "0\n%d\n" % len(self._epochs)
                     + "".join(f"{e} {s}\n" for e, s in zip(self._epochs, self._starts)))

    # -- queries --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._epochs)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED

    def end_offset_for(self, requested: int, log_end: int) -> tuple[int, int]:
        if requested < 0 or not self._epochs:
            return UNDEFINED, UNDEFINED
        if requested == self._epochs[-1]:
            return requested, log_end
        hi = bisect.bisect_right(self._epochs, requested)  # first epoch > requested
        if hi == 0:
            return UNDEFINED, UNDEFINED  # all known epochs are newer: nothing in common
        if hi == len(self._epochs):
            return self._epochs[-1], log_end  # requested is newer than ours
        return self._epochs[hi - 1], self._starts[hi]

    # -- changes --------------------------------------------------------------------------------

    def assign(self, epoch: int, start: int) -> bool:
        if epoch < 0 or (self._epochs and epoch <= self._epochs[-1]):
            return False
        while self._starts and self._starts[-1] >= start:
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start)
        self._write()
        return True

    def truncate_from_end(self, offset: int) -> None:
        n = bisect.bisect_left(self._starts, offset)
        if n < len(self._starts):
            del self._epochs[n:], self._starts[n:]
            self._write()

    def truncate_from_start(self, offset: int) -> None:
        i = bisect.bisect_right(self._starts, offset) - 1  # the entry holding offset
        if i > 0 or (i == 0 and self._starts[0] < offset):
            del self._epochs[:i], self._starts[:i]
            self._starts[0] = offset
            self._write()

    def clear(self) -> None:
        if self._epochs:
            self._epochs, self._starts = [], []
            self._write()
