"""The batch reader of the `tidelog` data source (`datasource`: its options and columns): the
segments a read covers, planned from its options and pushed-down filters, one Spark partition per
segment (or per pack of small ones), decoded on executors into Arrow batches. The streaming reader
(`stream`) plans its micro-batches with it."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)

from . import segments as seg


def reader_formats(o: dict, log_dirs: list[str], topic: str):
    """The `typed.Formats` of options `valueFormat`/`keyFormat` (default "raw"): "registry" with
    the schemas of `schemaRegistryUrl` or, without it, of `_schemas` in the log dirs, of the
    subjects `valueSubjectStrategy`/`keySubjectStrategy` (topic, record, topic-record) or
    `valueSubjects`/`keySubjects` (comma-separated) name (`subjects`); "json" with a type
    inferred from the first records of each partition (`json_infer`); None: none."""
    columns = {}
    for column in ("key", "value"):
        fmt = (o.get(column + "format") or "raw").lower()
        if fmt not in ("raw", "registry", "json"):
            raise ValueError(f"tidelog: {column}Format must be raw, registry or json, not {fmt!r}")
        if fmt != "raw":
            columns[column] = fmt
    if not columns:
        return None
    from .column_formats import topic_formats
    from .registry_schemas import SchemaSource
    from .subjects import Naming

    namings = {c: Naming.of(o.get(c + "subjectstrategy"), (o.get(c + "subjects") or "").split(",")) for c in columns}
    source = SchemaSource(log_dirs, o.get("schemaregistryurl"), namings)
    return topic_formats(lambda: source, log_dirs, topic, columns, {}, {})[0]


def _int(v: Any) -> int:
    return int(v)


def _opt_int(options: dict, key: str) -> int | None:
    v = options.get(key)
    return None if v in (None, "") else int(v)


def _ms_floor(v) -> int:
    """Milliseconds since the epoch of a pushed-down timestamp literal, rounded down."""
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.UTC)
        delta = v - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
        micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return micros // 1000
    raise TypeError(v)


def _ms_ceil(v) -> int:
    if isinstance(v, _dt.datetime) and v.microsecond % 1000:
        return _ms_floor(v) + 1
    return _ms_floor(v)


class _Bounds:
    """Intersection of pushed-down ranges: lo inclusive, hi exclusive; None for unbounded."""

    def __init__(self, lo: int | None = None, hi: int | None = None) -> None:
        self.lo, self.hi = lo, hi

    def at_least(self, v: int) -> None:
        self.lo = v if self.lo is None else max(self.lo, v)

    def below(self, v: int) -> None:
        self.hi = v if self.hi is None else min(self.hi, v)


class TidelogReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        o = {k.lower(): v for k, v in options.items()}
        self.log_dirs = [p for p in (o.get("path") or o.get("logdirs") or "").split(",") if p]
        if not self.log_dirs:
            raise ValueError("tidelog: load(<log dir>) or option logDirs is required")
        self.topic: str = o.get("topic") or ""
        if not self.topic:
            raise ValueError("tidelog: option topic is required")
        parts = o.get("partitions")
        self._partitions_option = {int(p) for p in parts.split(",")} if parts else None
        self._offsets_option = (_opt_int(o, "startingoffset"), _opt_int(o, "endingoffset"))
        self._times_option = (_opt_int(o, "startingtimestamp"), _opt_int(o, "endingtimestamp"))
        self._reset_pushdown()
        self.per_partition = {int(k): v for k, v in json.loads(o.get("offsets") or "{}").items()}
        self.scan_from = {int(k): int(v) for k, v in json.loads(o.get("scanfrom") or "{}").items()}
        self.isolation = (o.get("isolationlevel") or seg.READ_COMMITTED).lower()
        if self.isolation not in (seg.READ_COMMITTED, seg.READ_UNCOMMITTED):
            raise ValueError(
                f"tidelog: isolationLevel must be read_committed or read_uncommitted, not {self.isolation!r}"
            )
        self.include_active = (o.get("includeactivesegment") or "false").lower() == "true"
        self.rows_per_batch = int(o.get("rowsperbatch") or 65536)
        self.push = (o.get("pushfilters") or "true").lower() == "true"
        self.max_partition_bytes = int(o.get("maxpartitionbytes") or 0)
        self.min_partitions = int(o.get("minpartitions") or 2)
        self.formats = reader_formats(o, self.log_dirs, self.topic)

    def read_batches(self, task: seg.SegmentTask) -> Iterator:
        """The batches of one task, typed columns (`valueFormat`/`keyFormat` registry) decoded."""
        if self.formats:
            from .typed import read_task

            return read_task(task, self.formats, self.rows_per_batch)
        return seg.read_task(task, self.rows_per_batch)

    # -- pushdown ---------------------------------------------------------------------------

    def _reset_pushdown(self) -> None:
        self.partitions_wanted = self._partitions_option
        self.offsets = _Bounds(*self._offsets_option)
        self.times = _Bounds(*self._times_option)

    def pushFilters(self, filters):
        # pyspark keeps the reader a pushdown modified with the DataFrame it came from, and reuses
        # it for the next query on that DataFrame: start from the options every time.
        self._reset_pushdown()
        for f in filters:
            if not self.push:
                yield f
                continue
            if not self._push(f):
                yield f

    def _push(self, f) -> bool:
        col = f.attribute
        if len(col) != 1 or col[0] not in ("offset", "timestamp", "partition"):
            return False
        name = col[0]
        if name == "partition":
            if isinstance(f, EqualTo):
                values = {int(f.value)}
            elif isinstance(f, In):
                values = {int(v) for v in f.value}
            else:
                return False
            self.partitions_wanted = values if self.partitions_wanted is None else self.partitions_wanted & values
            return True
        if name == "offset":
            b, floor, ceil = self.offsets, _int, _int
        else:
            b, floor, ceil = self.times, _ms_floor, _ms_ceil
        # Timestamps are whole milliseconds: ts > v <=> ts >= floor(v)+1; ts >= v <=> ts >= ceil(v).
        if isinstance(f, GreaterThan):
            b.at_least(floor(f.value) + 1)
        elif isinstance(f, GreaterThanOrEqual):
            b.at_least(ceil(f.value))
        elif isinstance(f, LessThan):
            b.below(ceil(f.value))
        elif isinstance(f, LessThanOrEqual):
            b.below(floor(f.value) + 1)
        elif isinstance(f, EqualTo):
            b.at_least(ceil(f.value))
            b.below(floor(f.value) + 1)
        else:
            return False
        return True

    # -- planning and reading ---------------------------------------------------------------

    def plans(self) -> list[seg.PartitionPlan]:
        out = []
        starts = seg.log_start_offsets(self.log_dirs)
        for partition, pdir in seg.partition_dirs(self.log_dirs, self.topic).items():
            if self.partitions_wanted is not None and partition not in self.partitions_wanted:
                continue
            lo = self.offsets.lo or 0
            hi = seg.NO_LIMIT if self.offsets.hi is None else self.offsets.hi
            if partition in self.per_partition:
                p_lo, p_hi = self.per_partition[partition]
                lo, hi = max(lo, int(p_lo)), min(hi, int(p_hi))
            out.append(
                seg.plan_partition(
                    self.topic,
                    partition,
                    pdir,
                    lo,
                    hi,
                    isolation=self.isolation,
                    scan_from=self.scan_from.get(partition),
                    include_active=self.include_active,
                    start_timestamp=self.times.lo,
                    end_timestamp=self.times.hi,
                    log_start_offset=starts.get((self.topic, partition)),
                )
            )
        return out

    def partitions(self):
        tasks = [t for plan in self.plans() for t in plan.tasks]
        return [InputPartition(g) for g in seg.pack_tasks(tasks, self.max_partition_bytes, self.min_partitions)] or [
            InputPartition([])
        ]

    def read(self, partition: InputPartition) -> Iterator:
        for task in partition.value:
            yield from self.read_batches(task)
