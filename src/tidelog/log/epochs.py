"""`LeaderEpochCache`: which leader epoch wrote which offsets of a replicated partition (KIP-101,
KIP-279), kept in `<partition dir>/leader-epoch-checkpoint`.

File format (Kafka's): a version line `0`, a count line, then one `<epoch> <start offset>` line per
entry, epochs and start offsets both strictly increasing. An entry (e, s) says: the first batch
written under epoch e has base offset s; epoch e's records end where the next entry starts (the
last epoch's end is the log end offset).

Contract:
- `assign(epoch, start)`: a leader assigns its new epoch at its log end offset when it takes over;
  a follower assigns the `partitionLeaderEpoch` of each appended batch that differs from the
  latest one. Entries that contradict it go first (as Kafka's `maybeTruncateNonMonotonicEntries`):
  those of a newer epoch, and those starting at or beyond `start`. Such entries hold no record
  below `start` - a broker that led an epoch without writing in it, then follows a leader that
  has older records at those offsets - and kept, they would answer OffsetForLeaderEpoch as if
  those offsets were another epoch's: the follower would truncate committed records below its
  high watermark (simulation seed 5664 of issue 26). An entry of the same epoch starting at or
  before `start` already covers it.
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
        replace_file(
            self.path, f"0\n{len(self._epochs)}\n" + "".join(f"{e} {s}\n" for e, s in zip(self._epochs, self._starts))
        )

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
        """True when the cache changed (and was written)."""
        if epoch < 0 or (self._epochs and self._epochs[-1] == epoch and self._starts[-1] <= start):
            return False
        changed = False
        while self._epochs and (self._epochs[-1] > epoch or self._starts[-1] >= start):
            self._epochs.pop()
            self._starts.pop()
            changed = True
        if not self._epochs or self._epochs[-1] != epoch:
            self._epochs.append(epoch)
            self._starts.append(start)
            changed = True
        if changed:
            self._write()
        return changed

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
