"""The wall clock, in milliseconds since the epoch: the one definition every layer uses (record
timestamps, transaction and group timers). Code that must run on virtual time takes a clock
argument instead and defaults to this."""

from __future__ import annotations

import time


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000
