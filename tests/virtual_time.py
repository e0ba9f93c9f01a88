"""An asyncio event loop on a virtual clock, for tests of timers (Kafka's MockTime pattern).

`loop.time()` is virtual: it starts at 0 and moves only when the loop has nothing ready to run,
straight to the next timer (a wait of 30 ms costs no real time and always lasts exactly 30 ms of
loop time). Work between two waits takes no loop time at all, so a test's timings do not depend
on how loaded the machine is. For tests without sockets or threads (a wait with no timer would
block for real, as on any loop).
"""

from __future__ import annotations

import asyncio
import selectors


class _AdvancingSelector(selectors.DefaultSelector):
    loop: VirtualTimeLoop | None = None

    def select(self, timeout=None):
        events = super().select(0)
        if events or timeout == 0 or timeout is None or self.loop is None:
            return events if events or timeout == 0 or self.loop is None else super().select(timeout)
        self.loop.now += timeout  # idle until the next timer: jump to it
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self.now = 0.0
        selector = _AdvancingSelector()
        super().__init__(selector)
        selector.loop = self

    def time(self) -> float:
        return self.now


class VirtualTimePolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return VirtualTimeLoop()
