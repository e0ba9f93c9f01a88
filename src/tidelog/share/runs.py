"""The storage under a share partition's in-flight window (`partition.SharePartition`): a sorted list
of runs, each a range of offsets sharing one state, delivery count, member, lock deadline and
in-flight batch, with the counts kept as runs change.

`RunWindow` knows nothing of Kafka's rules; the partition decides what each offset becomes and
calls `transform` / `overwrite` / `replace`. Runs never overlap; offsets between runs are holes
(offsets absent from the log). Neighbouring runs with equal fields are merged on every change, so
the list stays as short as the state allows. Costs: finding a run is O(log runs), a change is a
list splice of the runs it touches.

Counts (offsets, not runs): `n_available` (gaps of restored state included), `n_acquired`,
`n_terminal` (ACKNOWLEDGED or ARCHIVED), and `owners` (member -> offsets it holds, members holding
none absent). `avail_hint`: no AVAILABLE offset lies below it (lowered when one appears; the
partition raises it as it scans).

Undo: while `undo` is a list (an atomic acknowledgement), every splice is logged there, and
`restore` replays the log backwards to put the runs and counts back as they were.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from operator import attrgetter
from typing import NamedTuple

from .partition_types import RecordState

__all__ = ["ACKNOWLEDGED", "ACQUIRED", "ARCHIVED", "AVAILABLE", "Run", "RunWindow", "terminal"]

AVAILABLE = RecordState.AVAILABLE
ACQUIRED = RecordState.ACQUIRED
ACKNOWLEDGED = RecordState.ACKNOWLEDGED
ARCHIVED = RecordState.ARCHIVED


class Run(NamedTuple):
    first: int
    last: int
    state: RecordState
    dc: int  # delivery count
    owner: str  # "" unless ACQUIRED
    deadline: int  # -1 unless ACQUIRED
    # the in-flight batch (Kafka's InFlightBatch) this run belongs to: acquisition works on whole
    # batches. (-1, -1): a gap of restored state, never fetched.
    bfirst: int
    blast: int


_first_of: Callable[[Run], int] = attrgetter("first")


def _mergeable(a: Run, b: Run) -> bool:
    return a.last + 1 == b.first and a[2:] == b[2:]


def terminal(state: RecordState) -> bool:
    """ACKNOWLEDGED or ARCHIVED: the offset's delivery is complete."""
    return state is ACKNOWLEDGED or state is ARCHIVED


class RunWindow:
    """The runs of one share partition's window and their counts (module docstring)."""

    __slots__ = ("runs", "n_available", "n_acquired", "n_terminal", "owners", "avail_hint", "undo")

    def __init__(self, start_offset: int) -> None:
        self.runs: list[Run] = []
        self.n_available = 0
        self.n_acquired = 0
        self.n_terminal = 0
        self.owners: dict[str, int] = {}
        self.avail_hint = start_offset
        self.undo: list[tuple[int, int, list[Run]]] | None = None

    def index_at_or_after(self, offset: int) -> int:
        """The index of the run holding `offset`, else of the first run after it."""
        runs = self.runs
        k = bisect.bisect_right(runs, offset, key=_first_of) - 1
        if k >= 0 and runs[k].last >= offset:
            return k
        return k + 1

    def replace(self, i: int, j: int, new: list[Run]) -> None:
        """Replace runs[i:j] by `new` (which fits between runs[i - 1] and runs[j]), merging equal
        neighbours; keeps the counts, and the undo log when one is kept."""
        runs = self.runs
        for r in runs[i:j]:
            self._count(r, -1)
        for r in new:
            self._count(r, +1)
        lo = i - 1 if i > 0 else i
        hi = j + 1 if j < len(runs) else j
        merged: list[Run] = []
        for r in (*runs[lo:i], *new, *runs[j:hi]):
            if merged and _mergeable(merged[-1], r):
                merged[-1] = merged[-1]._replace(last=r.last)
            else:
                merged.append(r)
        if self.undo is not None:
            self.undo.append((lo, len(merged), runs[lo:hi]))
        runs[lo:hi] = merged

    def restore(self, pos: int, n: int, old: list[Run]) -> None:
        """Undo one logged splice: the `n` runs at `pos` become `old` again."""
        runs = self.runs
        for r in runs[pos : pos + n]:
            self._count(r, -1)
        for r in old:
            self._count(r, +1)
        runs[pos : pos + n] = old

    def transform(self, first: int, last: int, fn: Callable[[Run], Run]) -> bool:
        """Apply `fn` to the runs of [first, last], cut at its ends (holes stay holes); True when
        something changed."""
        runs = self.runs
        i = self.index_at_or_after(first)
        j = bisect.bisect_right(runs, last, key=_first_of)
        if i >= j:
            return False
        new: list[Run] = []
        changed = False
        for r in runs[i:j]:
            head = tail = None
            if r.first < first:
                head, r = r._replace(last=first - 1), r._replace(first=first)
            if r.last > last:
                r, tail = r._replace(last=last), r._replace(first=last + 1)
            nr = fn(r)
            changed = changed or nr != r
            if head is not None:
                new.append(head)
            new.append(nr)
            if tail is not None:
                new.append(tail)
        if changed:
            self.replace(i, j, new)
        return changed

    def overwrite(self, first: int, last: int, new: list[Run]) -> None:
        """Make `new` the runs of [first, last], keeping what lies outside."""
        runs = self.runs
        i = self.index_at_or_after(first)
        j = bisect.bisect_right(runs, last, key=_first_of)
        out: list[Run] = []
        if i < j and runs[i].first < first:
            out.append(runs[i]._replace(last=first - 1))
        out.extend(new)
        if i < j and runs[j - 1].last > last:
            out.append(runs[j - 1]._replace(first=last + 1))
        self.replace(i, j, out)

    def _count(self, r: Run, sign: int) -> None:
        n = (r.last - r.first + 1) * sign
        if r.state is AVAILABLE:
            self.n_available += n
            if sign > 0 and r.first < self.avail_hint:
                self.avail_hint = r.first
        elif r.state is ACQUIRED:
            self.n_acquired += n
            left = self.owners.get(r.owner, 0) + n
            if left:
                self.owners[r.owner] = left
            else:
                del self.owners[r.owner]
        else:
            self.n_terminal += n
