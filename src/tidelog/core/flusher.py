"""Group commit: produce requests that must be durable share one fsync per partition.

A Produce with acks=1/-1 on a partition whose flush settings (`flush.messages`, `flush.ms`)
require a flush awaits `flush(log)`; every request that arrives while an fsync is running joins the
next one, so N concurrent producers cost about two fsyncs, not N. fsync runs in a worker thread so
the event loop keeps serving other connections.

A flush that fails hands its exception to every request waiting on it. When the flushing task
itself is cancelled or closed (broker shutdown, or a coroutine torn down), it stops at once: the
requests waiting on this fsync and on the next are cancelled too (none may hear "durable" from a
flush that was not confirmed), and the next `flush` of that log starts a new task.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..log.log import PartitionLog


class GroupCommit:
    def __init__(self) -> None:
        self._pending: dict[int, tuple[PartitionLog, asyncio.Future[None]]] = {}
        self._running: dict[int, asyncio.Task[None]] = {}

    async def flush(self, log: PartitionLog) -> None:
        key = id(log)
        entry = self._pending.get(key)
        if entry is None:
            fut = asyncio.get_running_loop().create_future()
            self._pending[key] = (log, fut)
            if key not in self._running:
                self._running[key] = asyncio.ensure_future(self._run(key))
        else:
            fut = entry[1]
        await asyncio.shield(fut)

    async def _run(self, key: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            while key in self._pending:
                log, fut = self._pending.pop(key)
                try:
                    await loop.run_in_executor(None, log.flush)
                except Exception as e:  # noqa: BLE001 - handed to every waiter
                    if not fut.done():
                        fut.set_exception(e)
                except BaseException:  # cancelled or closed: stop, leaving no waiter behind
                    fut.cancel()
                    nxt = self._pending.pop(key, None)
                    if nxt is not None:
                        nxt[1].cancel()
                    raise
                else:
                    if not fut.done():
                        fut.set_result(None)
        finally:
            self._running.pop(key, None)
