"""Spark Structured Streaming from segment files: `spark.readStream.format("tidelog")`.

    register(spark)
    q = (spark.readStream.format("tidelog")
         .option("topic", "orders")                   # required
         .option("startingOffsets", "earliest")       # default; "latest", or JSON {"0": 120, "1": -2}
         .option("maxOffsetsPerTrigger", 100000)      # default: no limit
         .load("/var/lib/tidelog")                    # the broker's log.dirs, comma-separated
         .writeStream.format("parquet").option("checkpointLocation", ckpt).start(out))

The rows and columns are the batch source's (`datasource`), and so are the options `partitions`,
`isolationLevel` (read_committed by default: no control batches, no records of aborted
transactions, nothing at or above the last stable offset), `includeActiveSegment`,
`maxPartitionBytes`/`minPartitions` and `rowsPerBatch`. The batch-only options
(`startingOffset`, `endingOffset`, `startingTimestamp`, `endingTimestamp`) are refused.

Offsets: a JSON object `{"<partition>": <next offset>}`, partitions in numeric order: every
record below it has been handed to Spark (or was never to be read: control batches, aborted
records, records deleted by retention). `startingOffsets` gives a query's first offset per
partition: `earliest` (the log start), `latest` (the current end, as `latestOffset` defines it),
or JSON whose values are offsets, -2 (earliest) or -1 (latest); partitions it leaves out, and
partitions that appear later, start at the earliest. A restarted query resumes from its checkpoint
and ignores `startingOffsets`.

`latestOffset(start, limit)` is, per partition, the read_committed bound of the data on disk:
the last stable offset of the closed segments (the first offset of the oldest transaction
without a marker, else the active segment's base offset); with `includeActiveSegment` the LSO
of all data up to the active segment's last whole batch; with `isolationLevel=read_uncommitted`
the end of that data itself. So a stream only moves past closed data, and a new segment is
picked up at the first trigger after the broker rolls the one before it. `maxOffsetsPerTrigger`
(Spark's `ReadMaxRows`) caps the offsets a micro-batch spans, over all partitions (offsets, not
rows: a micro-batch reads at most that many rows), shared out max-min fairly by each
partition's backlog. `Trigger.AvailableNow` stops at the data that existed when the query
started (each partition's closed end then; a transaction whose marker came later may be read
up to that end), in as many micro-batches as the limit makes.

A micro-batch (start, end) reads, per partition, the records with start <= offset < end,
read_committed as the batch source reads them, one Spark partition per segment (Arrow batches
decoded on executors, as the batch source does). Planning it from (start, end) alone gives the
same rows every time, so a query killed anywhere and restarted from its checkpoint re-plans
the micro-batch Spark logged but did not commit and goes on from there: with an idempotent sink
(the file sink, read through its `_spark_metadata` log) each record lands exactly once.
That holds for closed segments; records of the active segment above the broker's high watermark
(`includeActiveSegment` on a replica set) may still be truncated.

Retention: when the oldest segments were deleted before the stream read them (the log start is
above the stream's offset), a warning on logger `tidelog.spark_export.stream` names the lost
offset range and the stream goes on from the log start; a segment deleted between planning and
reading is reported the same way by the executor. Nothing is skipped silently.

pyspark 4.2 added admission control (`latestOffset(start, limit)`) and `Trigger.AvailableNow`
for Python sources; with 4.0/4.1 `maxOffsetsPerTrigger` is ignored (a warning) and
`latestOffset()` continues from the last offset it returned (untested: the suite runs 4.2).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from . import segments as seg
from .reader import TidelogReader

try:  # pyspark >= 4.2
    from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - pyspark 4.0/4.1
    ReadMaxRows = None  # type: ignore[assignment,misc]  # no admission control before 4.2
    SupportsTriggerAvailableNow = object  # type: ignore[assignment,misc]  # no such hook before 4.2

log = logging.getLogger(__name__)

EARLIEST = -2
LATEST = -1
BATCH_ONLY_OPTIONS = ("startingoffset", "endingoffset", "startingtimestamp", "endingtimestamp", "offsets", "scanfrom")


def encode(offsets: dict[int, int]) -> dict[str, int]:
    """The offset JSON Spark stores: partitions as strings, in numeric order (Spark compares
    offsets as JSON text, so the same positions must always give the same text)."""
    return {str(p): int(offsets[p]) for p in sorted(offsets)}


def decode(offset: dict | None) -> dict[int, int]:
    return {int(p): int(o) for p, o in (offset or {}).items()}


def parse_starting_offsets(value: str | None, topic: str) -> int | dict[int, int]:
    """EARLIEST, LATEST, or {partition: offset or EARLIEST/LATEST} from option `startingOffsets`
    (Kafka's source nests the JSON under the topic name: that form is accepted too)."""
    v = (value or "earliest").strip()
    if v.lower() == "earliest":
        return EARLIEST
    if v.lower() == "latest":
        return LATEST
    try:
        spec = json.loads(v)
    except ValueError:
        spec = None
    if isinstance(spec, dict) and isinstance(spec.get(topic), dict):
        spec = spec[topic]
    if not isinstance(spec, dict) or not all(isinstance(o, int) and o >= EARLIEST for o in spec.values()):
        raise ValueError(
            f"tidelog: startingOffsets must be earliest, latest or JSON {{partition: offset}}, not {value!r}"
        )
    return {int(p): o for p, o in spec.items()}


def admit(ranges: dict[int, tuple[int, int]], max_offsets: int) -> dict[int, int]:
    """End offsets that span at most `max_offsets` offsets in all, given each partition's
    available [start, end): the smallest backlogs are served whole first, then the rest is shared
    equally (max-min fairness), so any backlog makes progress when max_offsets >= 1."""
    lag = {p: e - s for p, (s, e) in ranges.items()}
    if sum(lag.values()) <= max_offsets:
        return {p: e for p, (_s, e) in ranges.items()}
    out = {}
    remaining, left = max_offsets, len(ranges)
    for p in sorted(ranges, key=lambda p: (lag[p], p)):
        share = min(lag[p], remaining // left)
        out[p] = ranges[p][0] + share
        remaining -= share
        left -= 1
    return out


class TidelogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader. Spark keeps one per query in a Python process on the driver
    (`initialOffset`, `latestOffset`, `partitions`, `commit`), and pickles another to the
    executors, whose `read` uses nothing but its partition's tasks and the options."""

    def __init__(self, options: dict[str, Any]) -> None:
        o = {k.lower(): v for k, v in options.items()}
        bad = [k for k in BATCH_ONLY_OPTIONS if o.get(k) not in (None, "")]
        if bad:
            raise ValueError(f"tidelog: option(s) {', '.join(bad)} are for batch reads; a stream takes startingOffsets")
        self.source = TidelogReader(options)  # the batch source's options, parsed once
        self.starting = parse_starting_offsets(o.get("startingoffsets"), self.source.topic)
        limit = o.get("maxoffsetspertrigger")
        self.max_offsets = None if limit in (None, "") else int(limit)
        if self.max_offsets is not None and self.max_offsets < 1:
            raise ValueError("tidelog: maxOffsetsPerTrigger must be at least 1")
        if self.max_offsets is not None and ReadMaxRows is None:
            log.warning("tidelog: maxOffsetsPerTrigger needs pyspark 4.2 (admission control); ignored")
        self._stable: dict[int, int] = {}  # partition -> an offset the LSO scan may start at
        self._target: dict[int, int] | None = None  # Trigger.AvailableNow: per partition, where to stop
        self._last: dict[int, int] | None = None  # the last end returned (pyspark < 4.2 gives no start)
        self._reported: dict[int, int] = {}  # partition -> highest log start a loss was reported up to

    # -- planning (driver) ---------------------------------------------------------------------

    def _dirs(self) -> dict[int, Any]:
        wanted = self.source.partitions_wanted
        dirs = seg.partition_dirs(self.source.log_dirs, self.source.topic)
        return {p: d for p, d in dirs.items() if wanted is None or p in wanted}

    def _plan(
        self,
        partition: int,
        pdir,
        start: int,
        end: int = seg.NO_LIMIT,
        scan_from: int | None = None,
        isolation: str | None = None,
        log_starts: dict | None = None,
    ) -> seg.PartitionPlan:
        if log_starts is None:
            log_starts = seg.log_start_offsets(self.source.log_dirs)
        plan = seg.plan_partition(
            self.source.topic,
            partition,
            pdir,
            start,
            end,
            isolation=isolation or self.source.isolation,
            scan_from=scan_from,
            include_active=self.source.include_active,
            log_start_offset=log_starts.get((self.source.topic, partition)),
        )
        if plan.log_start_offset >= 0 and (isolation or self.source.isolation) == seg.READ_COMMITTED:
            # an LSO is a valid place for the next scan to start: every transaction that began
            # below it had its marker in the closed data
            self._stable[partition] = max(self._stable.get(partition, 0), plan.last_stable_offset)
        return plan

    def _earliest(self, partition: int, pdir, log_starts: dict) -> int:
        """The log start, as `plan_partition` clamps to it: the oldest segment's base offset or
        the broker's checkpointed log start (DeleteRecords), whichever is higher."""
        segments = seg.list_segments(pdir)
        checkpointed = log_starts.get((self.source.topic, partition), 0)
        return max(segments[0].base_offset if segments else 0, checkpointed)

    def _available(self, partition: int, pdir, start: int, log_starts: dict) -> tuple[int, int]:
        """[from, to): what the stream can read in `partition` from `start` on (`from` > `start`
        when retention deleted offsets it had not read; reported here)."""
        plan = self._plan(
            partition, pdir, start, scan_from=max(start, self._stable.get(partition, start)), log_starts=log_starts
        )
        self._report_loss(partition, start, plan.start_offset)
        end = plan.end_offset
        if self._target is not None:
            end = max(plan.start_offset, min(end, self._target.get(partition, 0)))
        return plan.start_offset, end

    def _report_loss(self, partition: int, start: int, available_from: int) -> None:
        if available_from > start and self._reported.get(partition, -1) < available_from:
            log.warning(
                "%s-%d: offsets [%d, %d) were deleted by retention before the stream read them; continuing at %d",
                self.source.topic,
                partition,
                start,
                available_from,
                available_from,
            )
            self._reported[partition] = available_from

    def initialOffset(self) -> dict:
        log_starts = seg.log_start_offsets(self.source.log_dirs)
        out = {}
        for p, pdir in self._dirs().items():
            want = self.starting if isinstance(self.starting, int) else self.starting.get(p, EARLIEST)
            if want >= 0:
                out[p] = want
                continue
            out[p] = self._earliest(p, pdir, log_starts)
            if want == LATEST:
                out[p] = self._available(p, pdir, out[p], log_starts)[1]
        return encode(out)

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """Per partition, the end of what can be read from `start` (see the module docstring),
        capped by a `ReadMaxRows` limit and, under Trigger.AvailableNow, by the target."""
        if start is None:  # pyspark < 4.2: no start, no limit
            start = self._last if self._last is not None else self.initialOffset()
        begin = decode(start)
        log_starts = seg.log_start_offsets(self.source.log_dirs)
        ranges = {}
        for p, pdir in self._dirs().items():
            s = begin[p] if p in begin else self._earliest(p, pdir, log_starts)
            ranges[p] = self._available(p, pdir, s, log_starts)
        ends = {p: e for p, (_s, e) in ranges.items()}
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            ends = admit(ranges, limit.max_rows)
        # a partition no longer on disk (or no longer wanted) keeps its offset
        out = {**begin, **ends}
        self._last = decode(encode(out))
        return encode(out)

    def getDefaultReadLimit(self):
        """`ReadMaxRows(maxOffsetsPerTrigger)`, else read everything available."""
        if self.max_offsets is None or ReadMaxRows is None:
            return super().getDefaultReadLimit()
        return ReadMaxRows(self.max_offsets)

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: stop at each partition's closed end as of now (base offset of
        the active segment, or with includeActiveSegment its last whole batch)."""
        log_starts = seg.log_start_offsets(self.source.log_dirs)
        target = {}
        for p, pdir in self._dirs().items():
            plan = self._plan(p, pdir, seg.NO_LIMIT, isolation=seg.READ_UNCOMMITTED, log_starts=log_starts)
            target[p] = plan.closed_end_offset if plan.log_start_offset >= 0 else 0
        self._target = target

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """The tasks of the micro-batch (start, end): planned from the two offsets alone, so a
        micro-batch replayed after a restart reads what it read the first time."""
        begin, stop = decode(start), decode(end)
        dirs = self._dirs()
        log_starts = seg.log_start_offsets(self.source.log_dirs)
        tasks: list[seg.SegmentTask] = []
        for p, e in stop.items():
            pdir = dirs.get(p)
            if pdir is None:
                continue
            s = begin[p] if p in begin else self._earliest(p, pdir, log_starts)
            if e <= s:
                continue
            # `e` was at or below an LSO, so the LSO scan can start there (or at a later LSO)
            plan = self._plan(p, pdir, s, e, scan_from=max(e, self._stable.get(p, e)), log_starts=log_starts)
            self._report_loss(p, s, plan.start_offset)
            if plan.end_offset < e:
                log.warning(
                    "%s-%d: micro-batch end %d is past the data on disk (%d)", self.source.topic, p, e, plan.end_offset
                )
            tasks += plan.tasks
        groups = seg.pack_tasks(tasks, self.source.max_partition_bytes, self.source.min_partitions)
        return [InputPartition(g) for g in groups]

    def commit(self, end: dict) -> None:
        """Nothing to release: segments are read in place and the broker owns them."""

    # -- reading (executors) -------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator:
        for task in partition.value:
            try:
                yield from self.source.read_batches(task)
            except FileNotFoundError:  # raised when the segment is opened, before any row
                log.warning(
                    "%s-%d: segment %s was deleted by retention before the stream read it: offsets [%d, %d) lost",
                    task.topic,
                    task.partition,
                    task.segment,
                    task.start_offset,
                    task.end_offset,
                )
