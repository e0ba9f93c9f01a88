"""The state of one share partition (KIP-932): which records of one (share group, topic, partition)
are available, acquired (by which member, until when), acknowledged or archived, as Apache Kafka
4.3.1's `SharePartition`. Pure and sans-IO: the caller reads the log, passes the batches it read and
the current time, persists what `take_changes` / `state_batches` give, and runs the lock timer
(`next_deadline`, `expire`).

Offsets below the share-partition start offset (SPSO, `start_offset`) are done. Offsets from SPSO up
to the share-partition end offset (SPEO, `end_offset`, the next offset never fetched) are in flight,
each in one state; offsets >= SPEO were never fetched.

    state          event                                                  next state
    -------------  -----------------------------------------------------  ------------------------------
    (not fetched)  acquire (offset >= SPEO, or a gap of restored state)   ACQUIRED, delivery count 1
    AVAILABLE      acquire                                                ACQUIRED, delivery count + 1
    AVAILABLE      a fetch read from before it starts past it (compacted) ARCHIVED
    ACQUIRED       acknowledge ACCEPT by its member                       ACKNOWLEDGED
    ACQUIRED       acknowledge REJECT, or GAP (not in the log), by member ARCHIVED
    ACQUIRED       acknowledge RELEASE by its member                      AVAILABLE (ARCHIVED at the limit)
    ACQUIRED       acknowledge RENEW by its member                        ACQUIRED, lock renewed
    ACQUIRED       expire(now) past its lock deadline                     AVAILABLE (ARCHIVED at the limit)
    ACQUIRED       release_member(its member): session closed, left       AVAILABLE (ARCHIVED at the limit)
    ACQUIRED       acquired in a batch of an aborted transaction          ARCHIVED
    any            move_start past it (retention, OFFSET_OUT_OF_RANGE)    forgotten (below SPSO)
    ACKNOWLEDGED,  at the start of the window                             forgotten: SPSO moves past it
      ARCHIVED

"At the limit": the delivery count is >= `delivery_limit` (`share.delivery.count.limit`). A release
(acknowledgement, lock expiry, member leaving) never changes the delivery count; only an acquisition
increments it. An acknowledgement of an offset that is not ACQUIRED by that member is refused with
INVALID_RECORD_STATE and changes nothing of its batch; ACKNOWLEDGED and ARCHIVED are final.

Invariants (checked by tests/share/test_partition.py after every step):
- each in-flight offset is in exactly one state; an ACQUIRED offset has one member and a deadline,
  others have none: two members never hold the same offset, and only the holder may acknowledge;
- start_offset <= every in-flight offset < end_offset; the first in-flight offset, if any, is
  start_offset and is AVAILABLE or ACQUIRED (SPSO has moved past every ACKNOWLEDGED or ARCHIVED
  offset at the start of the window, and the state below it is dropped);
- no in-flight offsets: start_offset == end_offset;
- fetch_offset() is the first AVAILABLE offset, else end_offset;
- delivery_complete_count() (KIP-1226) is the number of ACKNOWLEDGED or ARCHIVED in-flight offsets.

Memory: the window is a sorted list of runs of offsets that share state, delivery count, member,
deadline and in-flight batch (the unit in which Kafka acquires, see below); acquire, acknowledge
and expire cost O(log runs + runs touched), with a list splice per change. A fetch acquires nothing
once `in_flight()` reaches `max_in_flight` (`group.share.partition.max.record.locks`) except
offsets already in flight, so the window stays within max_in_flight plus the rest of one log batch.

Acquisition, as Kafka 4.3.1 (`acquire`):
- At most min(max_records, max_in_flight - in_flight()) records; when that is <= 0, only offsets
  below end_offset (re-deliveries), at most end_offset - fetch offset of them.
- `max_records` is soft (Kafka's `batch_optimized` acquire mode): new records are acquired up to the
  last offset of the log batch holding the max_records-th one; an in-flight batch (the unit
  acquired together earlier, or one restored state batch) is acquired whole (its available offsets
  in the fetched range) once started; the limit is checked between in-flight batches. New records
  are cut into in-flight batches of about `batch_size` records on log batch boundaries.
  `record_limit=True` (Kafka's `record_limit` mode) makes max_records exact.
- Offsets near the delivery limit are delivered in ever smaller groups (Kafka's throttling): an
  in-flight batch holding an available offset with delivery count >= max(2, ceil(limit / 2)) is
  acquired only as the first thing of a fetch, and then only its first size >> (count - that + 1)
  (at least 1) offsets; an offset on its last delivery (count == limit - 1, limit > 2) is delivered
  alone.
- Available offsets between the fetch offset and the first batch the log returned no longer exist
  (compaction): they are archived.
- Offsets in the gaps of a restored state (never written) are acquired as new records.

Persistence. What a share coordinator stores (ShareSnapshot / ShareUpdate): SPSO, the delivery
complete count, and state batches (first, last, delivery state 0 available / 2 acknowledged /
4 archived, delivery count). `state_batches()` is the whole window, `take_changes()` the delta since
its last call: the offsets changed by acknowledgements, releases, expiry and archiving, plus SPSO and
the delivery complete count. Acquisitions are not changes (Kafka writes nothing when it acquires):
an acquired offset is written, when something else makes it part of a write, as AVAILABLE with its
current delivery count. Offsets never fetched (gaps of a restored state) are not written. Restored
from state batches, the window is: their states and delivery counts (AVAILABLE for what was
acquired), and the offsets between them, never written, acquirable as new records.

Crash behaviour: memory changes first; the caller writes and answers afterwards. If the broker
stops before a write, the written state is older: acknowledged records are delivered again
(at-least-once), acquired ones are available again with the delivery count written last. There is
no rollback: when a write fails, drop this object and restore from what is written.

Where tidelog differs from Kafka 4.3.1, and why:
- Kafka holds a change in an "ongoing transition" until the coordinator answers its write (records
  in transition cannot be acquired or acknowledged, SPSO stops before them) and rolls it back if the
  write fails. Here changes apply at once (sans-IO); see "Crash behaviour".
- SPSO moves as soon as the window's first offsets are done, after any call. Kafka moves it after a
  successful write (acknowledgement, release, lock expiry), not after move_start or archiving on
  fetch; its next write catches up.
- `acknowledge` answers each batch (per-batch atomic); Kafka answers one error per partition and
  rolls the whole partition's acknowledgement back on the first error: `atomic=True` does that.
- `move_start` forgets everything below the new start at once; Kafka keeps records still ACQUIRED
  there until their lock ends, and ignores acknowledgements of them (so does this class).
- `expire` runs when the caller calls it (Kafka's timer fires by itself): call it first at each
  request, so an acknowledgement after the deadline is refused as in Kafka.
- `state_batches` / `take_changes` write an ACQUIRED offset as AVAILABLE with its delivery count
  including the current delivery; Kafka never writes an acquisition, so after a crash it has the
  count of the delivery before.
- Restored state batches below the start offset are trimmed (Kafka fails the partition), and a gap
  that a fetch shows no longer exists is archived (Kafka leaves it out of its cache).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .partition_types import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    AckBatch,
    AckType,
    AcquiredRange,
    InFlightRange,
    RecordState,
    StateBatch,
    StateDelta,
)
from .runs import ACKNOWLEDGED as _ACKNOWLEDGED
from .runs import ACQUIRED as _ACQUIRED
from .runs import ARCHIVED as _ARCHIVED
from .runs import AVAILABLE as _AVAILABLE
from .runs import Run as _Run
from .runs import RunWindow, terminal

__all__ = ["SharePartition"]  # its values: partition_types

_PERSISTED_STATES = {0: _AVAILABLE, 1: _AVAILABLE, 2: _ACKNOWLEDGED, 4: _ARCHIVED}


@dataclass(slots=True)
class _Fetch:
    """One `acquire` call: what it may acquire, and what it has so far."""

    member_id: str
    batches: Sequence[tuple[int, int]]  # the log batches read: (first, last offset), ascending
    base: int  # the first log batch's first offset
    last: int  # the last offset it may acquire
    max_acquire: int  # records it may acquire (soft unless record_limit)
    batch_size: int
    record_limit: bool
    deadline: int  # the acquisition lock's, ms
    acquired: int = 0
    result: list[AcquiredRange] = field(default_factory=list)


class SharePartition:
    """The state machine of one share partition. `lock_ms`, `delivery_limit`, `max_in_flight` and
    `renew_enabled` are plain attributes (a group's dynamic configs may change them); each call uses
    their current values, as Kafka reads its group configs at each use."""

    def __init__(
        self,
        start_offset: int,
        *,
        lock_ms: int = 30_000,
        delivery_limit: int = 5,
        max_in_flight: int = 2000,
        state_batches: Iterable[StateBatch] = (),
        renew_enabled: bool = True,
    ) -> None:
        """A share partition starting at `start_offset` (SPSO) with the persisted in-flight state
        `state_batches` (ascending, not overlapping, ids 0 / 2 / 4; 1 is read as available). A batch
        below the start is trimmed. Raises ValueError for unordered or malformed batches."""
        if start_offset < 0:
            raise ValueError(f"start offset {start_offset} < 0")
        self.lock_ms = lock_ms
        self.delivery_limit = delivery_limit
        self.max_in_flight = max_in_flight
        self.renew_enabled = renew_enabled
        self._start = start_offset
        self._end = start_offset
        self._w = RunWindow(start_offset)  # the runs of the window, their counts, the undo log
        self._deadlines: list[tuple[int, int, int]] = []  # heap of (deadline, first, last) of acquisitions
        self._dirty: list[tuple[int, int]] = []
        runs: list[_Run] = []
        prev = start_offset - 1
        seen = -1
        for b in state_batches:
            first, last = b.first_offset, b.last_offset
            if last < first:
                raise ValueError(f"state batch {b}: last offset < first offset")
            if first <= seen:
                raise ValueError(f"state batch {b} overlaps the one before or is out of order")
            seen = last
            state = _PERSISTED_STATES.get(b.delivery_state)
            if state is None:
                raise ValueError(f"state batch {b}: unknown delivery state {b.delivery_state}")
            if last < start_offset:
                continue
            first = max(first, start_offset)
            if first > prev + 1:
                runs.append(_Run(prev + 1, first - 1, _AVAILABLE, 0, "", -1, -1, -1))
            runs.append(_Run(first, last, state, b.delivery_count, "", -1, b.first_offset, b.last_offset))
            prev = last
        if runs:
            self._w.replace(0, 0, runs)
            self._end = prev + 1
        self._advance()
        self._written: tuple[int, int] = (self._start, self._w.n_terminal)

    # ---- reading -----------------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        """SPSO: every offset below is done."""
        return self._start

    @property
    def end_offset(self) -> int:
        """SPEO: the next offset never fetched (Kafka's endOffset is the last fetched one, this + 1)."""
        return self._end

    def fetch_offset(self) -> int:
        """Where the next log read starts: the first AVAILABLE in-flight offset, else end_offset."""
        if self._w.n_available == 0:
            return self._end
        runs = self._w.runs
        for k in range(self._w.index_at_or_after(self._w.avail_hint), len(runs)):
            if runs[k].state is _AVAILABLE:
                self._w.avail_hint = runs[k].first
                return runs[k].first
        raise AssertionError("available offsets counted but none found")  # pragma: no cover

    def can_acquire(self) -> bool:
        """Whether a fetch may acquire anything (Kafka's canAcquireRecords, checked before reading
        the log): something below end_offset is available, or the window has room."""
        return self.fetch_offset() != self._end or self.in_flight() < self.max_in_flight

    def in_flight(self) -> int:
        """Offsets in the window (Kafka's in-flight record count): end_offset - start_offset."""
        return self._end - self._start

    def acquired_by(self, member_id: str) -> int:
        """How many offsets the member holds."""
        return self._w.owners.get(member_id, 0)

    def members(self) -> list[str]:
        """The members holding offsets."""
        return list(self._w.owners)

    def state_counts(self) -> dict[RecordState, int]:
        """In-flight offsets per state (gaps of restored state count as AVAILABLE)."""
        return {
            _AVAILABLE: self._w.n_available,
            _ACQUIRED: self._w.n_acquired,
            _ACKNOWLEDGED: sum(r.last - r.first + 1 for r in self._w.runs if r.state is _ACKNOWLEDGED),
            _ARCHIVED: sum(r.last - r.first + 1 for r in self._w.runs if r.state is _ARCHIVED),
        }

    def delivery_complete_count(self) -> int:
        """KIP-1226: offsets >= SPSO whose delivery is complete (acknowledged or archived)."""
        return self._w.n_terminal

    def next_deadline(self) -> int | None:
        """The earliest lock deadline of an ACQUIRED offset (ms), or None."""
        heap = self._deadlines
        while heap:
            d, first, last = heap[0]
            runs = self._w.runs
            for k in range(self._w.index_at_or_after(first), len(runs)):
                r = runs[k]
                if r.first > last:
                    break
                if r.state is _ACQUIRED and r.deadline == d:
                    return d
            heapq.heappop(heap)
        return None

    def ranges(self) -> list[InFlightRange]:
        """The in-flight window, run by run (holes: offsets absent from the log, skipped)."""
        return [InFlightRange(r.first, r.last, r.state, r.dc, r.owner, r.deadline, r.bfirst >= 0) for r in self._w.runs]

    def state_of(self, offset: int) -> InFlightRange | None:
        """The run holding `offset`, or None (done, absent from the log, or never fetched)."""
        k = self._w.index_at_or_after(offset)
        if k < len(self._w.runs) and self._w.runs[k].first <= offset:
            r = self._w.runs[k]
            return InFlightRange(r.first, r.last, r.state, r.dc, r.owner, r.deadline, r.bfirst >= 0)
        return None

    def state_batches(self) -> list[StateBatch]:
        """The whole in-flight state to persist (a ShareSnapshot's batches): ACQUIRED written as
        AVAILABLE with its delivery count, gaps never fetched left out, contiguous runs of the same
        written state and count merged."""
        out: list[StateBatch] = []
        for r in self._w.runs:
            self._emit(out, r, r.first, r.last)
        return out

    def take_changes(self) -> StateDelta | None:
        """What to write since the last call (a ShareUpdate): the state batches of the offsets >= SPSO
        changed by acknowledge, expire, release_member and archiving (acquisitions are not changes,
        as in Kafka), with SPSO and the delivery complete count; None when nothing changed. The
        caller writes it before answering the requests that made it."""
        out: list[StateBatch] = []
        if self._dirty:
            spans = sorted(self._dirty)
            self._dirty.clear()
            merged: list[list[int]] = []
            for a, z in spans:
                a = max(a, self._start)
                if a > z:
                    continue
                if merged and a <= merged[-1][1] + 1:
                    merged[-1][1] = max(merged[-1][1], z)
                else:
                    merged.append([a, z])
            runs = self._w.runs
            for a, z in merged:
                for k in range(self._w.index_at_or_after(a), len(runs)):
                    r = runs[k]
                    if r.first > z:
                        break
                    self._emit(out, r, max(r.first, a), min(r.last, z))
        now = (self._start, self._w.n_terminal)
        if not out and now == self._written:
            return None
        self._written = now
        return StateDelta(self._start, self._w.n_terminal, tuple(out))

    # ---- acquiring ---------------------------------------------------------------------------------
    def acquire(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int]],
        max_records: int,
        now_ms: int,
        *,
        fetch_offset: int | None = None,
        batch_size: int | None = None,
        record_limit: bool = False,
        aborted: Sequence[tuple[int, int]] = (),
    ) -> list[AcquiredRange]:
        """Acquire, for `member_id` until now_ms + lock_ms, records of the log batches just read
        (`batches`: (first offset, last offset) of each, ascending, the first at or before the fetch
        offset): their AVAILABLE in-flight offsets and their offsets never fetched, following Kafka's
        rules (module docstring): max_records is soft unless `record_limit`, max_in_flight bounds
        new records. `fetch_offset`: where the read started, when the state may have changed since
        (default: `fetch_offset()` now). `batch_size`: records per acquired batch (ShareFetch's
        BatchSize; default max_records). `aborted`: offset ranges of the read batches that belong to
        aborted transactions (read_committed): acquired offsets in them are archived and not
        returned. Returns the acquired ranges, ascending."""
        if not member_id:
            raise ValueError("a member id is required")
        prev_last = -1
        for first, last in batches:
            if last < first or first <= prev_last:
                raise ValueError(f"log batches out of order or malformed: {list(batches)}")
            prev_last = last
        if max_records <= 0 or not batches:
            return []
        if batch_size is None:
            batch_size = max_records
        if batch_size <= 0:
            raise ValueError(f"batch size {batch_size} <= 0")
        if fetch_offset is None:
            fetch_offset = self.fetch_offset()
        f = self._limits(member_id, batches, max_records, fetch_offset, batch_size, record_limit, now_ms + self.lock_ms)
        if f is None:
            return []
        if fetch_offset < f.base:  # the log no longer has what lay between: compacted away
            self._archive_available(fetch_offset, f.base - 1)
        self._acquire_range(f, max(f.base, self._start))
        result = f.result
        if aborted and result:
            result = self._drop_aborted(aborted, result)
        self._advance()
        return result

    def _limits(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int]],
        max_records: int,
        fetch_offset: int,
        batch_size: int,
        record_limit: bool,
        deadline: int,
    ) -> _Fetch | None:
        """Kafka's lastOffsetAndMaxRecordsToAcquire: how many records this fetch may acquire, up to
        which offset (the in-flight limit); None when nothing."""
        last_in_log = batches[-1][1]
        if last_in_log < self._start:
            return None
        max_acquire = min(max_records, self.max_in_flight - self.in_flight())
        last_to_acquire = last_in_log
        if max_acquire <= 0:  # the window is full: re-deliveries below end_offset only
            if fetch_offset >= self._end:
                return None
            max_acquire = min(max_records, self._end - fetch_offset)
            last_to_acquire = min(last_in_log, self._end - 1)
        return _Fetch(
            member_id, batches, batches[0][0], last_to_acquire, max_acquire, batch_size, record_limit, deadline
        )

    def _acquire_range(self, f: _Fetch, lo: int) -> None:
        """Acquire from [lo, f.last] in offset order: the in-flight batches meeting it (whole, the
        limit checked between them), and the offsets never fetched before, between and after them
        as new in-flight batches; stop at the limit, or after a throttled batch."""
        items = self._inflight_batches(lo, f.last)
        if not items:
            self._acquire_new(f, lo, f.last)
            return
        gap_start = lo
        for bfirst, blast, cover_first in items:
            if f.acquired >= f.max_acquire:
                return
            if gap_start < cover_first and self._has_unfetched(gap_start, cover_first - 1):
                self._acquire_new(f, gap_start, cover_first - 1)
                if f.acquired >= f.max_acquire:
                    return
            gap_start = max(gap_start, blast + 1)
            if self._acquire_cached(f, bfirst, blast):
                return  # throttled: nothing more in this fetch
        last_cached = items[-1][1]
        if f.acquired < f.max_acquire and last_cached < f.last:
            self._acquire_new(f, last_cached + 1, f.last)

    def _inflight_batches(self, lo: int, last: int) -> list[tuple[int, int, int]]:
        """The in-flight batches meeting [lo, last]: (first, last, first offset still in flight)."""
        items: list[tuple[int, int, int]] = []
        runs = self._w.runs
        k = self._w.index_at_or_after(lo)
        while k < len(runs) and runs[k].first <= last:
            r = runs[k]
            if r.bfirst >= 0 and not (items and items[-1][0] == r.bfirst and items[-1][1] == r.blast):
                items.append((r.bfirst, r.blast, r.first))
            k += 1
        return items

    def _has_unfetched(self, first: int, last: int) -> bool:
        runs = self._w.runs
        for k in range(self._w.index_at_or_after(first), len(runs)):
            r = runs[k]
            if r.first > last:
                return False
            if r.bfirst < 0:
                return True
        return False

    def _acquire_new(self, f: _Fetch, first: int, last: int) -> None:
        """Kafka's acquireNewBatchRecords: offsets never fetched in [first, last] (plus, past the
        records this fetch may still take, the rest of the log batch that holds the last one)
        become new in-flight batches, acquired with delivery count 1. (Kafka's move of `first` up
        to its end offset when its cache is empty is `lo` here: with no runs, start_offset ==
        end_offset.)"""
        if first > last:
            return
        member_id, batches, batch_size, deadline = f.member_id, f.batches, f.batch_size, f.deadline
        max_records = f.max_acquire - f.acquired
        acquire_last = last
        if max_records < acquire_last - first + 1:
            target = first + max_records - 1
            acquire_last = target
            k = bisect.bisect_right(batches, (target, 1 << 62)) - 1
            if k >= 0 and batches[k][0] <= target <= batches[k][1]:
                acquire_last = batches[k][1]
            # not past `last` (Kafka cuts there in a gap of restored state; past the fetched range's
            # end it cannot go; and before an in-flight batch it must not)
            acquire_last = min(acquire_last, last)
        new: list[_Run] = []
        if f.record_limit:
            if acquire_last - first + 1 > max_records:
                cut = first + max_records - 1
                new.append(_Run(first, cut, _ACQUIRED, 1, member_id, deadline, first, acquire_last))
                new.append(_Run(cut + 1, acquire_last, _AVAILABLE, 0, "", -1, first, acquire_last))
                count = max_records
            else:
                new.append(_Run(first, acquire_last, _ACQUIRED, 1, member_id, deadline, first, acquire_last))
                count = acquire_last - first + 1
        else:
            chunk_first = first
            if acquire_last - first + 1 > batch_size:
                for base, _ in batches:
                    if base > acquire_last:
                        break
                    if base - chunk_first >= batch_size:
                        new.append(
                            _Run(chunk_first, base - 1, _ACQUIRED, 1, member_id, deadline, chunk_first, base - 1)
                        )
                        chunk_first = base
            new.append(_Run(chunk_first, acquire_last, _ACQUIRED, 1, member_id, deadline, chunk_first, acquire_last))
            count = acquire_last - first + 1
        self._w.overwrite(first, acquire_last, new)
        self._end = max(self._end, acquire_last + 1)
        for r in new:
            if r.state is _ACQUIRED:
                f.result.append(AcquiredRange(r.first, r.last, 1))
                self._push_deadline(deadline, r.first, r.last)
        f.acquired += count

    def _acquire_cached(self, f: _Fetch, bfirst: int, blast: int) -> bool:
        """Kafka's acquisition of one in-flight batch [bfirst, blast] for the fetch `f`: its
        AVAILABLE offsets in the fetched range, with the delivery-limit throttling. True: the batch
        was throttled, nothing more may be acquired in this fetch."""
        member_id, deadline, acquired = f.member_id, f.deadline, f.acquired
        lo, hi = max(bfirst, f.base, self._start), min(blast, f.last)
        limit = self.delivery_limit
        throttle_at = max(2, -(-limit // 2))
        pieces: list[tuple[int, int, int]] = []  # the AVAILABLE runs of the batch in [lo, hi]
        runs = self._w.runs
        for k in range(self._w.index_at_or_after(lo), len(runs)):
            r = runs[k]
            if r.first > hi:
                break
            if r.state is _AVAILABLE and r.bfirst == bfirst and r.blast == blast:
                pieces.append((max(r.first, lo), min(r.last, hi), r.dc))
        if not pieces:
            return False
        throttle = max(c for _, _, c in pieces) >= throttle_at
        if throttle and acquired > 0:
            return True  # delivered alone, in a later fetch
        rl_left = f.max_acquire - acquired if f.record_limit else None
        size = blast - bfirst + 1
        cap: int | None = None  # the throttled group's size, once met
        cap_set = False
        n = 0
        plan: list[tuple[int, int, int]] = []
        for first, last, count in pieces:
            take = last - first + 1
            last_attempt = limit > 2 and count == limit - 1
            if last_attempt:
                if n > 0:
                    break
                take = 1
            if count >= throttle_at and not cap_set:
                cap_set = True
                group = max(1, size >> (count - throttle_at + 1))
                cap = group if n < group else None
            if cap is not None:
                take = min(take, cap - n)
            if rl_left is not None:
                take = min(take, rl_left - n)
            plan.append((first, first + take - 1, count))
            n += take
            if last_attempt or (rl_left is not None and n == rl_left) or (cap is not None and n == cap):
                break
        out: list[list[int]] = []
        for first, last, count in plan:
            self._transform(
                first,
                last,
                lambda r: r._replace(state=_ACQUIRED, dc=r.dc + 1, owner=member_id, deadline=deadline),
            )
            if out and out[-1][1] + 1 == first and out[-1][2] == count + 1:
                out[-1][1] = last
            else:
                out.append([first, last, count + 1])
        for first, last, count in out:
            f.result.append(AcquiredRange(first, last, count))
            self._push_deadline(deadline, first, last)
        f.acquired += n
        return throttle

    def _drop_aborted(self, aborted: Sequence[tuple[int, int]], result: list[AcquiredRange]) -> list[AcquiredRange]:
        """Kafka's read_committed filter: ACQUIRED offsets in batches of aborted transactions are
        archived, and left out of what the fetch returns."""
        for first, last in aborted:
            self._transform(
                first,
                last,
                lambda r: r._replace(state=_ARCHIVED, owner="", deadline=-1) if r.state is _ACQUIRED else r,
                dirty=True,
            )
        out: list[AcquiredRange] = []
        spans = sorted(aborted)
        for a in result:
            first = a.first_offset
            for s_first, s_last in spans:
                if s_last < first or s_first > a.last_offset:
                    continue
                if s_first > first:
                    out.append(AcquiredRange(first, s_first - 1, a.delivery_count))
                first = max(first, s_last + 1)
            if first <= a.last_offset:
                out.append(AcquiredRange(first, a.last_offset, a.delivery_count))
        return out

    # ---- acknowledging -----------------------------------------------------------------------------
    def acknowledge(
        self, member_id: str, batches: Sequence[AckBatch], now_ms: int, *, atomic: bool = False
    ) -> list[int]:
        """Apply acknowledgements of `member_id`; an error code per batch: 0, INVALID_RECORD_STATE
        (an offset of it in flight is not ACQUIRED by this member, no in-flight offset at or before
        its first, or RENEW while renew_enabled is false) or INVALID_REQUEST (malformed: first >
        last, no types, a type count other than 1 or the batch's length, an unknown type, a first
        offset below the previous batch's last; or its last offset not in flight). A failed batch
        changes nothing. Offsets below SPSO are ignored (done), as are holes (offsets absent from the
        log). `atomic=True` is Kafka's: on the first failure nothing of the whole call changes and
        every batch gets that error (Kafka answers one error per partition). Call expire(now_ms)
        first. RENEW extends the lock to now_ms + lock_ms."""
        codes: list[int] = []
        if atomic:
            self._w.undo = []
        dirty_mark = len(self._dirty)
        prev_last = -1
        try:
            for b in batches:
                err = self._acknowledge_one(member_id, b, prev_last, now_ms)
                prev_last = b.last_offset
                codes.append(err)
                if err and atomic:
                    break
        finally:
            undo, self._w.undo = self._w.undo, None
        if atomic and any(codes):
            assert undo is not None
            for pos, n, old in reversed(undo):
                self._w.restore(pos, n, old)
            del self._dirty[dirty_mark:]
            err = next(c for c in codes if c)
            return [err] * len(batches)
        self._advance()
        return codes

    def _acknowledge_one(self, member_id: str, b: AckBatch, prev_last: int, now_ms: int) -> int:
        first, last, types = b.first_offset, b.last_offset, b.ack_types
        if (
            first > last
            or not types
            or (len(types) > 1 and len(types) != last - first + 1)
            or any(t < 0 or t > 4 for t in types)
            or first < prev_last
        ):
            return INVALID_REQUEST
        if last < self._start:
            return 0
        if AckType.RENEW in types and not self.renew_enabled:
            return INVALID_RECORD_STATE
        lo = max(first, self._start)
        runs = self._w.runs
        if not runs or runs[0].first > lo:
            return INVALID_RECORD_STATE  # nothing in flight at or before its first offset
        k = self._w.index_at_or_after(last)
        if k == len(runs) or runs[k].first > last:
            return INVALID_REQUEST  # its last offset is not in flight
        for k in range(self._w.index_at_or_after(lo), len(runs)):
            r = runs[k]
            if r.first > last:
                break
            if r.state is not _ACQUIRED or r.owner != member_id:
                return INVALID_RECORD_STATE
        if len(types) == 1:
            self._apply_ack(lo, last, types[0], now_ms)
            return 0
        a = lo
        while a <= last:
            t = types[a - first]
            z = a
            while z < last and types[z + 1 - first] == t:
                z += 1
            self._apply_ack(a, z, t, now_ms)
            a = z + 1
        return 0

    def _apply_ack(self, first: int, last: int, ack: int, now_ms: int) -> None:
        if ack == AckType.RENEW:
            deadline = now_ms + self.lock_ms
            self._transform(first, last, lambda r: r._replace(deadline=deadline))
            self._push_deadline(deadline, first, last)
            return
        if ack == AckType.ACCEPT:
            self._transform(first, last, lambda r: r._replace(state=_ACKNOWLEDGED, owner="", deadline=-1), dirty=True)
        elif ack == AckType.RELEASE:
            self._transform(first, last, self._released, dirty=True)
        else:  # REJECT, GAP
            self._transform(first, last, lambda r: r._replace(state=_ARCHIVED, owner="", deadline=-1), dirty=True)

    def _released(self, r: _Run) -> _Run:
        state = _ARCHIVED if r.dc >= self.delivery_limit else _AVAILABLE
        return r._replace(state=state, owner="", deadline=-1)

    # ---- releasing ---------------------------------------------------------------------------------
    def expire(self, now_ms: int) -> int:
        """Release the offsets whose acquisition lock deadline is <= now_ms: AVAILABLE, or ARCHIVED
        at the delivery limit. Returns how many."""
        n = 0
        heap = self._deadlines
        while heap and heap[0][0] <= now_ms:
            _, first, last = heapq.heappop(heap)
            n += self._release(first, last, lambda r: r.deadline <= now_ms)
        if n:
            self._advance()
        return n

    def release_member(self, member_id: str, now_ms: int) -> int:
        """The member left or its share session ended: release the offsets it holds (AVAILABLE, or
        ARCHIVED at the delivery limit). Returns how many."""
        del now_ms  # no time rule applies: Kafka releases at once
        if not self._w.owners.get(member_id):
            return 0
        n = self._release(self._start, self._end - 1, lambda r: r.owner == member_id)
        self._advance()
        return n

    def _release(self, first: int, last: int, pick: Callable[[_Run], bool]) -> int:
        n = 0

        def release(r: _Run) -> _Run:
            nonlocal n
            if r.state is not _ACQUIRED or not pick(r):
                return r
            n += r.last - r.first + 1
            return self._released(r)

        self._transform(first, last, release, dirty=True)
        return n

    def move_start(self, offset: int) -> None:
        """The log start moved past SPSO (retention, OFFSET_OUT_OF_RANGE), or an admin moved the
        start forward: everything below `offset` is forgotten (Kafka archives it). An offset at or
        below SPSO changes nothing (Kafka's too); to start again at an earlier offset, make a new
        SharePartition."""
        if offset <= self._start:
            return
        runs = self._w.runs
        k = self._w.index_at_or_after(offset)
        if k < len(runs) and runs[k].first < offset:
            self._w.replace(0, k + 1, [runs[k]._replace(first=offset)])
        else:
            self._w.replace(0, k, [])
        self._start = offset
        self._end = max(self._end, offset)
        self._w.avail_hint = max(self._w.avail_hint, offset)
        self._advance()

    def _archive_available(self, first: int, last: int) -> None:
        def archive(r: _Run) -> _Run:
            if r.state is not _AVAILABLE:
                return r
            if r.bfirst < 0:  # a gap never fetched: it is in no batch; archived as one of its own
                return r._replace(state=_ARCHIVED, bfirst=r.first, blast=r.last)
            return r._replace(state=_ARCHIVED)

        self._transform(first, last, archive, dirty=True)

    # ---- the runs ----------------------------------------------------------------------------------
    def _transform(self, first: int, last: int, fn: Callable[[_Run], _Run], *, dirty: bool = False) -> None:
        """Apply `fn` to the in-flight offsets of [first, last] (holes stay holes); `dirty`: a change
        to write (take_changes)."""
        if self._w.transform(first, last, fn) and dirty:
            self._mark_dirty(first, last)

    def _advance(self) -> None:
        """SPSO moves past the ACKNOWLEDGED / ARCHIVED offsets at the start of the window (and the
        holes after them); their state is dropped."""
        runs = self._w.runs
        k = 0
        while k < len(runs) and terminal(runs[k].state):
            k += 1
        if k:
            self._w.replace(0, k, [])
        if runs:
            self._start = max(self._start, runs[0].first)
        else:
            self._start = self._end
        if len(self._dirty) > 2 * len(runs) + 64:
            self._dirty = [(self._start, self._end - 1)] if runs else []

    def _push_deadline(self, deadline: int, first: int, last: int) -> None:
        heap = self._deadlines
        heapq.heappush(heap, (deadline, first, last))
        if len(heap) > 2 * len(self._w.runs) + 64:
            self._deadlines = [(r.deadline, r.first, r.last) for r in self._w.runs if r.state is _ACQUIRED]
            heapq.heapify(self._deadlines)

    def _mark_dirty(self, first: int, last: int) -> None:
        d = self._dirty
        if d and first <= d[-1][1] + 1 and last >= d[-1][0] - 1:
            d[-1] = (min(first, d[-1][0]), max(last, d[-1][1]))
        else:
            d.append((first, last))

    @staticmethod
    def _emit(out: list[StateBatch], r: _Run, first: int, last: int) -> None:
        if r.bfirst < 0:
            return  # never fetched: not written
        state = 0 if r.state is _ACQUIRED else int(r.state)
        if out:
            p = out[-1]
            if p.last_offset + 1 == first and p.delivery_state == state and p.delivery_count == r.dc:
                out[-1] = StateBatch(p.first_offset, last, state, r.dc)
                return
        out.append(StateBatch(first, last, state, r.dc))
