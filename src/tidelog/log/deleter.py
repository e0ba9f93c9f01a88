"""Deleting a partition's directory off the caller's thread, as Kafka's asynchronous log deletion.

A deleted partition's directory is first renamed, in its log dir, to
`<topic>-<partition>.<32 hex digits>-delete` (one `rename`, atomic; the log dir is then fsynced so
the rename survives a crash), then removed file by file by one background thread. Removing a
partition's segments can take seconds (gigabytes of files on a slow disk); on the broker's event
loop that stalled every connection, long enough for clients' requests to time out (three brokers
deleting a 100-partition topic of workload a, `bench/workloads.py`, made the next CreateTopics
fail with "Failed while waiting for controller").

The renamed name never matches `<topic>-<partition>`, so a partition of the same name can be
created at once, and the log manager never opens a directory being deleted.

Crash behaviour: a crash before the rename is durable leaves the partition's directory as it was
(the deletion is repeated by whoever asked for it: the topic is gone from the metadata); after it,
the `-delete` directory is left, and the next start removes it (`LogManager` schedules every one it
finds). Stopping does not wait for removals in progress: what is left is removed at the next start.
Memory: one queued path per deleted partition.
"""

from __future__ import annotations

import logging
import queue
import shutil
import threading
import uuid
from pathlib import Path

logger = logging.getLogger("tidelog.log")

DELETE_SUFFIX = "-delete"


def deletion_name(name: str) -> str:
    """The name a partition directory `name` is renamed to before it is removed."""
    return f"{name}.{uuid.uuid4().hex}{DELETE_SUFFIX}"


def is_being_deleted(name: str) -> bool:
    return name.endswith(DELETE_SUFFIX)


class DirDeleter:
    """Removes directories on one daemon thread, in the order scheduled."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)
        self._stopped = False

    def schedule(self, path: Path) -> None:
        """Remove `path` (already renamed out of the way) in the background."""
        with self._lock:
            if self._stopped:
                return  # left for the next start
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tidelog-deleter", daemon=True)
                self._thread.start()
        self._queue.put(path)

    def _run(self) -> None:
        while True:
            path = self._queue.get()
            if path is None:
                return
            try:
                shutil.rmtree(path)
            except FileNotFoundError:
                pass
            except OSError as e:  # left where it is; the next start tries again
                logger.warning("could not remove %s: %s", path, e)
            with self._lock:
                self._pending -= 1
                if self._pending == 0:
                    self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Until nothing scheduled is left (tests, and a caller that must see the space back)."""
        with self._lock:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def stop(self) -> None:
        """No more removals are taken; the one in progress finishes on its daemon thread."""
        with self._lock:
            self._stopped = True
            started = self._thread is not None
        if started:
            self._queue.put(None)
