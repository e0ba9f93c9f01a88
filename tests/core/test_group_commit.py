"""core/flusher.py's GroupCommit on a real partition log: concurrent flushes share fsyncs, and a
cancelled flushing task leaves no waiter hanging and no stale state behind."""

from __future__ import annotations

import asyncio

import pytest

from tidelog.core.flusher import GroupCommit
from tidelog.log import LogConfig, PartitionLog


def _log(tmp_path):
    return PartitionLog.open(tmp_path, "t", 0, LogConfig(), lambda: 0)


def test_concurrent_flushes_complete(tmp_path):
    log = _log(tmp_path)

    async def main() -> None:
        gc = GroupCommit()
        await asyncio.gather(*(gc.flush(log) for _ in range(20)))
        assert not gc._running and not gc._pending

    asyncio.run(main())
    log.close()


def test_cancelled_flusher_cancels_its_waiters_and_recovers(tmp_path):
    log = _log(tmp_path)

    async def main() -> None:
        gc = GroupCommit()
        first = asyncio.ensure_future(gc.flush(log))
        await asyncio.sleep(0)  # the flushing task starts its fsync
        second = asyncio.ensure_future(gc.flush(log))  # joins the next fsync
        await asyncio.sleep(0)
        task = gc._running[id(log)]
        task.cancel()
        for waiter in (first, second):
            with pytest.raises(asyncio.CancelledError):
                await waiter
        assert task.cancelled()
        assert not gc._running and not gc._pending
        await asyncio.wait_for(gc.flush(log), 30)  # a new task serves the next request

    asyncio.run(main())
    log.close()
