"""The Iceberg path of an export run (`--table-format iceberg`; tables and catalog: `iceberg`).

After `manifest.begin` (see `job`), per topic:

1. `tidelog.<topic>`: unless the table holds a snapshot of this run already, the run's leftover
   data files from an earlier try are deleted, the Spark tasks decode the run's offset ranges and
   write Parquet with pyarrow in the Python workers (`direct.write_files`, the Parquet path's
   writer, the `partition` column kept in the files) into the table's `data/` directory, one file
   per (UTC day, partition) a task meets; then ONE append snapshot adds them all (crash points
   `written` before it, `appended` after it);
2. `tidelog.<topic>_latest` (compacted topics): unless it holds this run's snapshot, the files of
   its current snapshot for the Kafka partitions the run touched and the files the run's append
   added are reduced by Spark to the newest row per (partition, key), keys whose newest row is a
   tombstone dropped; the result is written by pyarrow in the workers (`write_latest`, one file
   per Kafka partition, rolled every `rows_per_latest_file` rows) and ONE overwrite snapshot
   replaces the old files of those partitions with them (copy-on-write; crash points
   `latest-written`, `merged`).

Typed columns (`typed`): the files hold the run's union of the subject's versions, or the
inferred JSON type (`json_infer`, extended with the fields the tasks met past the sample and
recorded in the manifest's pending run before the append), and both snapshots widen their
table's schema to it in their own commit (`IcebergTables.widen`); `_latest`
keeps a key whose newest value did not decode. `check_schema` refuses, before the run begins, a
union the tables' schemas cannot take.

Then `manifest.commit`. A run a crash interrupted, wherever it was, is completed by the next run
(`complete`): the manifest's pending state gives its run id and offsets; a table holding a
snapshot with the run id is skipped (the snapshot summary is read back first), one that does not
gets its uncommitted files of the run deleted and the write done again. So each committed record
is in `tidelog.<topic>` once, each run is at most one snapshot per table, and no file written but
not committed stays on disk. A run that writes no row to a table (only aborted transactions, or
nothing changed in `_latest`) commits no snapshot to it.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from . import direct
from .iceberg import LATEST_COLUMNS, MAIN_COLUMNS, IcebergTables, local_path
from .manifest import Manifest
from .progress import TopicSummary

log = logging.getLogger("tidelog.spark_export")

ICEBERG_CRASH_POINTS = ("begun", "written", "appended", "latest-written", "merged")
READ_SCHEMA = (
    "topic string, partition int, offset long, timestamp timestamp, timestamp_type int, key binary, value binary, "
    "headers array<struct<key: string, value: binary>>, producer_id long, is_transactional boolean"
)


class IcebergRun:
    """The Iceberg deliveries of one `ExportJob` run (`job` gives the options, session, crash
    points and progress)."""

    def __init__(self, job) -> None:
        self.job = job
        self.spark = job.spark
        self.o = job.o
        self._tables: IcebergTables | None = None

    @property
    def tables(self) -> IcebergTables:
        if self._tables is None:
            self._tables = IcebergTables(self.o.warehouse, self.o.iceberg_catalog_uri, save=True)
        return self._tables

    def deliver(self, work: list, run_id: str, serial: int) -> None:
        """The run's snapshots for every topic of `work` (`job._TopicPlan`s)."""
        for p in work:
            t0 = time.monotonic()
            self.deliver_topic(p.topic, p.state, p.offsets, p.scan_from, run_id, serial, p.summary, formats=p.formats)
            p.summary.seconds = time.monotonic() - t0
        self._attach({p.topic: p.state.compacted for p in work})

    def complete(self, manifest: Manifest) -> None:
        """Complete the run a crash interrupted (if any): its offsets are those between the
        committed and the pending state; tables holding its snapshot are skipped."""
        p = manifest.pending
        if p is None:
            return
        log.warning("export run %s was interrupted: completing it", p.run_id)
        done = {}
        for topic, state in p.topics.items():
            offsets = manifest.pending_offsets(topic)
            summary = TopicSummary(topic)
            if offsets:
                scan_from = {n: lo for n, (lo, _hi) in offsets.items()}
                formats = self.job.typed.recorded(topic, state)
                self.deliver_topic(topic, state, offsets, scan_from, p.run_id, p.serial, summary, True, formats)
            done[topic] = summary.to_json()
        self._attach({topic: state.compacted for topic, state in p.topics.items()})
        manifest.commit({"recovered": True, "topics": done})

    def _attach(self, topics: dict[str, bool]) -> None:
        """Register the run's tables in the job's session (as Parquet and Delta runs do), unless
        it cannot read them by name (see `iceberg_source`)."""
        from .iceberg_source import attach_iceberg_tables, names_readable, register

        if not names_readable(self.spark):
            register(self.spark)
            log.info("this session replaces spark_catalog: Iceberg tables not registered by name")
            return

        names = [n for topic, compacted in topics.items() for n in [topic] + [topic + "_latest"] * compacted]
        attach_iceberg_tables(self.spark, self.o.warehouse, [n for n in names if self.tables.exists(n)])

    def check_schema(self, topic: str, formats) -> None:
        """Refuse (`TableFormatError`, before the run begins) typed columns whose union cannot
        widen the tables' schemas (a change of type Iceberg does not promote, bytes to string)."""
        from pyiceberg.exceptions import ValidationError

        from .manifest import TableFormatError

        for name, columns in ((topic, MAIN_COLUMNS), (topic + "_latest", LATEST_COLUMNS)):
            if self.tables.exists(name):
                try:
                    IcebergTables.check_widening(self.tables.load(name), direct.files_schema(columns, formats))
                except (ValueError, ValidationError) as e:
                    raise TableFormatError(f"tidelog.{name}: its schema cannot take the typed columns: {e}") from None

    def deliver_topic(
        self,
        topic: str,
        state,
        offsets: dict[int, tuple[int, int]],
        scan_from: dict[int, int],
        run_id: str,
        serial: int,
        summary: TopicSummary,
        recovering: bool = False,
        formats=None,
    ) -> None:
        """The append to `tidelog.<topic>`, then the rewrite of `_latest` (`state`: the topic's
        `TopicState`); each skipped when its table holds the run's snapshot, so running it again
        with the same run completes it (`recovering`: first delete what an earlier try of the run
        left uncommitted). `formats`: the typed columns (`typed.Formats`): the files have their
        types, and each snapshot widens its table's schema to them in its own commit; inferred
        JSON columns that gained fields while the files were written are recorded in `state` and
        the manifest's pending run before the append (`job.record_written`)."""
        t = self.tables
        props = t.properties(run_id, serial, offsets)
        main = t.ensure(topic, file_schema=direct.files_schema(MAIN_COLUMNS, formats) if formats else None)
        snap = t.snapshot_of(main, run_id)
        if snap is None:
            if recovering:
                t.remove_uncommitted(main, run_id)
            files, written = self._write_main(topic, offsets, scan_from, main, run_id, formats)
            t.remove_strays([f for f, _rows in files], run_id)
            if written is not formats:  # an inferred column gained fields (`json_infer`)
                self.job.record_written(topic, state, written)
                formats = written
            self.job._point("written")
            summary.rows = sum(rows for _f, rows in files)
            if files:
                main_schema = direct.files_schema(MAIN_COLUMNS, formats) if formats else None
                t.commit_append(main, [f for f, _rows in files], props, main_schema)
                main = t.load(topic)
                snap = t.snapshot_of(main, run_id)
        else:
            summary.rows = int(snap.summary.additional_properties.get("added-records", 0))
        self.job._point("appended")
        if not state.compacted:
            return
        latest_schema = direct.files_schema(LATEST_COLUMNS, formats) if formats else None
        latest = t.ensure(topic + "_latest", latest=True, file_schema=latest_schema)
        if t.snapshot_of(latest, run_id) is None:
            if recovering:
                t.remove_uncommitted(latest, run_id)
            new_files = t.added_files(main, snap) if snap is not None else []
            if new_files:
                self._merge_latest(latest, new_files, sorted(offsets), props, run_id, state.formats, formats)
                latest = t.load(topic + "_latest")
        self.job._point("merged")
        summary.latest_rows = t.total_records(latest)

    def _write_main(self, topic, offsets, scan_from, main, run_id: str, formats=None) -> tuple[list, object]:
        """The run's data files of `tidelog.<topic>` ((path, rows) each) and the typed columns
        they were written with (`direct.write_typed_files`)."""
        groups = direct.task_groups(
            self.o.log_dirs, topic, offsets, scan_from, self.o.max_partition_bytes, self.job._parallelism()
        )
        with self.job.progress.topic(self.spark, topic, len(groups)):
            return direct.write_typed_files(
                self.spark,
                groups,
                IcebergTables.data_dir(main),
                tag=f"{run_id}-",
                columns=MAIN_COLUMNS,
                formats=formats,
            )

    def _merge_latest(
        self, latest, new_files: list[str], partitions: list[int], props: dict, run_id: str, typed: dict, formats
    ) -> None:
        """Copy-on-write: the touched partitions' files of `latest` and the run's rows, reduced
        to the newest row per (partition, key), replace those files in one snapshot (`typed`, the
        manifest's `TopicState.formats`, and `formats`: a typed value; a value that did not decode
        is kept, and older files' narrower values read with the new fields null)."""
        from pyspark.sql import functions as F

        from .compaction import newest_per_key
        from .tables import typed_columns

        t = self.tables
        old = t.current_files(latest, partitions)
        read = self.spark.read.schema(typed_columns(READ_SCHEMA, typed))
        columns = LATEST_COLUMNS + (formats.extra_columns() if formats else ())
        both = read.parquet(*new_files).select(*columns)
        if old:
            both = read.parquet(*[local_path(f.file_path) for f in old]).select(*columns).unionByName(both)
        alive = F.col("value").isNotNull() | (F.col("value_raw").isNotNull() if typed else F.lit(False))
        rows = newest_per_key(both).where(alive)
        tasks = max(1, min(len(partitions), self.job._parallelism()))
        out = str(IcebergTables.data_dir(latest))
        written = (
            rows.repartition(tasks, "partition")
            .sortWithinPartitions("partition", "offset")
            .mapInArrow(
                functools.partial(write_latest, out, f"{run_id}-", self.o.rows_per_latest_file, formats),
                "path string, rows long",
            )
            .collect()
        )
        files = [r.path for r in written]
        t.remove_strays(files, run_id)
        self.job._point("latest-written")
        if old or files:
            t.commit_replace(
                latest, old, files, props, direct.files_schema(LATEST_COLUMNS, formats) if formats else None
            )


