"""The Parquet export's write: each Spark task decodes its segments and writes the Parquet files
itself, with pyarrow, in the Python worker that decoded them.

The records never cross into the JVM (no Arrow-to-row conversion, no sort by partition columns,
no second copy of every value): Spark only schedules the tasks, one per group of segments as the
`tidelog` data source plans them, and collects the names and row counts of the files written. So
the decoding and the write are spread over the executors as the data source's read is, and the
output is what Spark's own writer makes of the same rows: zstd Parquet in Hive-style directories
`date=<UTC day>/partition=<n>/` (the `partition` column lives in the path, like Spark's), with a
file per (date, partition) a task meets. The files must land where the driver publishes them
from: a local directory with `local[*]`, a shared path on a cluster (as for Spark's own writer).
A task attempt that fails after writing (a lost executor, a retried or speculative attempt) leaves
files that no successful attempt returned: the driver deletes them before publishing (`write`), so
each record is published once, as Spark's output committer ensures for its own writer.

Delta tables are written the same way, into the table's directory, and `deltalog.describe` runs
in the task after each file: its size and Delta statistics from the footer, so that the driver
can commit the files to the Delta log (`delta`, `deltalog`).

Iceberg tables are written the same way too, into the table's `data/` directory, with the
`partition` column kept in the files (`columns`: an Iceberg reader takes values from the files,
not from directory names); the driver adds the files to the table in one pyiceberg snapshot
(`iceberg_job`). Both delete the files of failed task attempts beside those the successful ones
returned, so that a table never references them: Delta after its commit, which names only the
returned files (`deltalog.remove_strays`), Iceberg before its snapshot (`IcebergTables.remove_strays`).

A column whose type is inferred from JSON values (`json_infer`) may meet fields its type lacks
after the files were begun: `write_inferring` extends the type with what the tasks reported and
rewrites only the groups that reported; their first files are strays like a failed attempt's.
Every table format writes through it (`write_typed_files`), Delta and Iceberg then committing
the files with the extended type.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import segments as seg

log = logging.getLogger("tidelog.spark_export")

FILE_COLUMNS = (
    "topic",
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "headers",
    "producer_id",
    "is_transactional",
)


def task_groups(
    log_dirs: list[Path],
    topic: str,
    offsets: dict[int, tuple[int, int]],
    scan_from: dict[int, int],
    max_partition_bytes: int,
    min_partitions: int,
) -> list[list[seg.SegmentTask]]:
    """The segment tasks of the export, grouped as the data source groups them into Spark partitions."""
    from .datasource import export_options
    from .reader import TidelogReader

    reader = TidelogReader(
        {
            "path": ",".join(str(d) for d in log_dirs),
            **export_options(topic, offsets, scan_from, max_partition_bytes, min_partitions),
        }
    )
    return [p.value for p in reader.partitions() if p.value]


def files_schema(columns: tuple[str, ...] = FILE_COLUMNS, formats=None):
    """The Arrow schema of files holding `columns` (`segments.arrow_schema`'s types), the typed ones
    of `formats` (a `typed.Formats`) in their column types and followed by its extra columns."""
    import pyarrow as pa

    if not formats:
        schema = seg.arrow_schema()
        return pa.schema([schema.field(c) for c in columns])
    schema = formats.schema(seg.arrow_schema())
    return pa.schema([schema.field(c) for c in columns + formats.extra_columns()])


def write_tasks(
    tasks: list[seg.SegmentTask], out: str, tag: str, columns: tuple[str, ...] = FILE_COLUMNS, formats=None
) -> list[tuple[str, int]]:
    """Decode `tasks` and write their rows under `out`: [(file, rows)]. Runs in a Python worker.

    `columns`: those of the files (Iceberg's files also hold `partition`, see `iceberg`);
    `formats`: a `typed.Formats` whose columns are decoded (its extra columns follow `columns`)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from . import typed

    file_schema = files_schema(columns, formats)
    columns = tuple(file_schema.names)
    # Values are mostly distinct: a dictionary of them is built, then dropped as too large (~9% of
    # the write for 100-byte random values). Keys, topics, producer ids repeat.
    dictionary = [
        c for c in columns if c not in ("value", "value_raw") and not pa.types.is_nested(file_schema.field(c).type)
    ]
    writers: dict[tuple[Any, int], tuple[Any, Path, list[int]]] = {}
    try:
        for task in tasks:
            for batch in typed.read_task(task, formats) if formats else seg.read_task(task):
                days = pc.cast(batch.column("timestamp"), pa.date32())
                body = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], schema=file_schema)
                unique = pc.unique(days).to_pylist()  # one day, except where a day ends
                for day in unique:
                    part = body if len(unique) == 1 else body.filter(pc.equal(days, pa.scalar(day, pa.date32())))
                    key = (day, task.partition)
                    if key not in writers:
                        d = Path(out) / f"date={day.isoformat()}" / f"partition={task.partition}"
                        d.mkdir(parents=True, exist_ok=True)
                        path = d / f"part-{tag}-{uuid.uuid4().hex[:12]}.parquet"
                        writers[key] = (
                            pq.ParquetWriter(str(path), file_schema, compression="zstd", use_dictionary=dictionary),
                            path,
                            [0],
                        )
                    w, _path, rows = writers[key]
                    w.write_batch(part)
                    rows[0] += part.num_rows
    finally:
        for w, _path, _rows in writers.values():
            w.close()
    return [(str(path), rows[0]) for _w, path, rows in writers.values()]


TASK_FAULT_ENV = "TIDELOG_EXPORT_TASK_FAULT"


