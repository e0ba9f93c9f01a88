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

Delta tables are written by Spark (`delta`): a Delta commit has to list its files and their
statistics, which Delta's writer does.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
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
    from .datasource import TidelogReader, export_options

    reader = TidelogReader(
        {
            "path": ",".join(str(d) for d in log_dirs),
            **export_options(topic, offsets, scan_from, max_partition_bytes, min_partitions),
        }
    )
    return [p.value for p in reader.partitions() if p.value]


def write_tasks(
    tasks: list[seg.SegmentTask], out: str, tag: str, columns: tuple[str, ...] = FILE_COLUMNS
) -> list[tuple[str, int]]:
    """Decode `tasks` and write their rows under `out`: [(file, rows)]. Runs in a Python worker.

    `columns`: those of the files (Iceberg's files also hold `partition`, see `iceberg`)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = seg.arrow_schema()
    file_schema = pa.schema([schema.field(c) for c in columns])
    # Values are mostly distinct: a dictionary of them is built, then dropped as too large (~9% of
    # the write for 100-byte random values). Keys, topics, producer ids repeat.
    dictionary = [c for c in columns if c != "value"]
    writers: dict[tuple[Any, int], tuple[Any, Path, list[int]]] = {}
    try:
        for task in tasks:
            for batch in seg.read_task(task):
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


def _run_group(
    out: str, tag: str, columns: tuple[str, ...], items: Iterator[tuple[int, list[seg.SegmentTask]]]
) -> Iterator[tuple[str, int]]:
    for n, tasks in items:
        yield from write_tasks(tasks, out, f"{tag}{n:05d}", columns)


def write(
    spark, groups: list[list[seg.SegmentTask]], out: Path, tag: str = "", columns: tuple[str, ...] = FILE_COLUMNS
) -> int:
    """One Spark job writing every group's rows under `out` (a task per group): the row count."""
    return sum(rows for _f, rows in write_files(spark, groups, out, tag, columns))


def write_files(
    spark, groups: list[list[seg.SegmentTask]], out: Path, tag: str = "", columns: tuple[str, ...] = FILE_COLUMNS
) -> list[tuple[str, int]]:
    """`write`, returning the files written and their row counts."""
    if not groups:
        return []
    rdd = spark.sparkContext.parallelize(list(enumerate(groups)), len(groups))
    return rdd.mapPartitions(functools.partial(_run_group, str(out), tag, columns)).collect()