def write_latest(out: str, tag: str, rows_per_file: int, formats, batches: Iterator) -> Iterator:
    """Write `batches` (sorted by partition, then offset) under `out/partition=<n>/`, a file per
    partition rolled every `rows_per_file` rows: one batch of (path, rows). Runs in a Python worker.
    `formats`: the typed columns (`typed.Formats`) the files hold, or None."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = direct.files_schema(LATEST_COLUMNS, formats)
    columns = schema.names
    dictionary = [c for c in columns if c not in ("value", "value_raw")]
    written: list[list] = []  # [path, rows, partition]; the last one is open
    writer = None
    try:
        for batch in batches:
            batch = pa.RecordBatch.from_arrays(
                [batch.column(c).cast(schema.field(c).type) for c in columns], schema=schema
            )
            parts = batch.column("partition")
            for value in pc.unique(parts).to_pylist():
                part = batch.filter(pc.equal(parts, pa.scalar(value, pa.int32())))
                if writer is None or written[-1][2] != value or written[-1][1] >= rows_per_file:
                    if writer is not None:
                        writer.close()
                    d = Path(out) / f"partition={value}"
                    d.mkdir(parents=True, exist_ok=True)
                    path = str(d / f"part-{tag}{uuid.uuid4().hex[:12]}.parquet")
                    writer = pq.ParquetWriter(path, schema, compression="zstd", use_dictionary=dictionary)
                    written.append([path, 0, value])
                writer.write_batch(part)
                written[-1][1] += part.num_rows
    finally:
        if writer is not None:
            writer.close()
    yield pa.RecordBatch.from_pydict(
        {"path": [w[0] for w in written], "rows": [w[1] for w in written]},
        schema=pa.schema([("path", pa.string()), ("rows", pa.int64())]),
    )