class _NewTypes(dict):
    """A group's report: column -> the type of the members its inferred column's type lacked."""


def _run_group(
    out: str,
    tag: str,
    describe: Callable | None,
    columns: tuple[str, ...],
    formats,
    items: Iterator[tuple[int, list[seg.SegmentTask]]],
) -> Iterator[tuple[int, Any]]:
    """(group, file description) per file written, then (group, `_NewTypes`) when its inferred
    columns met members their types lack."""
    from . import typed

    for n, tasks in items:
        typed.take_new_types()  # a reused worker: nothing of an earlier task
        written = write_tasks(tasks, out, f"{tag}{n:05d}", columns, formats)
        _injected_fault(f"{tag}{n:05d}")
        for path, rows in written:
            yield n, ((path, rows) if describe is None else describe(path, rows))
        new = typed.take_new_types()
        if new:
            yield n, _NewTypes(new)


def _injected_fault(group: str) -> None:
    """Tests: with TIDELOG_EXPORT_TASK_FAULT=<dir>, each group's first attempt fails after writing
    its files, as a lost executor would; Spark retries it (a master with retries: `local[n,f]`)."""
    import os

    root = os.environ.get(TASK_FAULT_ENV)
    if root:
        marker = Path(root) / group
        if not marker.exists():
            marker.touch()
            raise RuntimeError(f"injected failure of task group {group} after writing its files")


def write_files(
    spark,
    groups: list[list[seg.SegmentTask]],
    out: Path,
    tag: str = "",
    describe: Callable | None = None,
    columns: tuple[str, ...] = FILE_COLUMNS,
    formats=None,
) -> list:
    """One Spark job writing every group's rows under `out` (a task per group), files named
    `part-<tag><group>-<random>.parquet` holding `columns`: per file, `describe(path, rows)` as
    the task that wrote it returned it ((path, rows) without `describe`; it must be importable in
    the workers). Only the files of successful task attempts are returned, so only they are
    published or committed; the caller deletes the others (`write`, `deltalog.remove_strays`,
    `iceberg.IcebergTables.remove_strays`). With inferred columns (`formats.infers`) the
    members their types lack stay flagged in the rows: `write_inferring` writes them."""
    return [item for _n, item in _write(spark, groups, out, tag, describe, columns, formats)[0]]


def _write(spark, groups, out, tag, describe, columns, formats) -> tuple[list[tuple[int, Any]], dict[int, dict]]:
    """(group, file description) per file, and the groups' reports (`_NewTypes`) by group."""
    if not groups:
        return [], {}
    rdd = spark.sparkContext.parallelize(list(enumerate(groups)), len(groups))
    results = rdd.mapPartitions(functools.partial(_run_group, str(out), tag, describe, columns, formats)).collect()
    files = [(n, item) for n, item in results if not isinstance(item, _NewTypes)]
    return files, {n: dict(item) for n, item in results if isinstance(item, _NewTypes)}


def write_inferring(
    spark,
    groups: list[list[seg.SegmentTask]],
    out: Path,
    formats,
    tag: str = "",
    describe: Callable | None = None,
    columns: tuple[str, ...] = FILE_COLUMNS,
) -> tuple[list, Any]:
    """`write_files` for formats with inferred columns (`json_infer`): the files and the formats
    they were written with. When groups report members their columns' types lack, the types are
    extended with every report and those groups alone are written again (tag `<tag>x`); their
    first files are returned by no one (the caller deletes them as it does a failed attempt's)."""
    from .json_arrow import widen

    files, reports = _write(spark, groups, out, tag, describe, columns, formats)
    if not reports:
        return [item for _n, item in files], formats
    new: dict[str, Any] = {}
    for report in reports.values():
        for column, t in report.items():
            new[column] = widen(new.get(column), t)
    wider = formats.with_new_types(new)
    redo = sorted(reports)
    log.info("inferred columns gained fields in %d of %d task groups: writing those again", len(redo), len(groups))
    again, still = _write(spark, [groups[n] for n in redo], out, tag + "x", describe, columns, wider)
    if still:
        log.warning("%d task groups met fields outside the extended type: their rows stay flagged", len(still))
    kept = [item for n, item in files if n not in reports]
    return kept + [item for _n, item in again], wider


def write_typed_files(
    spark,
    groups: list[list[seg.SegmentTask]],
    out: Path,
    tag: str = "",
    describe: Callable | None = None,
    columns: tuple[str, ...] = FILE_COLUMNS,
    formats=None,
) -> tuple[list, Any]:
    """`write_inferring` when `formats` has inferred columns, else `write_files`: the files
    returned and the formats they were written with (`formats` itself unless a column gained
    fields). The caller deletes the files no one returned, as after `write_files`."""
    if formats is not None and formats.infers:
        return write_inferring(spark, groups, out, formats, tag, describe, columns)
    return write_files(spark, groups, out, tag, describe, columns, formats), formats


def write(spark, groups: list[list[seg.SegmentTask]], out: Path, tag: str = "", formats=None) -> tuple[int, Any]:
    """`write_files` without descriptions (`write_inferring` for formats with inferred
    columns), then the files no successful task attempt returned (those a failed or duplicate
    attempt, or a first write of a rewritten group, left under `out`) deleted: the row count and
    the formats the files were written with."""
    files, formats = write_typed_files(spark, groups, out, tag, formats=formats)
    keep = {Path(f) for f, _rows in files}
    if out.exists():
        for f in out.rglob("*.parquet"):
            if f not in keep:
                f.unlink()
    return sum(rows for _f, rows in files), formats
