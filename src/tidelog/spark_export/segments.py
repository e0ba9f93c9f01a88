"""Read-only access to a partition's segment files, for export: no Spark, no broker state.

A partition directory `<topic>-<partition>/` holds segments named by their 20-digit base offset:
`<base>.log` (record batches v2), `<base>.index`, `<base>.timeindex`, `<base>.txnindex`. The
newest segment is the *active* one (the broker appends to it); every other segment is *closed*
and never changes again until retention deletes it. Export reads closed segments only.

Planning (`plan_partition`) runs on the Spark driver and is cheap: it reads batch headers (61 bytes
per batch, read in chunks with plain file reads, `batches`) and the small `.timeindex`/`.txnindex`
files; it produces one picklable `SegmentTask` per segment. Reading (`read_task`) runs on an
executor: it decodes the batches of one task straight into Arrow columns - compiled with numba
(`fastdecode.append_batch_fast`) when it is installed, else `columns.append_batch`, the pure-Python
reference - (all codecs, via `tidelog.log.compression`) and yields `pyarrow.RecordBatch`es in the
data source's schema.

read_committed, as Kafka's Fetch does it:
- control batches (transaction markers) are never returned;
- a transactional batch whose producer has an aborted transaction covering it is dropped; the
  aborted transactions come from the `.txnindex` of the segment and of every later segment
  (a marker may land in a later segment than the transaction's records);
- nothing at or above the last stable offset (LSO) of the closed segments is returned: the LSO is
  the first offset of the oldest transaction with no marker among the scanned closed segments.
  The scan starts at `scan_from`, which must be an offset where no transaction that started
  earlier is still open past the end of the closed segments: the log start, or an offset the
  previous export stopped at (it never stops past an open transaction).

The `.index`/`.timeindex` files are read here through small read-only views (`_IndexView`): the
log engine's index classes open files read-write and may create them, which a reader running as
another user against a broker's directory must not do.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tidelog.log import records as rb
from tidelog.log.txnindex import ENTRY as TXN_ENTRY
from tidelog.log.txnindex import ENTRY_SIZE as TXN_ENTRY_SIZE
from tidelog.spark_export.columns import Columns, append_batch
from tidelog.spark_export.fastdecode import DECODER, FastColumns, append_batch_fast

SEGMENT_SUFFIX = ".log"
NO_LIMIT = 2**63 - 1

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


# ---------------------------------------------------------------------------------------------
# Discovery


@dataclass(frozen=True, slots=True)
class SegmentFile:
    base_offset: int
    path: str  # the .log file

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def sibling(self, suffix: str) -> str:
        return self.path[: -len(SEGMENT_SUFFIX)] + suffix


def log_start_offsets(log_dirs: Sequence[str | Path]) -> dict[tuple[str, int], int]:
    """The broker's `log-start-offset-checkpoint` of each log directory (written at shutdown and
    at every checkpoint interval; older than the segments when the broker is running)."""
    from tidelog.log.manager import LOG_START_OFFSET_CHECKPOINT, read_checkpoint

    out: dict[tuple[str, int], int] = {}
    for d in log_dirs:
        out.update(read_checkpoint(Path(d) / LOG_START_OFFSET_CHECKPOINT))
    return out


def partition_dirs(log_dirs: Sequence[str | Path], topic: str) -> dict[int, Path]:
    """{partition: directory} of `topic` across the log directories (Kafka's `<topic>-<n>`)."""
    out: dict[int, Path] = {}
    prefix = topic + "-"
    for d in log_dirs:
        d = Path(d)
        if not d.is_dir():
            continue
        for entry in d.iterdir():
            name = entry.name
            if not name.startswith(prefix) or not entry.is_dir():
                continue
            num = name[len(prefix) :]
            if num.isdigit():
                out[int(num)] = entry
    return dict(sorted(out.items()))


def topics_on_disk(log_dirs: Sequence[str | Path]) -> list[str]:
    """Topic names that have at least one partition directory."""
    names = set()
    for d in log_dirs:
        d = Path(d)
        if not d.is_dir():
            continue
        for entry in d.iterdir():
            topic, sep, num = entry.name.rpartition("-")
            if sep and num.isdigit() and entry.is_dir() and any(entry.glob("*" + SEGMENT_SUFFIX)):
                names.add(topic)
    return sorted(names)


def list_segments(partition_dir: str | Path) -> list[SegmentFile]:
    """Segments of one partition, oldest first (files being deleted or cleaned are ignored)."""
    segs = []
    for entry in os.scandir(partition_dir):
        name = entry.name
        if name.endswith(SEGMENT_SUFFIX) and name[: -len(SEGMENT_SUFFIX)].isdigit():
            segs.append(SegmentFile(int(name[: -len(SEGMENT_SUFFIX)]), entry.path))
    segs.sort(key=lambda s: s.base_offset)
    return segs


# ---------------------------------------------------------------------------------------------
# Read-only views of the indexes


class _IndexView:
    """Entries of a fixed-width index file, read once; `floor(key)` = largest entry with key <= key."""

    def __init__(self, path: str, entry: struct.Struct, key_field: int) -> None:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            data = b""
        n = len(data) // entry.size
        self.entries = _filled([entry.unpack_from(data, i * entry.size) for i in range(n)])
        self._keys = [e[key_field] for e in self.entries]

    def floor(self, key: int) -> tuple | None:
        i = bisect.bisect_right(self._keys, key) - 1
        return self.entries[i] if i >= 0 else None

    def lower(self, key: int) -> tuple | None:
        """Largest entry with key < key."""
        i = bisect.bisect_left(self._keys, key) - 1
        return self.entries[i] if i >= 0 else None


def _filled(entries: list[tuple]) -> list[tuple]:
    """The entries actually written. The broker preallocates the active segment's index files
    with zeros, so a read from outside (while the broker runs) finds (0, 0) slots after the real
    entries: both fields of a real entry only grow, and no real entry is all zeros (an offset
    index entry points past the first batch; a time index entry carries a record timestamp)."""
    out: list[tuple] = []
    for e in entries:
        if e == (0, 0) or (out and (e[0] <= out[-1][0] or e[1] < out[-1][1])):
            break
        out.append(e)
    return out


_OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


def read_aborted(segment: SegmentFile) -> list[tuple[int, int, int]]:
    """(producer id, first offset, last offset) of each aborted transaction in the `.txnindex`."""
    try:
        data = Path(segment.sibling(".txnindex")).read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for i in range(len(data) // TXN_ENTRY_SIZE):
        _version, pid, first, last, _lso = TXN_ENTRY.unpack_from(data, i * TXN_ENTRY_SIZE)
        out.append((pid, first, last))
    return out


def start_position(segment: SegmentFile, start_offset: int, start_timestamp: int | None) -> int:
    """A byte position in the segment at or before the first batch that can hold a record with
    offset >= start_offset and timestamp >= start_timestamp (the indexes are sparse)."""
    target = start_offset
    if start_timestamp is not None:
        # A time index entry (t, r) says every record up to base+r has timestamp <= t; so with
        # t < start_timestamp the records up to base+r can all be skipped.
        hit = _IndexView(segment.sibling(".timeindex"), _TIME_ENTRY, 0).lower(start_timestamp)
        if hit is not None:
            target = max(target, segment.base_offset + hit[1] + 1)
    if target <= segment.base_offset:
        return 0
    hit = _IndexView(segment.sibling(".index"), _OFFSET_ENTRY, 0).floor(target - segment.base_offset)
    return hit[1] if hit is not None else 0


def largest_timestamp(segment: SegmentFile) -> int | None:
    """The last `.timeindex` entry of a closed segment is its largest timestamp (None: no entry).
    Not for the active segment: its time index is sparse and still growing."""
    entries = _IndexView(segment.sibling(".timeindex"), _TIME_ENTRY, 0).entries
    return entries[-1][0] if entries else None


CHUNK = 8 << 20


def batches(path: str, position: int = 0, chunk: int = CHUNK) -> Iterator[tuple[bytes, int, tuple]]:
    """(buffer, position in buffer, header fields) of each whole batch from byte `position` on,
    reading the file in chunks (a batch larger than a chunk gets a buffer of its own)."""
    with open(path, "rb") as f:
        f.seek(position)
        buf = b""
        while True:
            data = f.read(max(chunk, _need(buf)))
            if not data:
                return
            buf = buf + data if buf else data
            pos = 0
            for pos, h in rb.iter_batches(buf):
                yield buf, pos, h.fields()
                pos += h.size
            buf = buf[pos:] if pos else buf


def _need(buf: bytes) -> int:
    """Bytes to read so that the partial batch at the start of `buf` becomes whole."""
    if len(buf) < rb.LOG_OVERHEAD:
        return 0
    return rb.LOG_OVERHEAD + struct.unpack_from(">i", buf, rb.LENGTH_OFFSET)[0] - len(buf)


# ---------------------------------------------------------------------------------------------
# Planning


@dataclass(slots=True)
class SegmentTask:
    """Everything an executor needs to read one segment; picklable."""

    topic: str
    partition: int
    segment: str  # path of the .log file
    base_offset: int
    start_offset: int  # inclusive
    end_offset: int  # exclusive
    isolation: str = READ_COMMITTED
    aborted: list[tuple[int, int, int]] = field(default_factory=list)  # (pid, first, last)
    start_timestamp: int | None = None  # inclusive, ms
    end_timestamp: int | None = None  # exclusive, ms

    @property
    def segment_file(self) -> SegmentFile:
        return SegmentFile(self.base_offset, self.segment)


@dataclass(slots=True)
class PartitionPlan:
    topic: str
    partition: int
    log_start_offset: int  # base offset of the oldest segment (-1: no segment)
    closed_end_offset: int  # base offset of the active segment: the end of closed data
    last_stable_offset: int  # <= closed_end_offset
    start_offset: int  # the requested start, clamped to the log start
    end_offset: int  # where reading stops (exclusive)
    tasks: list[SegmentTask]
    closed_segments: list[SegmentFile]


def plan_partition(
    topic: str,
    partition: int,
    partition_dir: str | Path,
    start_offset: int = 0,
    end_offset: int = NO_LIMIT,
    *,
    isolation: str = READ_COMMITTED,
    scan_from: int | None = None,
    include_active: bool = False,
    start_timestamp: int | None = None,
    end_timestamp: int | None = None,
    log_start_offset: int | None = None,
) -> PartitionPlan:
    """`log_start_offset`: the broker's checkpointed log start (DeleteRecords may move it into
    the oldest segment); records below it are not read."""
    segments = list_segments(partition_dir)
    if not segments:
        return PartitionPlan(topic, partition, -1, start_offset, start_offset, start_offset, start_offset, [], [])
    log_start = max(segments[0].base_offset, log_start_offset or 0)
    closed = segments if include_active else segments[:-1]
    if include_active:
        closed_end = _log_end(segments[-1])
    else:
        closed_end = segments[-1].base_offset
    ends = [s.base_offset for s in segments[1:]] + [closed_end]
    start = max(start_offset, log_start)
    lso = closed_end
    if isolation == READ_COMMITTED:
        lso = _last_stable_offset(
            closed, ends, log_start if scan_from is None else max(scan_from, log_start), closed_end
        )
    end = min(end_offset, lso)
    # only segments ending past `start` can hold (or mark) records read here: a stream plans
    # from its last offset every trigger, and the segments below it are never opened again
    aborted_by_seg = [
        read_aborted(s) if isolation == READ_COMMITTED and seg_end > start else [] for s, seg_end in zip(closed, ends)
    ]
    tasks = []
    for i, (seg, seg_end) in enumerate(zip(closed, ends)):
        lo, hi = max(start, seg.base_offset), min(end, seg_end)
        if lo >= hi:
            continue
        if start_timestamp is not None and not (include_active and seg is segments[-1]):
            # a closed segment's last time entry is its largest timestamp; the active one's
            # index is sparse and still growing, so it never says that
            top = largest_timestamp(seg)
            if top is not None and top < start_timestamp:
                continue  # the time index says nothing here is recent enough
        aborted = sorted(
            {a for later in aborted_by_seg[i:] for a in later if a[2] >= lo and a[1] < hi},
            key=lambda a: a[1],
        )
        tasks.append(
            SegmentTask(
                topic, partition, seg.path, seg.base_offset, lo, hi, isolation, aborted, start_timestamp, end_timestamp
            )
        )
    return PartitionPlan(topic, partition, log_start, closed_end, lso, start, max(start, end), tasks, closed)


def pack_tasks(tasks: list[SegmentTask], max_bytes: int, min_groups: int = 1) -> list[list[SegmentTask]]:
    """Group tasks into Spark partitions: one per segment when `max_bytes` <= 0; otherwise
    consecutive tasks are packed together while their segment files add up to at most
    `max_bytes` (a segment larger than that stays alone), and to at most 1/`min_groups` of all
    the bytes so that every core gets work (as Spark splits files). A Python task costs a
    fraction of a second however little it reads, so many small segments are better read a few
    at a time; segments of Kafka's default size (1 GiB) stay one per partition."""
    if max_bytes <= 0:
        return [[t] for t in tasks]
    total = sum(_size(t.segment) for t in tasks)
    max_bytes = min(max_bytes, max(1, -(-total // max(1, min_groups))))
    groups: list[list[SegmentTask]] = []
    size = 0
    for t in tasks:
        n = _size(t.segment)
        if groups and size + n <= max_bytes:
            groups[-1].append(t)
            size += n
        else:
            groups.append([t])
            size = n
    return groups


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _log_end(segment: SegmentFile) -> int:
    end = segment.base_offset
    for _buf, _pos, f in batches(segment.path):
        end = f[rb.H_BASE_OFFSET] + f[rb.H_LAST_OFFSET_DELTA] + 1
    return end


def _last_stable_offset(closed: list[SegmentFile], ends: list[int], scan_from: int, closed_end: int) -> int:
    """First offset of the oldest transaction without a marker in [scan_from, closed_end)."""
    open_txns: dict[int, int] = {}
    for seg, seg_end in zip(closed, ends):
        if seg_end <= scan_from:
            continue
        for _buf, _pos, f in batches(seg.path, start_position(seg, scan_from, None)):
            attrs = f[rb.H_ATTRIBUTES]
            if not attrs & rb.TRANSACTIONAL_FLAG_MASK:
                continue
            base = f[rb.H_BASE_OFFSET]
            if base + f[rb.H_LAST_OFFSET_DELTA] < scan_from:
                continue
            pid = f[rb.H_PRODUCER_ID]
            if attrs & rb.CONTROL_FLAG_MASK:
                open_txns.pop(pid, None)
            elif pid not in open_txns:
                open_txns[pid] = base
    return min(open_txns.values(), default=closed_end)


# ---------------------------------------------------------------------------------------------
# Reading


def arrow_schema():
    """The Arrow schema `read_task` yields (Spark's mapping of the data source's schema)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("timestamp_type", pa.int32()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("headers", pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))),
            ("producer_id", pa.int64()),
            ("is_transactional", pa.bool_()),
        ]
    )


def read_task(task: SegmentTask, rows_per_batch: int = 65536) -> Iterator:
    """pyarrow.RecordBatch(es) of the records of one task, in offset order."""
    schema = arrow_schema()
    committed = task.isolation == READ_COMMITTED
    aborted = task.aborted
    next_aborted = 0
    aborting: set[int] = set()
    t_lo = task.start_timestamp
    t_hi = task.end_timestamp
    make: Any = FastColumns if DECODER == "numba" else Columns
    append: Any = append_batch_fast if DECODER == "numba" else append_batch
    cols = make()
    pos0 = start_position(task.segment_file, task.start_offset, t_lo)
    for buf, pos, f in batches(task.segment, pos0):
        base = f[rb.H_BASE_OFFSET]
        last = base + f[rb.H_LAST_OFFSET_DELTA]
        if base >= task.end_offset:
            break
        attrs = f[rb.H_ATTRIBUTES]
        pid = f[rb.H_PRODUCER_ID]
        if committed:
            while next_aborted < len(aborted) and aborted[next_aborted][1] <= last:
                aborting.add(aborted[next_aborted][0])
                next_aborted += 1
        if attrs & rb.CONTROL_FLAG_MASK:
            aborting.discard(pid)
            continue
        if last < task.start_offset:
            continue
        txn = bool(attrs & rb.TRANSACTIONAL_FLAG_MASK)
        if txn and committed and pid in aborting:
            continue
        if t_lo is not None and f[rb.H_MAX_TS] < t_lo:
            continue
        append(cols, buf, pos, f, task.start_offset, task.end_offset, t_lo, t_hi)
        if len(cols) >= rows_per_batch:
            yield cols.to_arrow(task.topic, task.partition, schema)
            cols = make()
    if len(cols):
        yield cols.to_arrow(task.topic, task.partition, schema)
