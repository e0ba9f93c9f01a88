"""The export/compaction job: closed segments -> `tidelog.<topic>` (and `tidelog.<topic>_latest`).

One run:

1. recover: finish or undo a run a crash interrupted (see `manifest`), delete garbage;
2. plan: per topic-partition, read from the manifest's `next_offset` to the end of the closed
   segments, capped at their last stable offset (an open transaction is exported by a later run
   once its marker is in a closed segment); segments deleted by retention before export are
   reported as gaps;
3. `manifest.begin` with the state the run will commit;
4. per topic, one Spark job reads the range through the `tidelog` data source (a task per
   segment, small segments a few per task) and writes Parquet into the run's staging directory,
   partitioned by `date` (UTC day of the timestamp) and `partition`; for compacted topics the
   previous `_latest` version and the new rows are reduced to the latest value per (partition, key),
   tombstones dropped, into a new version directory `<topic>_latest/v-<run id>/`;
5. publish: staged files are moved into the table directories under names that carry the run
   id (`part-<run id>-<n>.parquet`); small files of earlier runs are rewritten into one file per
   table partition the same way;
6. `mark_published`, delete the files the rewrite replaced, `commit`, refresh the catalog.

Idempotence: until `mark_published`, recovery deletes every file named with the run id, which
undoes steps 4-5 completely; after it, recovery completes steps 6. So whatever point a crash hits,
the next run leaves each committed record in the table exactly once.

Delta tables (`--table-format delta`, see `delta.DeltaExport`) take another path after step 3:
per topic, the Spark tasks write the run's Parquet files with pyarrow as in step 4, but straight
into the table's directory, and the driver appends them to the Delta table in one commit
(delta-rs), then one MERGE commit into `tidelog.<topic>_latest` of the run's rows read back from
that commit; then `commit`. Nothing is staged or moved. A run a crash interrupted is completed by
the next run (each table's write is skipped when the table already holds the run's commit; the
files of an uncommitted append are deleted and written again), never undone.

Iceberg tables (`--table-format iceberg`, see `iceberg_job`): after step 3, per topic the workers
write the Parquet files as in step 4 straight into the table's directory, then ONE pyiceberg
snapshot adds them to `tidelog.<topic>` and ONE copy-on-write snapshot rewrites the touched
partitions of `tidelog.<topic>_latest`; then `commit`. Completed by the next run after a crash,
like Delta (each table's snapshot summary carries the run id), files never committed deleted.

Typed columns (`--value-format registry` or `json`, `typed`) work in every format: the plan
records the union of the subject's versions, or the inferred type, in the topic's state
(`typed_plan.TypedPlan.plan`); an inferred type the write extended is recorded in the pending
run before a Delta or Iceberg table commits the files (`record_written`); Delta and Iceberg
widen a table's schema in the commit of the run that needs it (`delta`, `iceberg_job`), and
completing a crashed run decodes with the types its pending state records (`TypedPlan.recorded`).

Crash points can be injected for tests: `ExportOptions.crash_at` or the environment variable
`TIDELOG_EXPORT_CRASH_AT=<point>[:hard]` (`hard` exits the process at once, like a kill -9);
`CRASH_POINTS` for Parquet, `DELTA_CRASH_POINTS` for Delta, `iceberg_job.ICEBERG_CRASH_POINTS`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import direct
from . import segments as seg
from .compaction import newest_per_key
from .delta import DeltaExport
from .manifest import MANIFEST_DIR, Manifest, PartitionState, TopicState
from .progress import Progress, TopicSummary
from .session import ensure_table, point_latest
from .tables import LATEST_COLUMNS, TABLE_COLUMNS, ensure_database, table_location, typed_columns
from .typed import Formats
from .typed_plan import TypedPlan

log = logging.getLogger("tidelog.spark_export")

# not exported unless named in --topics (`_schemas`: the schema registry's, at its default name)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state", "_schemas"})
TOPICS_FILE = "tidelog-topics.json"
CRASH_POINTS = ("begun", "staged", "mid-publish", "published", "marked", "replaced-deleted")
DELTA_CRASH_POINTS = ("begun", "written", "appended", "merged")


class SimulatedCrash(RuntimeError):
    """Raised at an injected crash point (tests)."""


@dataclass
class ExportOptions:
    log_dirs: list[Path]
    warehouse: Path
    topics: list[str] | None = None  # None: every topic on disk (internal topics excluded)
    compact_topics: list[str] = field(default_factory=list)  # in addition to cleanup.policy=compact
    rewrite_min_files: int = 8  # a table partition with this many small files gets rewritten
    small_file_bytes: int = 32 << 20
    rows_per_latest_file: int = 2_000_000
    max_partition_bytes: int = 128 << 20  # small segments are read a few per Spark task
    crash_at: str | None = None
    table_format: str | None = None  # "parquet", "delta" or "iceberg"; None: the warehouse's (parquet when new)
    iceberg_catalog_uri: str | None = None  # a REST catalog; None: the warehouse's (embedded SQLite when new)
    # "registry": typed columns decoded with the schema registry's schemas (`typed`); "json":
    # plain JSON with an inferred type (`json_infer`); "raw": the record's bytes; None: what the
    # topic's table has (raw when new)
    value_format: str | None = None
    key_format: str | None = None
    schema_registry_url: str | None = None  # None: read `_schemas` from the log dirs
    # the subjects of a registry column (`subjects.Naming`): None and none named: the table's
    value_subject_strategy: str | None = None  # topic, record, topic-record
    value_subjects: list[str] = field(default_factory=list)
    key_subject_strategy: str | None = None
    key_subjects: list[str] = field(default_factory=list)


@dataclass
class _TopicPlan:
    topic: str
    state: TopicState  # what the manifest will hold after the run
    offsets: dict[int, tuple[int, int]]  # partition -> [start, end) to export
    scan_from: dict[int, int]
    summary: TopicSummary
    formats: Formats | None = None  # typed columns

    @property
    def has_data(self) -> bool:
        return any(hi > lo for lo, hi in self.offsets.values())


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


def topic_configs(log_dirs: list[Path]) -> dict[str, dict[str, str]]:
    """Per-topic config overrides from the broker's registry (`tidelog-topics.json`)."""
    for d in log_dirs:
        path = Path(d) / TOPICS_FILE
        if path.exists():
            doc = json.loads(path.read_text())
            return {t["name"]: dict(t.get("configs", {})) for t in doc.get("topics", [])}
    return {}


