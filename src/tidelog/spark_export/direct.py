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
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import segments as seg

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


def _run_group(
    out: str,
    tag: str,
    describe: Callable | None,
    columns: tuple[str, ...],
    formats,
    items: Iterator[tuple[int, list[seg.SegmentTask]]],
) -> Iterator[Any]:
    for n, tasks in items:
        written = write_tasks(tasks, out, f"{tag}{n:05d}", columns, formats)
        _injected_fault(f"{tag}{n:05d}")
        for path, rows in written:
            yield (path, rows) if describe is None else describe(path, rows)


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
    `iceberg.IcebergTables.remove_strays`)."""
    if not groups:
        return []
    rdd = spark.sparkContext.parallelize(list(enumerate(groups)), len(groups))
    return rdd.mapPartitions(functools.partial(_run_group, str(out), tag, describe, columns, formats)).collect()


def write(spark, groups: list[list[seg.SegmentTask]], out: Path, tag: str = "", formats=None) -> int:
    """`write_files` without descriptions, then the files no successful task attempt returned
    (those a failed or duplicate attempt left under `out`) deleted: the row count."""
    files = write_files(spark, groups, out, tag, formats=formats)
    keep = {Path(f) for f, _rows in files}
    if out.exists():
        for f in out.rglob("*.parquet"):
            if f not in keep:
                f.unlink()
    return sum(rows for _f, rows in files)
