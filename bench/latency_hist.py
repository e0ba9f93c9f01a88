"""A fixed-size latency histogram in microseconds, HdrHistogram-style, that merges across processes.

Buckets are log-linear: exact below 128 us, then 64 buckets per power of two, so a bucket spans
at most 1/64 of its values (under 1.6% relative error) and the whole range up to 2**37 us (38 h;
larger values land in the last bucket) takes 2,048 counters, however many values are recorded:
a producer or consumer process keeps one, sends it as JSON, and the driver adds them up.

Bucket index of a value v:
    v < 128:   v
    v >= 128:  e = bit_length(v) - 7 (>= 1), m = v >> e (64..127): index = 64 * (e + 1) + m - 64
so indexes of successive powers of two follow each other: [128, 192) for 128..255, [192, 256) for
256..511, and so on. A percentile is the highest value of the bucket that holds its rank (as
HdrHistogram's "highest equivalent value"), never above the largest value recorded.
"""

from __future__ import annotations

import math

SUB = 64  # buckets per power of two above the exact range
EXACT = 2 * SUB  # values below this have a bucket each
BUCKETS = 2048
MAX_EXP = BUCKETS // SUB - 2  # largest shift e: the last bucket holds m = 127 << MAX_EXP upwards


def bucket_index(us: int) -> int:
    if us < EXACT:
        return us if us > 0 else 0
    e = us.bit_length() - 7
    if e > MAX_EXP:
        return BUCKETS - 1
    return SUB * (e + 1) + (us >> e) - SUB


def bucket_range(index: int) -> tuple[int, int]:
    """The lowest and highest value (us) that fall into bucket `index`."""
    if index < EXACT:
        return index, index
    e = index // SUB - 1
    m = index % SUB + SUB
    return m << e, ((m + 1) << e) - 1


class LatencyHistogram:
    """Counts of latencies (whole microseconds) in `BUCKETS` log-linear buckets, with the exact
    count, sum and maximum."""

    __slots__ = ("counts", "count", "total", "max")

    def __init__(self) -> None:
        self.counts = [0] * BUCKETS
        self.count = 0
        self.total = 0
        self.max = 0

    def record(self, us: int) -> None:
        if us < EXACT:
            i = us if us > 0 else 0
        else:
            e = us.bit_length() - 7
            i = SUB * (e + 1) + (us >> e) - SUB if e <= MAX_EXP else BUCKETS - 1
        self.counts[i] += 1
        self.count += 1
        self.total += us
        if us > self.max:
            self.max = us

    def merge(self, other: LatencyHistogram) -> LatencyHistogram:
        for i, n in enumerate(other.counts):
            if n:
                self.counts[i] += n
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)
        return self

    def percentile(self, q: float) -> int | None:
        """The value (us) at percentile q (0-100): the highest value of the bucket holding the
        ceil(q/100 x count)-th smallest value, capped at the maximum. None when empty."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q / 100 * self.count))
        seen = 0
        for i, n in enumerate(self.counts):
            seen += n
            if seen >= rank:
                return min(bucket_range(i)[1], self.max)
        return self.max

    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def to_json(self) -> dict:
        """Sparse: only the buckets that hold values."""
        return {
            "buckets": {str(i): n for i, n in enumerate(self.counts) if n},
            "count": self.count,
            "total": self.total,
            "max": self.max,
        }

    @classmethod
    def from_json(cls, data: dict) -> LatencyHistogram:
        h = cls()
        for i, n in data["buckets"].items():
            h.counts[int(i)] = n
        h.count, h.total, h.max = data["count"], data["total"], data["max"]
        return h
