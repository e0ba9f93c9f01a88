"""The replica side of a `PartitionLog` (cluster mode): high watermark, leader epochs, follower
appends and truncation. A mixin of `PartitionLog`, kept apart so that log.py stays the
single-node engine; everything here is inert until the cluster code calls `start_replication`.

- High watermark: single node, it is the log end offset. Replicated, it is kept apart, moved only
  forward by `update_high_watermark` (the leader: minimum log end offset of the ISR; a follower:
  the leader's, capped at its own log end) and back only by truncation. It starts from
  `hw_checkpoint` (LogManager's `replication-offset-checkpoint`), capped at the log end offset.
  Reads, ListOffsets(latest) and the LSO stop at it.
- Leader epochs (`epochs.LeaderEpochCache`): `set_leader_epoch(e)` (becoming leader) assigns e at
  the log end offset and stamps e into the `partitionLeaderEpoch` of every batch appended after;
  a follower's appends keep the leader's stamps and assign their epochs to the cache.
  `epoch_end(e)` answers OffsetForLeaderEpoch; a log that never had an epoch (single node)
  answers epoch 0 ending at the log end offset, as before.
- `append_as_follower(data)`: whole batches as fetched from the leader, offsets kept.
- `truncate_to(offset)`: the log, its three indexes, the epoch cache, the HW, recovery point and
  cleaner progress all go back to `offset` (or to the start of the batch holding it);
  `truncate_fully_and_start_at(offset)` empties the log and restarts it at `offset`. Producer
  state is rebuilt by the caller (`txn`), which owns it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .config import LogConfig
from .epochs import LeaderEpochCache
from .records import BatchHeader
from .segment import LogSegment
from .validation import ValidatedAppend, validate_replicated

logger = logging.getLogger("tidelog.log")


class ReplicaLogMixin:
    """State added to PartitionLog.__init__: `_replicated`, `_hw`, `hw_checkpoint`,
    `_leader_epoch`, `_epochs`; the rest is PartitionLog's own, declared here for the type checker."""

    _replicated: bool
    _hw: int
    hw_checkpoint: int | None
    _leader_epoch: int | None
    _epochs: LeaderEpochCache | None
    # PartitionLog's
    dir: Path
    topic: str
    partition: int
    config: LogConfig
    clock_ms: Callable[[], int]
    first_dirty_offset: int
    on_append: Callable[[Any], None] | None
    on_log_start_offset_change: Callable[[Any], None] | None
    _segments: list[LogSegment]
    _bases: list[int]
    _next_offset: int
    _log_start_offset: int
    _recovery_point: int
    _first_unstable_offset: int | None
    _lock: threading.Lock

    def _write(self, buf: bytearray, v: ValidatedAppend, now: int) -> int:
        raise NotImplementedError

    @property
    def epochs(self) -> LeaderEpochCache:
        if self._epochs is None:
            self._epochs = LeaderEpochCache(self.dir)
        return self._epochs

    @property
    def replicated(self) -> bool:
        return self._replicated

    def start_replication(self) -> None:
        """From now on the high watermark is kept apart from the log end: it starts at the
        checkpointed one (capped at the log end; the log start when none), and moves only by
        `update_high_watermark`."""
        if not self._replicated:
            start = self.hw_checkpoint if self.hw_checkpoint is not None else self._log_start_offset
            self._hw = min(max(start, self._log_start_offset), self._next_offset)
        self._replicated = True

    def update_high_watermark(self, offset: int) -> bool:
        """Move the HW forward to `offset` (capped at the log end offset); True when it moved."""
        offset = min(offset, self._next_offset)
        if offset > self._hw:
            self._hw = offset
            return True
        return False

    # -- leader epochs --------------------------------------------------------------------------

    def set_leader_epoch(self, epoch: int) -> None:
        """This broker leads from now on at `epoch`: it starts at the log end offset."""
        self._leader_epoch = epoch
        self.epochs.assign(epoch, self._next_offset)

    def latest_epoch(self) -> int:
        return self.epochs.latest_epoch

    def epoch_end(self, requested: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= requested, where it ends)."""
        cache = self.epochs
        if not len(cache):
            return (0, self._next_offset) if requested >= 0 else (-1, -1)
        return cache.end_offset_for(requested, self._next_offset)

    def end_offset_for_epoch(self, epoch: int) -> int:
        return self.epoch_end(epoch)[1]

    # -- follower appends ------------------------------------------------------------------------

    def append_as_follower(self, data: bytes | bytearray | memoryview) -> ValidatedAppend:
        """Append batches fetched from the leader at their own offsets. Raises LogAppendError on
        a corrupt batch or offsets below the log end (nothing written)."""
        buf = bytearray(data)
        v = validate_replicated(buf, self._next_offset)
        if not v.batches:
            return v
        if v.size < len(buf):
            del buf[v.size :]
        self._write(buf, v, self.clock_ms())
        cache = self.epochs
        for b in v.batches:
            epoch = BatchHeader(buf, b.position).partition_leader_epoch
            if epoch != cache.latest_epoch:  # a newer epoch, or an older one that overrides stale entries
                cache.assign(epoch, b.base_offset)
        if self.on_append is not None:
            self.on_append(self)
        return v

    def follow_log_start_offset(self, offset: int) -> bool:
        """A follower moves its log start offset to the leader's (DeleteRecords, retention on the
        leader); segments wholly below it go. True when it moved."""
        offset = min(offset, self._next_offset)
        if offset <= self._log_start_offset:
            return False
        self._log_start_offset = offset
        self.epochs.truncate_from_start(offset)
        self._delete_below_log_start(None)
        if self.on_log_start_offset_change is not None:
            self.on_log_start_offset_change(self)
        return True

    def _delete_below_log_start(self, now_ms: int | None) -> int:
        raise NotImplementedError

    def _retire(self, seg: LogSegment, now: int) -> None:
        raise NotImplementedError

    # -- truncation ------------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove everything at and after `offset`; returns the new log end offset."""
        if offset >= self._next_offset:
            return self._next_offset
        if offset < self._segments[0].base_offset or offset < self._log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return self._next_offset
        now = self.clock_ms()
        with self._lock:
            while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
                self._bases.pop()
                self._retire(self._segments.pop(), now)
            seg = self._segments[-1]
            removed = seg.truncate_to(offset)
            self._next_offset = seg.next_offset
            self._after_truncate()
        logger.info(
            "%s-%d: truncated to %d (%d bytes of the last segment removed)",
            self.topic,
            self.partition,
            self._next_offset,
            removed,
        )
        return self._next_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment; the log restarts, empty, at `offset`."""
        now = self.clock_ms()
        with self._lock:
            for seg in self._segments:
                self._retire(seg, now)
            new = LogSegment.create(self.dir, offset, self.config, now)
            self._segments = [new]
            self._bases = [offset]
            self._next_offset = offset
            self._log_start_offset = offset
            self._hw = offset
            self.epochs.clear()
            self._after_truncate()
            self._recovery_point = offset
        logger.info("%s-%d: emptied, restarting at %d", self.topic, self.partition, offset)
        if self.on_log_start_offset_change is not None:
            self.on_log_start_offset_change(self)

    def _after_truncate(self) -> None:
        leo = self._next_offset
        self._hw = min(self._hw, leo)
        self._recovery_point = min(self._recovery_point, leo)
        self.first_dirty_offset = min(self.first_dirty_offset, leo)
        self._log_start_offset = min(self._log_start_offset, leo)
        self.epochs.truncate_from_end(leo)
        if self._first_unstable_offset is not None and self._first_unstable_offset >= leo:
            self._first_unstable_offset = None
