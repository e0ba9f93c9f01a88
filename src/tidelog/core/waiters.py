"""Long-poll wake-ups: Fetch requests waiting for data on a set of partitions.

`wait_any(keys, timeout)` parks the caller on each key until `notify(key)` (called after every
append to that partition) or the timeout. No polling loop and no sleeps: an append wakes exactly
the fetches waiting on its partition. `shutdown()` wakes everyone so pending fetches answer at
once when the broker stops. Waiters are kept in insertion order (dicts, not sets of futures, whose
order would follow memory addresses): wake-ups happen in the order the fetches parked, so a run
replays exactly (the simulation relies on it).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Hashable, Iterable


class Waiters:
    def __init__(self) -> None:
        self._by_key: dict[Hashable, dict[asyncio.Future[object], None]] = defaultdict(dict)
        self._closed = False

    def notify(self, key: Hashable) -> None:
        futs = self._by_key.pop(key, None)
        if futs:
            for fut in futs:
                if not fut.done():
                    fut.set_result(key)

    def shutdown(self) -> None:
        self._closed = True
        for futs in self._by_key.values():
            for fut in futs:
                if not fut.done():
                    fut.set_result(None)
        self._by_key.clear()

    async def wait_any(self, keys: Iterable[Hashable], timeout: float) -> bool:
        """True when woken by an append (or shutdown), False on timeout."""
        if self._closed or timeout <= 0:
            return self._closed
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[object] = loop.create_future()
        keys = list(keys)
        for k in keys:
            self._by_key[k][fut] = None
        handle = loop.call_later(timeout, _expire, fut)
        try:
            return (await fut) is not False
        finally:
            handle.cancel()
            for k in keys:
                s = self._by_key.get(k)
                if s is not None:
                    s.pop(fut, None)
                    if not s:
                        del self._by_key[k]


def _expire(fut: asyncio.Future[object]) -> None:
    if not fut.done():
        fut.set_result(False)
