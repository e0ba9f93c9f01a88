"""The simulation's event loop: every simulated process (a broker incarnation, a client) runs in
one asyncio loop on virtual time, and each can be paused (SIGSTOP) or killed (SIGKILL) at any
moment without its code knowing.

How: each process owns a `contextvars.Context` holding `PROCESS`; everything it schedules (task
steps, timers, future callbacks) inherits that context, and the loop gates every callback on its
process's state when it is due to run:
- running: runs;
- paused: kept, in order, and scheduled again when the process resumes (a timer that fell due
  meanwhile fires at the resume, as after SIGCONT); a callback cancelled meanwhile is dropped;
- dead: dropped (nothing of that process ever runs again: its sockets are reset by the network,
  its etcd calls are lost, its files stay as written, as after SIGKILL).

Time: `loop.time()` is virtual; when nothing is ready the loop jumps to the next timer, so a
simulated minute costs only the work done in it. `install_determinism` points `time.time`,
`time.monotonic` (and their _ns forms), `uuid.uuid4` and the global `random` at the loop and the
seed, and runs executor work inline, so one seed replays the same run exactly (with the same
PYTHONHASHSEED: the runner fixes it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import random
import selectors
import time
import uuid
from collections.abc import Callable
from typing import Any

PROCESS: contextvars.ContextVar[Process | None] = contextvars.ContextVar("sim_process", default=None)

RUNNING, PAUSED, DEAD = "running", "paused", "dead"


class Process:
    """One simulated OS process: the callbacks scheduled in its context run only while it runs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = RUNNING
        self.deferred: list[tuple[asyncio.Handle, Callable[..., Any], tuple[Any, ...], contextvars.Context]] = []
        self.context = contextvars.Context()
        self.context.run(PROCESS.set, self)

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call `fn(*args)` as this process (what it schedules belongs to it)."""
        return self.context.run(fn, *args)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        return self.context.run(asyncio.ensure_future, coro)  # type: ignore[no-any-return]

    @property
    def alive(self) -> bool:
        return self.state != DEAD

    def __repr__(self) -> str:
        return f"<{self.name} {self.state}>"


class _IdleSelector(selectors.DefaultSelector):
    """No real I/O happens in the simulation: waiting means jumping to the next timer."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: SimLoop | None = None

    def select(self, timeout: float | None = None) -> list[Any]:
        events = super().select(0)
        if events or timeout == 0 or self.loop is None:
            return events
        if timeout is None:
            raise RuntimeError("simulation deadlock: nothing is scheduled and nothing can happen")
        self.loop.now += timeout
        return []


class SimLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self.now = 0.0
        self.fsync_delay: dict[str, float] = {}  # process name -> extra seconds its fsyncs take
        selector = _IdleSelector()
        super().__init__(selector)
        selector.loop = self

    def time(self) -> float:
        return self.now

    # ---- gating --------------------------------------------------------------------------------
    def call_soon(
        self,
        callback: Callable[..., Any],
        *args: Any,  # type: ignore[override]
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        if self.is_closed():  # a dead process's coroutine, finalised after the run: nothing runs
            return asyncio.Handle(callback, args, self)
        ctx = context if context is not None else contextvars.copy_context()
        proc = ctx.get(PROCESS)
        if proc is None:
            return super().call_soon(callback, *args, context=ctx)
        cell: list[asyncio.Handle] = []
        h = super().call_soon(self._gated, proc, cell, callback, args, context=ctx)
        cell.append(h)
        return h

    def call_at(
        self,
        when: float,
        callback: Callable[..., Any],
        *args: Any,  # type: ignore[override]
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        ctx = context if context is not None else contextvars.copy_context()
        proc = ctx.get(PROCESS)
        if proc is None:
            return super().call_at(when, callback, *args, context=ctx)
        cell: list[asyncio.Handle] = []
        h = super().call_at(when, self._gated, proc, cell, callback, args, context=ctx)
        cell.append(h)
        return h

    def call_soon_threadsafe(
        self,
        callback: Callable[..., Any],
        *args: Any,  # type: ignore[override]
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        return self.call_soon(callback, *args, context=context)

    @staticmethod
    def _gated(proc: Process, cell: list[asyncio.Handle], callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        if proc.state == RUNNING:
            callback(*args)
        elif proc.state == PAUSED:
            proc.deferred.append((cell[0], callback, args, contextvars.copy_context()))

    def pause(self, proc: Process) -> None:
        if proc.state == RUNNING:
            proc.state = PAUSED

    def resume(self, proc: Process) -> None:
        if proc.state != PAUSED:
            return
        proc.state = RUNNING
        items, proc.deferred = proc.deferred, []
        for handle, callback, args, ctx in items:
            if not handle.cancelled():
                self.call_soon(callback, *args, context=ctx)

    def kill(self, proc: Process) -> None:
        proc.state = DEAD
        proc.deferred.clear()


class InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """`run_in_executor` work (fsync) done at once, on the loop, no thread; its answer comes
    after a random virtual delay (an fsync takes time, during which the loop serves others)."""

    def __init__(self, loop: SimLoop, rng: random.Random) -> None:
        super().__init__(max_workers=1)
        self.loop = loop
        self.rng = rng

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        f: concurrent.futures.Future[Any] = concurrent.futures.Future()
        proc = PROCESS.get()
        delay = self.rng.uniform(0.0001, 0.004) + (self.loop.fsync_delay.get(proc.name, 0.0) if proc else 0.0)
        try:
            result = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting coroutine
            self.loop.call_later(delay, f.set_exception, e)
        else:
            self.loop.call_later(delay, f.set_result, result)
        return f


WALL_START = 1_790_000_000.0  # the simulated wall clock starts in 2026


class Determinism:
    """Patches the process-wide sources of nondeterminism for one run; `restore()` undoes it."""

    def __init__(self, loop: SimLoop, seed: int) -> None:
        self.loop = loop
        self.rng = random.Random(seed ^ 0x5EED)
        self._saved = (
            time.time,
            time.time_ns,
            time.monotonic,
            time.monotonic_ns,
            time.perf_counter,
            uuid.uuid4,
            random.getstate(),
        )
        time.time = lambda: WALL_START + loop.now
        time.time_ns = lambda: int((WALL_START + loop.now) * 1e9)
        time.monotonic = lambda: loop.now
        time.monotonic_ns = lambda: int(loop.now * 1e9)
        time.perf_counter = lambda: loop.now
        uuid.uuid4 = lambda: uuid.UUID(int=self.rng.getrandbits(128), version=4)
        random.seed(seed)
        loop.set_default_executor(InlineExecutor(loop, random.Random(seed ^ 0xF5)))

    def restore(self) -> None:
        (time.time, time.time_ns, time.monotonic, time.monotonic_ns, time.perf_counter, uuid.uuid4, state) = self._saved
        random.setstate(state)