class ExportJob:
    def __init__(self, spark, options: ExportOptions, progress: Progress | None = None) -> None:
        self.spark = spark
        self.o = options
        self.o.warehouse = Path(options.warehouse).resolve()
        self.o.log_dirs = [Path(d).resolve() for d in options.log_dirs]
        self.progress = progress or Progress()
        self.crash_at = options.crash_at or os.environ.get("TIDELOG_EXPORT_CRASH_AT")
        self.typed = TypedPlan(options)  # the typed columns, made again by each run
        self.manifest: Manifest | None = None  # the run's, once it has loaded it

    # -- crash injection ----------------------------------------------------------------------

    def _point(self, name: str) -> None:
        if not self.crash_at:
            return
        point, _, mode = self.crash_at.partition(":")
        if point == name:
            if mode == "hard":
                os._exit(137)
            raise SimulatedCrash(name)

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> list[TopicSummary]:
        """One export run; refuses to start while another run holds the warehouse's lock."""
        with _exclusive(self.o.warehouse / MANIFEST_DIR / "export.lock"):
            return self._run()

    def _run(self) -> list[TopicSummary]:
        started = time.monotonic()
        self.typed = TypedPlan(self.o)
        from .fastdecode import DECODER

        log.info(
            "export run: records decoded by the %s decoder", "compiled (numba)" if DECODER == "numba" else "pure-Python"
        )
        manifest = self.manifest = Manifest.load(self.o.warehouse)
        manifest.table_format = manifest.resolve_format(self.o.table_format)
        delta = manifest.table_format == "delta"
        iceberg = self._iceberg() if manifest.table_format == "iceberg" else None
        # The database first: completing a run that crashed after it was published (re)creates
        # its tables, which needs the database in this session. The run registers the tables it
        # writes; `attach_tables` registers all of them in any session.
        ensure_database(self.spark, self.o.warehouse)
        if delta:
            DeltaExport(self).complete(manifest)
        elif iceberg:
            iceberg.complete(manifest)
        else:
            self.recover(manifest)
        run_id = new_run_id()
        plans = [self._plan(manifest, t) for t in self._topics()]  # warns of retention gaps
        work = [p for p in plans if p.has_data]
        if not work:
            if any(p.summary.gaps for p in plans):  # nothing to export, but record the gaps seen
                manifest.begin(run_id, {p.topic: p.state for p in plans if p.summary.gaps})
                manifest.mark_published([])
                manifest.commit({"topics": {p.topic: p.summary.to_json() for p in plans}})
            self.progress.summary(run_id, [p.summary for p in plans], time.monotonic() - started)
            return [p.summary for p in plans]

        self._prepare(work, run_id, delta, iceberg)
        manifest.begin(run_id, {p.topic: p.state for p in work})
        self._point("begun")
        if delta or iceberg:
            return self._run_tables(iceberg, manifest, plans, run_id, started)
        staging, pending = manifest.staging_dir(run_id), manifest.pending
        assert pending is not None
        for p in work:
            t0 = time.monotonic()
            old_latest = manifest.topics.get(p.topic, TopicState()).latest_location
            self._stage(p, staging, old_latest)
            p.summary.seconds = time.monotonic() - t0
            pending.topics[p.topic].formats = p.state.formats  # those the files were written with
        self._point("staged")
        for p in work:
            self._publish(staging / p.topic / "main", table_location(self.o.warehouse, p.topic), run_id)
        replaced = []
        for p in work:
            t0 = time.monotonic()
            replaced += self._rewrite_small_files(p, staging, run_id)
            p.summary.seconds += time.monotonic() - t0
        self._point("published")
        manifest.mark_published(replaced)
        self._point("marked")
        self._finish(manifest, {"topics": {p.topic: p.summary.to_json() for p in plans}})
        self.progress.summary(run_id, [p.summary for p in plans], time.monotonic() - started)
        return [p.summary for p in plans]

    def _prepare(self, work: list[_TopicPlan], run_id: str, delta: bool, iceberg) -> None:
        """Before the run begins: each compacted topic's `_latest` location, and the typed columns
        a Delta or Iceberg table's schema cannot take refused (not half way through the run)."""
        for p in work:
            if p.state.compacted:
                latest = self._latest_root(p.topic)
                p.state.latest_location = str(latest if delta or iceberg else latest / f"v-{run_id}")
            if p.formats and (delta or iceberg):
                (iceberg or DeltaExport(self)).check_schema(p.topic, p.formats)

    def _run_tables(
        self, iceberg, manifest: Manifest, plans: list[_TopicPlan], run_id: str, started: float
    ) -> list[TopicSummary]:
        """The rest of a Delta run (`delta.DeltaExport`: per topic its append and MERGE commits)
        or of an Iceberg run (`iceberg`, an `iceberg_job.IcebergRun`: per topic its snapshots)."""
        assert manifest.pending is not None
        run = (run_id, manifest.pending.serial)
        work = [p for p in plans if p.has_data]
        if iceberg is not None:
            iceberg.deliver(work, *run)
        else:
            export = DeltaExport(self)
            for p in work:
                t0 = time.monotonic()
                export.deliver(p.topic, p.state, p.offsets, p.scan_from, run, p.summary, p.formats)
                p.summary.seconds = time.monotonic() - t0
        manifest.commit({"topics": {p.topic: p.summary.to_json() for p in plans}})
        self.progress.summary(run_id, [p.summary for p in plans], time.monotonic() - started)
        return [p.summary for p in plans]

    def _finish(self, manifest: Manifest, summary: dict) -> None:
        """Steps after `mark_published`: also how recovery rolls a published run forward."""
        assert manifest.pending is not None
        pending = manifest.pending
        for path in pending.replaced:
            _remove(path)
        self._point("replaced-deleted")
        manifest.commit(summary)
        self._collect_garbage(manifest)
        shutil.rmtree(manifest.staging_dir(pending.run_id), ignore_errors=True)
        for topic, state in pending.topics.items():
            # a typed column may have gained fields: the table is re-created with them (it is
            # external: its files stay)
            columns = typed_columns(TABLE_COLUMNS, state.formats)
            ensure_table(self.spark, topic, self.o.warehouse, replace=bool(state.formats), columns=columns)
            if state.latest_location:
                point_latest(self.spark, topic, state.latest_location, typed_columns(LATEST_COLUMNS, state.formats))

    def record_written(self, topic: str, state: TopicState, written: Formats) -> None:
        """The typed columns `topic`'s files were written with (`written`: an inferred column may
        have gained fields, `direct.write_typed_files`) recorded in `state` and saved in the
        manifest's pending run. Delta and Iceberg call it before their table commits the files:
        the run then commits the same type to the manifest, and completing it after a crash
        decodes with it (`TypedPlan.recorded`)."""
        from .json_infer import entries

        assert self.manifest is not None
        state.formats = entries(state.formats, written)
        self.manifest.record_formats(topic, state.formats)

    def _iceberg(self):
        from .iceberg_job import IcebergRun

        return IcebergRun(self)

    # -- recovery -----------------------------------------------------------------------------

    def recover(self, manifest: Manifest) -> None:
        p = manifest.pending
        if p is not None:
            if p.phase == "published":
                log.warning("export run %s was interrupted after publishing: completing it", p.run_id)
                self._finish(manifest, {"recovered": True, "topics": {}})
            else:
                log.warning("export run %s was interrupted before publishing: undoing it", p.run_id)
                prefix = f"part-{p.run_id}-"
                for topic in p.topics:
                    root = table_location(self.o.warehouse, topic)
                    if root.exists():
                        for f in root.rglob(prefix + "*"):
                            _remove(f)
                    shutil.rmtree(self._latest_root(topic) / f"v-{p.run_id}", ignore_errors=True)
                manifest.abandon()
        self._collect_garbage(manifest)
        shutil.rmtree(manifest.dir / "staging", ignore_errors=True)

    def _collect_garbage(self, manifest: Manifest) -> None:
        if manifest.garbage:
            for path in manifest.garbage:
                _remove(path)
            manifest.garbage = []
            manifest.save()

    # -- planning -----------------------------------------------------------------------------

    def _topics(self) -> list[str]:
        if self.o.topics:
            return list(self.o.topics)
        return [t for t in seg.topics_on_disk(self.o.log_dirs) if t not in INTERNAL_TOPICS]

    def _is_compacted(self, topic: str, configs: dict[str, dict[str, str]]) -> bool:
        policy = configs.get(topic, {}).get("cleanup.policy", "delete")
        return topic in self.o.compact_topics or "compact" in policy

    def _plan(self, manifest: Manifest, topic: str) -> _TopicPlan:
        state = manifest.topic(topic)
        state.compacted = self._is_compacted(topic, topic_configs(self.o.log_dirs))
        summary = TopicSummary(topic)
        offsets, scan_from = {}, {}
        starts = seg.log_start_offsets(self.o.log_dirs)
        for partition, pdir in seg.partition_dirs(self.o.log_dirs, topic).items():
            ps = state.partitions.setdefault(partition, PartitionState())
            plan = seg.plan_partition(
                topic,
                partition,
                pdir,
                ps.next_offset,
                scan_from=ps.next_offset,
                log_start_offset=starts.get((topic, partition)),
            )
            summary.partitions += 1
            if plan.log_start_offset > ps.next_offset:
                gap = [ps.next_offset, plan.log_start_offset]
                ps.gaps.append(gap)
                summary.gaps.append((partition, gap[0], gap[1]))
                log.warning("%s-%d: offsets [%d, %d) were deleted by retention before export", topic, partition, *gap)
            start, end = plan.start_offset, plan.end_offset
            if end > start:
                offsets[partition] = (start, end)
                scan_from[partition] = start
            ends = [s.base_offset for s in plan.closed_segments[1:]] + [plan.closed_end_offset]
            consumed = [s.name for s, e in zip(plan.closed_segments, ends) if e <= end and s.name not in ps.segments]
            ps.segments += consumed
            summary.segments += len(consumed)
            ps.next_offset = max(ps.next_offset, end)
        formats = self.typed.plan(manifest, topic, state)
        return _TopicPlan(topic, state, offsets, scan_from, summary, formats)

    def _parallelism(self) -> int:
        return max(1, self.spark.sparkContext.defaultParallelism)

    # -- staging ------------------------------------------------------------------------------

    def _latest_root(self, topic: str) -> Path:
        return table_location(self.o.warehouse, topic + "_latest")

    def _stage(self, p: _TopicPlan, staging: Path, old_latest: str | None) -> None:
        main = staging / p.topic / "main"
        groups = direct.task_groups(
            self.o.log_dirs, p.topic, p.offsets, p.scan_from, self.o.max_partition_bytes, self._parallelism()
        )
        with self.progress.topic(self.spark, p.topic, len(groups)):
            p.summary.rows, written = direct.write(self.spark, groups, main, formats=p.formats)
        if written is not p.formats:  # an inferred column gained fields during the run (`json_infer`)
            from .json_infer import entries

            p.formats, p.state.formats = written, entries(p.state.formats, written)
        if p.state.compacted:
            # No file when every record of the range was aborted (or a control record).
            columns = typed_columns(TABLE_COLUMNS, p.state.formats)
            reader = self.spark.read.schema(columns) if p.state.formats else self.spark.read
            staged = reader.parquet(str(main)) if p.summary.rows else self.spark.createDataFrame([], columns)
            p.summary.latest_rows = self._stage_latest(p, staged, p.summary.rows, old_latest)

    def _stage_latest(self, p: _TopicPlan, staged, new_rows: int, old_latest: str | None) -> int:
        """Latest committed value per (partition, key) of old `_latest` + new rows, into a new version."""
        from pyspark.sql import functions as F

        latest_columns = typed_columns(LATEST_COLUMNS, p.state.formats)
        cols = self.spark.createDataFrame([], latest_columns).columns
        new = staged.select(*cols).withColumn("partition", F.col("partition").cast("int"))
        both, bound = new, new_rows
        if old_latest and Path(old_latest).exists():
            # the columns of this run: a typed value may have gained fields since the old version
            both = self.spark.read.schema(latest_columns).parquet(old_latest).select(*cols).unionByName(new)
            bound += parquet_rows(Path(old_latest))
        # a tombstone is dropped; a typed value that did not decode is kept (in `value_raw`)
        alive = F.col("value").isNotNull() | (F.col("value_raw").isNotNull() if p.state.formats else F.lit(False))
        latest = newest_per_key(both).where(alive)
        # The row count is at most `bound`: it decides how many files the version gets.
        files = max(1, math.ceil(bound / self.o.rows_per_latest_file))
        location = p.state.latest_location
        assert location is not None  # set for compacted topics before staging
        latest.repartition(files).sortWithinPartitions("partition", "offset").write.parquet(location)
        return parquet_rows(Path(location))

    # -- publishing ---------------------------------------------------------------------------

    def _publish(self, staged: Path, table: Path, run_id: str, tag: str = "") -> list[Path]:
        """Move staged Parquet files into `table`, keeping their partition directories."""
        moved: list[Path] = []
        if not staged.exists():
            return moved
        files = sorted(f for f in staged.rglob("*.parquet") if not f.name.startswith((".", "_")))
        for n, f in enumerate(files):
            rel = f.parent.relative_to(staged)
            dest_dir = table / rel
            dest_dir.mkdir(parents=True, exist_ok=True)
            dest = dest_dir / f"part-{run_id}-{tag}{n:05d}.parquet"
            os.replace(f, dest)
            moved.append(dest)
            if n == 0:
                self._point("mid-publish")
        return moved

    def _rewrite_small_files(self, p: _TopicPlan, staging: Path, run_id: str) -> list[str]:
        """Rewrite table partitions holding many small files of earlier runs into one file each."""
        table = table_location(self.o.warehouse, p.topic)
        mine = f"part-{run_id}-"
        candidates: list[Path] = []
        for d in sorted({f.parent for f in table.rglob("*.parquet")}):
            files = [f for f in d.glob("*.parquet") if not f.name.startswith(mine)]
            if len(files) >= self.o.rewrite_min_files and all(
                f.stat().st_size < self.o.small_file_bytes for f in files
            ):
                candidates += files
        if not candidates:
            return []
        from pyspark.sql import functions as F

        # Typed columns gain fields over runs: the table's columns, not those of the first file.
        reader = (
            self.spark.read.schema(typed_columns(TABLE_COLUMNS, p.state.formats))
            if p.state.formats
            else self.spark.read
        )
        df = reader.option("basePath", str(table)).parquet(*[str(f) for f in candidates])
        out = staging / p.topic / "rewrite"
        (
            df.repartition(F.col("date"), F.col("partition"))
            .sortWithinPartitions("offset")
            .write.partitionBy("date", "partition")
            .parquet(str(out))
        )
        self._publish(out, table, run_id, tag="r")
        p.summary.files_rewritten = len(candidates)
        return [str(f) for f in candidates]


class ExportRunning(RuntimeError):
    """Another export run holds the warehouse."""


@contextlib.contextmanager
def _exclusive(path: Path):
    """An exclusive `flock` on `path` for the run (released by the OS if the process dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ExportRunning(f"another export run holds {path}") from None
        yield
    finally:
        os.close(fd)


def parquet_rows(root: Path) -> int:
    """Rows in the Parquet files under `root`, from their footers."""
    import pyarrow.parquet as pq

    return sum(
        pq.ParquetFile(f).metadata.num_rows for f in Path(root).rglob("*.parquet") if not f.name.startswith((".", "_"))
    )


def _remove(path: str | Path) -> None:
    path = Path(path)
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
