"""`PartitionLog`: one partition's log: segments in `<log dir>/<topic>-<partition>/`.

Synchronous and single-threaded (the server calls it from its asyncio thread), except `flush()`,
which may run in a worker thread while appends continue.

Offsets: `log_start_offset` <= records < `log_end_offset` (the next offset). With one node the
high watermark is the log end offset; a replicated log keeps it apart (`replication`, the mixin
holding the replica side: HW, leader epochs, follower appends, truncation). `last_stable_offset`
is lowered by the transactions code through `set_first_unstable_offset`.

Appends accept v2 batches or magic 0/1 message sets (told apart by the magic byte, at byte 16 in
both), validate them (`validation`), assign offsets in place when given a writable memoryview
(the server's request frame) and on a copy otherwise, and write the whole record set to the
active segment with one write: a refused record set leaves nothing behind. Segments roll
before an append on segment.bytes, segment.ms (measured on record time from the first batch's
maxTimestamp), a full index, or a relative offset that would overflow int32.

Deleted segments (retention, DeleteRecords, compaction) have their files unlinked at once but
their descriptors closed only after `file.delete.delay.ms`, so a `FileSlice` handed to the server
for sendfile stays readable meanwhile.

Recovery at open: the clean-shutdown marker and recovery point come from `LogManager`. Without a
clean shutdown, every segment from the one holding the recovery point on is checked batch by
batch (`LogSegment.recover`); at the first torn or corrupt batch the log is truncated and later
segments are deleted, with a warning on logger `tidelog.log`. Standalone (`recovery_point=None`,
`clean_shutdown=False`) only the last segment is checked: older segments were fsynced on roll.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import cleaner as _cleaner
from . import legacy
from .atomic import fsync_dir
from .clock import wall_clock_ms
from .config import LogConfig
from .deleter import deletion_name
from .epochs import LeaderEpochCache
from .errors import POLICY_VIOLATION, LogError, OffsetOutOfRangeError
from .records import (
    H_LENGTH,
    NO_TIMESTAMP,
    Record,
    build_batch,
    build_control_batch,
    record_timestamps,
    set_partition_leader_epoch,
)
from .replication import ReplicaLogMixin
from .segment import LOG_SUFFIX, FileSlice, LogSegment
from .txnindex import AbortedTxn
from .validation import BatchInfo, ValidatedAppend, validate_and_assign

logger = logging.getLogger("tidelog.log")

_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4


@dataclass(slots=True)
class AppendInfo:
    first_offset: int  # -1 for an empty record set
    last_offset: int
    log_append_time: int  # -1 for CreateTime topics (ProduceResponse's timestamp)
    log_start_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    num_records: int
    size: int
    batches: list[BatchInfo] = field(default_factory=list)
    flush_needed: bool = False  # flush.messages reached: call flush() (in a worker thread)


@dataclass(slots=True)
class FetchInfo:
    records: FileSlice | None  # None: nothing to return
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int

    @property
    def data(self) -> bytes:
        return self.records.tobytes() if self.records is not None else b""


class PartitionLog(ReplicaLogMixin):
    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        clock_ms: Callable[[], int],
        *,
        on_append: Callable[[PartitionLog], None] | None = None,
        on_log_start_offset_change: Callable[[PartitionLog], None] | None = None,
        hw_checkpoint: int | None = None,
    ):
        """`on_append(log)` after every append; `on_log_start_offset_change(log)` when the log
        start moves (retention, DeleteRecords); `hw_checkpoint`: the high watermark this log had
        when last checkpointed (a replicated log starts from it, `start_replication`)."""
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock_ms = clock_ms
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._next_offset = 0
        self._log_start_offset = 0
        self._recovery_point = 0
        self._first_unstable_offset: int | None = None
        self.first_dirty_offset = 0  # cleaner progress (in memory: a restart cleans again)
        self._unflushed_messages = 0
        self._last_flush_ms = clock_ms()
        self._graveyard: list[tuple[int, LogSegment]] = []
        self._lock = threading.Lock()
        self._closed = False
        self._replicated = False  # replication.py: the cluster's view of this log
        self._hw = 0
        self.hw_checkpoint = hw_checkpoint
        self._leader_epoch: int | None = None
        self._epochs: LeaderEpochCache | None = None
        self.on_append = on_append
        self.on_log_start_offset_change = on_log_start_offset_change

    # -- opening ------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        log_dir: str | os.PathLike[str],
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        clock_ms: Callable[[], int] | None = None,
        *,
        recovery_point: int | None = None,
        clean_shutdown: bool = False,
        log_start_offset: int = 0,
        on_append: Callable[[PartitionLog], None] | None = None,
        on_log_start_offset_change: Callable[[PartitionLog], None] | None = None,
        hw_checkpoint: int | None = None,
    ) -> PartitionLog:
        """Open (creating when missing) `<log_dir>/<topic>-<partition>` and recover it; the hooks
        and `hw_checkpoint` as in the constructor."""
        clock = clock_ms or wall_clock_ms
        directory = Path(log_dir) / f"{topic}-{partition}"
        directory.mkdir(parents=True, exist_ok=True)
        log = cls(
            directory,
            topic,
            partition,
            config or LogConfig(),
            clock,
            on_append=on_append,
            on_log_start_offset_change=on_log_start_offset_change,
            hw_checkpoint=hw_checkpoint,
        )
        log._load(recovery_point, clean_shutdown, log_start_offset)
        return log

    def _load(self, recovery_point: int | None, clean: bool, log_start_offset: int) -> None:
        cfg, now = self.config, self.clock_ms()
        _cleaner.complete_interrupted_swaps(self.dir)
        bases = []
        names = os.listdir(self.dir)
        for name in names:
            m = _SEGMENT_NAME.match(name)
            if m:
                bases.append(int(m.group(1)))
        bases.sort()
        base_set = set(bases)
        for name in names:  # index files whose log is gone
            stem, _, ext = name.partition(".")
            if ext in ("index", "timeindex", "txnindex") and stem.isdigit() and int(stem) not in base_set:
                os.unlink(self.dir / name)
        segs = []
        for b in bases:
            st = os.stat(self.dir / f"{b:020d}{LOG_SUFFIX}")
            segs.append(LogSegment(self.dir, b, cfg, created_ms=int(st.st_mtime * 1000), log_size=st.st_size))
        if not segs:
            segs.append(LogSegment.create(self.dir, log_start_offset, cfg, now))
        self._segments = segs
        self._bases = [s.base_offset for s in segs]
        if not clean:
            self._recover(recovery_point)
        self._segments[-1].make_active()
        self._next_offset = self._segments[-1].next_offset
        self._log_start_offset = max(log_start_offset, self._segments[0].base_offset)
        if self._log_start_offset > self._next_offset:
            self._log_start_offset = self._next_offset
        self._recovery_point = self._next_offset if clean else min(recovery_point or 0, self._next_offset)
        if not clean:
            self.flush()

    def _recover(self, recovery_point: int | None) -> None:
        segs = self._segments
        if recovery_point is None:
            first = len(segs) - 1
        else:
            first = max(0, bisect.bisect_right(self._bases, recovery_point) - 1)
        for i in range(first, len(segs)):
            seg = segs[i]
            truncated = seg.recover()
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
            if truncated or (nxt is not None and seg.next_offset > nxt):
                if truncated:
                    logger.warning(
                        "%s-%d: truncated %d bytes of torn or corrupt data at the end of segment %d; "
                        "log end offset is now %d",
                        self.topic,
                        self.partition,
                        truncated,
                        seg.base_offset,
                        seg.next_offset,
                    )
                for later in segs[i + 1 :]:
                    logger.warning(
                        "%s-%d: deleting segment %d (%d bytes) that follows the truncation point",
                        self.topic,
                        self.partition,
                        later.base_offset,
                        later.size,
                    )
                    later.delete()
                del segs[i + 1 :]
                self._bases = [s.base_offset for s in segs]
                break

    # -- offsets ------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def high_watermark(self) -> int:
        return self._hw if self._replicated else self._next_offset

    @property
    def last_stable_offset(self) -> int:
        fu, hw = self._first_unstable_offset, self.high_watermark
        return hw if fu is None else min(fu, hw)

    def set_first_unstable_offset(self, offset: int | None) -> None:
        """First offset of the oldest open transaction (None: none open); bounds the LSO."""
        self._first_unstable_offset = offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    # -- append -------------------------------------------------------------------------------

    def append(
        self,
        data: bytes | bytearray | memoryview,
        *,
        now_ms: int | None = None,
        origin_client: bool = True,
        before_write: Callable[[object], None] | None = None,
    ) -> AppendInfo:
        """Validate, assign offsets, write. Raises LogAppendError (nothing written).

        `data` as bytes or a bytearray is copied first; a writable memoryview (a Produce record
        set sliced from the request frame) is validated and offset-assigned in place, saving a
        copy of every produced byte (a refused record set may then be left half-patched there).

        `before_write(validated)` runs after validation and before the write (producer state
        checks); raising from it refuses the append."""
        now = self.clock_ms() if now_ms is None else now_ms
        mv = memoryview(data)
        buf: bytearray | memoryview
        if len(mv) > 16 and mv[16] < 2:
            buf = bytearray(legacy.to_v2(mv))
        elif not mv.readonly and mv.format == "B":
            buf = mv  # a writable view (the server's request frame): offsets are assigned in it
        else:
            buf = bytearray(mv)
        v = validate_and_assign(buf, self._next_offset, self.config, now, origin_client=origin_client)
        if not v.batches:
            return AppendInfo(-1, -1, v.log_append_time, self._log_start_offset, NO_TIMESTAMP, -1, 0, 0)
        if before_write is not None:
            before_write(v)
        if self._leader_epoch is not None:  # outside the CRC: stamped in place
            for b in v.batches:
                set_partition_leader_epoch(buf, b.position, self._leader_epoch)
        unflushed = self._write(buf, v, now)
        info = AppendInfo(
            v.first_offset,
            v.last_offset,
            v.log_append_time,
            self._log_start_offset,
            v.max_timestamp,
            v.offset_of_max_timestamp,
            v.num_records,
            v.size,
            v.batches,
            unflushed >= self.config.flush_messages,
        )
        if self.on_append is not None:
            self.on_append(self)
        return info

    def _write(self, buf: bytearray | memoryview, v: ValidatedAppend, now: int) -> int:
        """Write validated batches to the active segment (rolling first when due); returns the
        records appended since the last flush."""
        seg = self._segments[-1]
        why = seg.should_roll(len(buf), v.max_timestamp, v.last_offset, now)
        if why:
            seg = self._roll(now, why)
        seg.append(buf, v)
        self._next_offset = v.last_offset + 1
        with self._lock:  # flush() (a worker thread) subtracts what it flushed under this lock
            self._unflushed_messages += v.num_records
            return self._unflushed_messages

    def append_raw(self, data: bytes | bytearray | memoryview, *, now_ms: int | None = None) -> AppendInfo:
        """Coordinator writes (control batches allowed)."""
        return self.append(data, now_ms=now_ms, origin_client=False)

    def append_records(self, records: list[Record], *, now_ms: int | None = None, **batch_kw: Any) -> AppendInfo:
        """Build one batch from `records` (see records.build_batch) and append it as a coordinator."""
        return self.append_raw(build_batch(records, **batch_kw), now_ms=now_ms)

    def append_control(
        self,
        control_type: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        *,
        now_ms: int | None = None,
    ) -> AppendInfo:
        """A transaction marker (records.CONTROL_COMMIT / CONTROL_ABORT)."""
        now = self.clock_ms() if now_ms is None else now_ms
        batch = build_control_batch(control_type, producer_id, producer_epoch, coordinator_epoch, now)
        return self.append(batch, now_ms=now, origin_client=False)

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        """Record an aborted transaction in the active segment's .txnindex."""
        self._segments[-1].txn_index.append(txn)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound) (FetchResponse v4+)."""
        out: list[AbortedTxn] = []
        i = max(0, bisect.bisect_right(self._bases, fetch_offset) - 1)
        for seg in self._segments[i:]:
            found, complete = seg.txn_index.collect_aborted(fetch_offset, upper_bound)
            out.extend(found)
            if complete:
                break
        return out

    # -- rolling ------------------------------------------------------------------------------

    def roll(self, now_ms: int | None = None) -> LogSegment:
        """Start a new segment at the log end offset (no-op when the active one is empty)."""
        now = self.clock_ms() if now_ms is None else now_ms
        if self._segments[-1].size == 0:
            return self._segments[-1]
        return self._roll(now, "requested")

    def _roll(self, now: int, why: str) -> LogSegment:
        with self._lock:
            old = self._segments[-1]
            if old.size == 0:
                return old
            old.on_roll()
            new = LogSegment.create(self.dir, self._next_offset, self.config, now)
            self._segments.append(new)
            self._bases.append(new.base_offset)
            self._recovery_point = max(self._recovery_point, new.base_offset)
        logger.debug("%s-%d: rolled segment at %d (%s)", self.topic, self.partition, new.base_offset, why)
        return new

    # -- reads --------------------------------------------------------------------------------

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one: bool = True,
        *,
        load: bool = True,
    ) -> FetchInfo:
        """Whole batches from the one holding `fetch_offset`, below `max_offset` (default: the
        high watermark; pass the LSO for read_committed), within `max_bytes` (at least one whole
        batch when `min_one`). `load=False` skips reading the bytes (use records.fd for sendfile).
        Raises OffsetOutOfRangeError outside [log_start_offset, log_end_offset]."""
        leo = self._next_offset
        if fetch_offset < self._log_start_offset or fetch_offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {fetch_offset} is outside [{self._log_start_offset}, {leo}] of {self.topic}-{self.partition}"
            )
        limit = self.high_watermark if max_offset is None else min(max_offset, leo)
        result = FetchInfo(None, self.high_watermark, self.last_stable_offset, self._log_start_offset, leo)
        if fetch_offset >= limit:
            return result
        segs = self._segments
        i = max(0, bisect.bisect_right(self._bases, fetch_offset) - 1)
        while i < len(segs):
            sl = segs[i].read(fetch_offset, max_bytes, limit, min_one, load)
            if sl is not None:
                if sl.length:
                    result.records = sl
                return result
            i += 1
        return result

    # -- offset lookups -------------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int, max_offset: int | None = None) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp` (ListOffsets v1+);
        None when there is none (below `max_offset` when given)."""
        start = self._log_start_offset
        for seg in self._segments:
            if seg.max_timestamp >= timestamp:
                found = seg.find_offset_by_timestamp(timestamp, start)
                if found is not None:
                    if max_offset is not None and found[0] >= max_offset:
                        return None
                    return found
        return None

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        best = None
        for seg in self._segments:
            ts = seg.max_timestamp
            if ts >= 0 and (best is None or ts > best.max_timestamp):
                best = seg
        if best is None:
            return None
        ts, shallow = best.max_timestamp, best.offset_of_max_timestamp
        found = best.find_batch(shallow)
        if found is not None:
            pos, h = found
            for off, rts in record_timestamps(best.log.pread(pos, 12 + h[H_LENGTH])):
                if rts == ts and off >= self._log_start_offset:
                    return off, ts
        return max(shallow, self._log_start_offset), ts

    def list_offset(self, timestamp: int, max_offset: int | None = None) -> tuple[int, int] | None:
        """ListOffsets v1+: (offset, timestamp) for a timestamp or a sentinel (-1 latest =
        `max_offset` or the high watermark, -2 earliest, -3 max timestamp, -4 earliest local);
        None when no record qualifies."""
        if timestamp == LATEST_TIMESTAMP:
            return (self.high_watermark if max_offset is None else max_offset), NO_TIMESTAMP
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return self._log_start_offset, NO_TIMESTAMP
        if timestamp == MAX_TIMESTAMP:
            return self.offset_of_max_timestamp()
        return self.offset_for_timestamp(timestamp, max_offset)

    def offsets_before(self, timestamp: int, max_num: int, now_ms: int | None = None) -> list[int]:
        """ListOffsets v0: up to `max_num` segment start offsets (descending) of segments whose
        largest record timestamp is <= `timestamp`, plus the log end offset as the newest
        candidate (-1 latest, -2 earliest)."""
        now = self.clock_ms() if now_ms is None else now_ms
        lso = self._log_start_offset
        arr = [(max(s.base_offset, lso), s.largest_timestamp()) for s in self._segments]
        if self._segments[-1].size > 0:
            arr.append((self._next_offset, now))
        if timestamp == LATEST_TIMESTAMP:
            start = len(arr) - 1
        elif timestamp == EARLIEST_TIMESTAMP:
            start = 0
        else:
            start = len(arr) - 1
            while start >= 0 and arr[start][1] > timestamp:
                start -= 1
        out = [arr[i][0] for i in range(start, -1, -1)][: max(0, max_num)]
        return sorted(out, reverse=True)

    # -- deletion -------------------------------------------------------------------------------

    def delete_records(self, offset: int, now_ms: int | None = None) -> int:
        """DeleteRecords: move the log start offset to `offset` (-1: the high watermark); drop
        segments entirely below it. Returns the new log start offset: an offset below it leaves
        it as it is. A log whose cleanup.policy has no `delete` is refused (POLICY_VIOLATION),
        as Kafka's Partition.deleteRecordsOnLeader."""
        if not self.config.delete:
            raise LogError(
                POLICY_VIOLATION,
                f"Records of partition {self.topic}-{self.partition} can not be deleted due to the configured policy",
            )
        hw = self.high_watermark
        if offset == -1:
            offset = hw
        if offset < 0 or offset > hw:
            raise OffsetOutOfRangeError(f"cannot delete records before {offset}: high watermark is {hw}")
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            self._delete_below_log_start(now_ms)
            if self.on_log_start_offset_change is not None:
                self.on_log_start_offset_change(self)
        return self._log_start_offset

    def _delete_below_log_start(self, now_ms: int | None) -> int:
        n = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._log_start_offset:
            self._delete_first_segment(now_ms, "below the log start offset")
            n += 1
        return n

    def _delete_first_segment(self, now_ms: int | None, why: str) -> None:
        seg = self._segments.pop(0)
        self._bases.pop(0)
        logger.info("%s-%d: deleting segment %d (%s)", self.topic, self.partition, seg.base_offset, why)
        self._retire(seg, self.clock_ms() if now_ms is None else now_ms)
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)

    def _retire(self, seg: LogSegment, now: int) -> None:
        """Unlink a segment leaving the log; its descriptors close after file.delete.delay.ms."""
        seg.unlink()
        self._graveyard.append((now + self.config.file_delete_delay_ms, seg))

    def _reap(self, now: int) -> None:
        keep = []
        for deadline, seg in self._graveyard:
            if deadline <= now:
                seg.release()
            else:
                keep.append((deadline, seg))
        self._graveyard = keep

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete segments past retention.ms (by their largest record timestamp), beyond
        retention.bytes, and below the log start offset. A fully expired active segment is
        rolled first, as Kafka does. Returns the number of segments deleted."""
        now = self.clock_ms() if now_ms is None else now_ms
        self._reap(now)
        cfg = self.config
        deleted = 0
        old_start = self._log_start_offset
        if cfg.delete and cfg.retention_ms >= 0:
            expired = 0
            for seg in self._segments:
                if seg.size == 0 or now - seg.largest_timestamp() <= cfg.retention_ms:
                    break
                expired += 1
            if expired and expired == len(self._segments):
                self._roll(now, "retention")
            for _ in range(expired):
                self._delete_first_segment(now, "retention.ms")
                deleted += 1
        if cfg.delete and cfg.retention_bytes >= 0:
            diff = self.size - cfg.retention_bytes
            while len(self._segments) > 1 and diff - self._segments[0].size >= 0:
                diff -= self._segments[0].size
                self._delete_first_segment(now, "retention.bytes")
                deleted += 1
        deleted += self._delete_below_log_start(now)
        if self._log_start_offset != old_start and self.on_log_start_offset_change is not None:
            self.on_log_start_offset_change(self)
        return deleted

    def compact(self, now_ms: int | None = None, *, force: bool = False) -> _cleaner.CleanStats:
        """Run the cleaner over the closed segments (cleanup.policy=compact); skipped while the
        dirty ratio is below min.cleanable.dirty.ratio unless `force`."""
        now = self.clock_ms() if now_ms is None else now_ms
        self._reap(now)
        return _cleaner.clean(self, now, force=force)

    def _replace_segment(self, old: LogSegment, new: LogSegment, now: int) -> None:
        """Cleaner: swap a rewritten segment in (same base offset)."""
        with self._lock:
            i = self._segments.index(old)
            self._segments[i] = new
            self._graveyard.append((now + self.config.file_delete_delay_ms, old))

    # -- durability, life cycle -------------------------------------------------------------------

    def flush(self, upto_offset: int | None = None) -> None:
        """fsync everything appended so far. Thread-safe with appends: callers that arrive while
        a flush runs share the next one, and a flush already covering `upto_offset` returns at
        once."""
        target = self._next_offset if upto_offset is None else upto_offset
        if target <= self._recovery_point and self._unflushed_messages == 0:
            return
        with self._lock:
            if self._closed:
                return
            target = self._next_offset
            if target <= self._recovery_point and self._unflushed_messages == 0:
                return
            pending = self._unflushed_messages
            i = max(0, bisect.bisect_right(self._bases, self._recovery_point) - 1)
            for seg in self._segments[i:]:
                seg.flush()
            self._recovery_point = max(self._recovery_point, target)
            self._unflushed_messages = max(0, self._unflushed_messages - pending)
            self._last_flush_ms = self.clock_ms()

    def flush_due(self, now_ms: int | None = None) -> bool:
        """flush.ms elapsed since the last flush with data unflushed."""
        now = self.clock_ms() if now_ms is None else now_ms
        return self._next_offset > self._recovery_point and now - self._last_flush_ms >= self.config.flush_ms

    def cleaned_to(self, offset: int) -> None:
        """The cleaner's progress: everything below `offset` is clean (in memory only: a restart
        cleans again, which is idempotent)."""
        self.first_dirty_offset = offset

    def update_config(self, config: LogConfig) -> None:
        """New topic config; applies to future appends, rolls and retention."""
        self.config = config
        for seg in self._segments:
            seg.update_config(config)

    def close(self) -> None:
        """Flush, write final index entries, trim indexes, close files."""
        if self._closed:
            return
        self.flush()
        with self._lock:
            self._closed = True
            for seg in self._segments:
                seg.close()
            for _, seg in self._graveyard:
                seg.release()
            self._graveyard.clear()

    def delete(self) -> Path | None:
        """Close the log and rename its directory out of the way (`deleter.deletion_name`, the
        log dir fsynced): the renamed directory, for the caller to remove (`DirDeleter`), or None
        when it could not be renamed (then it is removed here)."""
        with self._lock:
            self._closed = True
            for seg in self._segments:
                seg.release()
            for _, seg in self._graveyard:
                seg.release()
            self._graveyard.clear()
        target = self.dir.with_name(deletion_name(self.dir.name))
        try:
            os.rename(self.dir, target)
            fsync_dir(self.dir.parent)
        except OSError as e:
            logger.warning(
                "%s-%d: cannot rename %s for deletion (%s): removing it now", self.topic, self.partition, self.dir, e
            )
            shutil.rmtree(self.dir, ignore_errors=True)
            return None
        return target

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, start={self._log_start_offset}, "
            f"end={self._next_offset}, segments={len(self._segments)})"
        )
