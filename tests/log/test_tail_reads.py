"""Reads at the tail of the active segment come from the batches remembered at append
(`LogSegment._tail_*`); they must give exactly the slice the offset index and the headers give."""

from __future__ import annotations

import random

from loghelpers import T0, batch_of

from tidelog.log import LogConfig, PartitionLog
from tidelog.log.segment import TAIL_BATCHES


def _slices(seg, offset, max_bytes, max_offset, min_one):
    """(from memory, from the file) for one read."""
    a = seg.read(offset, max_bytes, max_offset, min_one, load=False)
    saved = [x[:] for x in (seg._tail_last, seg._tail_base, seg._tail_pos, seg._tail_size)]
    seg._forget_tail()
    b = seg.read(offset, max_bytes, max_offset, min_one, load=False)
    seg._tail_last, seg._tail_base, seg._tail_pos, seg._tail_size = saved
    key = lambda s: None if s is None else (s.position, s.length, s.first_offset, s.last_offset)
    return key(a), key(b)


def test_tail_reads_match_reads_through_the_index(tmp_path):
    rnd = random.Random(7)
    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(index_interval_bytes=300), lambda: T0)
    for _ in range(3 * TAIL_BATCHES):  # more than remembered: the older ones come from the file
        log.append(batch_of(rnd.randint(1, 6), T0))
    seg = log.segments[-1]
    assert 0 < len(seg._tail_last) <= TAIL_BATCHES
    end = log.log_end_offset
    oldest = seg._tail_base[0]
    for _ in range(2000):
        offset = rnd.choice([rnd.randrange(0, end + 3), rnd.randrange(oldest, end + 1), end, end + 1])
        max_bytes = rnd.choice([1, 100, 500, 5000, 1 << 20])
        max_offset = rnd.choice([end, rnd.randrange(offset, end + 2) if offset <= end else end])
        mine, theirs = _slices(seg, offset, max_bytes, max_offset, rnd.random() < 0.5)
        assert mine == theirs, (offset, max_bytes, max_offset)


def test_truncation_and_rolls_forget_the_tail(tmp_path):
    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(), lambda: T0)
    for _ in range(10):
        log.append(batch_of(3, T0))
    log.truncate_to(14)  # cut inside a batch: the batch holding 12-14 goes
    seg = log.segments[-1]
    assert not len(seg._tail_last) and log.log_end_offset == 12
    log.append(batch_of(2, T0))
    assert list(seg._tail_base) == [12]
    s = seg.read(12, 1 << 20, log.log_end_offset, True, load=False)
    assert (s.first_offset, s.last_offset) == (12, 13)
    log.roll()
    assert not len(seg._tail_last)
    assert seg.read(12, 1 << 20, 14, True, load=False).last_offset == 13
