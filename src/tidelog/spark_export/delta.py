"""Delta Lake tables for the export (`tidelog export --table-format delta`).

Each export run is one Delta commit per table: an append to `tidelog.<topic>` (partitioned by
`date` and `partition`, like the Parquet table) and, for a compacted topic, one MERGE into
`tidelog.<topic>_latest` (latest committed value per (partition, key); a newer value updates its
key, a tombstone deletes it). A reader sees a table before or after a run's commit, never part of
it; `DESCRIBE HISTORY` lists one version per run, its `userMetadata` the run id, and `VERSION AS
OF` shows each run.

The append is the hot path and never goes through Spark's JVM writer: the Spark tasks decode
their segments and write zstd Parquet with pyarrow exactly as the Parquet export does
(`direct.write_files`), straight into the table's `date=.../partition=...` directories under
names carrying the run id (`part-<run id>-<task>-<random>.parquet`), each task reading its files'
statistics back from their footers (`deltalog.describe`); the driver then commits them all in one
Delta commit with delta-rs (`deltalog.commit`: `add` actions with path, size, partition values,
modification time and statistics). Files in the directory that no commit names are invisible to
Delta readers, which read only what the log lists. `_latest` keeps Spark's MERGE (its rows read
back from the append commit): it runs only for compacted topics, and Delta's MERGE does the
update-or-delete per key with the run's txn action.

Exactly once, with the manifest (see `job`): the manifest records the run as pending first, with
a serial number. Each table's commit of the run carries Delta's idempotent-write pair (a `txn`
action, app id `tidelog-export`, version = serial, in the same commit; delta-rs's
`CommitProperties(app_transactions=...)` for the append, Spark's `txnAppId`/`txnVersion` settings
for the MERGE) and the run id as `userMetadata`. A crashed run is completed by the next one: per
table it reads the txn version back (`deltalog.committed`); a table that holds the run's commit
is skipped, one that does not gets the run's files that a crash left deleted, and the files
written and committed again. Then the manifest is committed. So the tables and the manifest agree
after a crash at any point (`job.DELTA_CRASH_POINTS`: `begun`, `written` (files written, not
committed), `appended`, `merged`), and no record is appended twice. Files of a failed Spark task
attempt (beside its retry's in the directories the run wrote) are deleted after the commit.

Typed columns (`--value-format registry` or `json`, `typed`): the files hold the run's union of
the subject's versions, or the inferred type (`json_infer`: extended with the fields the tasks
met past the sample, `direct.write_typed_files`, and recorded in the manifest's pending run
before the commit); the append table is created with it, and a run whose columns gained fields
commits the widened schema in its append commit (`deltalog.commit`), `_latest`'s MERGE in its
own (Delta's autoMerge); a tombstone there is a null value with no `value_raw`. A union that would
change a field other than by adding fields is refused before the run begins (`check_schema`).

The jars: Delta Lake 4.4.0 for the running Spark line (4.0, 4.1 or 4.2; there is no Delta release
for Spark 4.3 yet). `jars()` takes, in order: `TIDELOG_DELTA_JARS` (comma-separated paths); the
two jars in the local Maven repository (`~/.m2/repository`), fetched there with `mvn` when it is on
PATH; otherwise Spark downloads them itself (`spark.jars.packages`, from Maven Central).
"""

from __future__ import annotations

import functools
import logging
import operator
import os
import shutil
import subprocess
from pathlib import Path

from . import deltalog
from .deltalog import APP_ID
from .tables import DATABASE, LATEST_COLUMNS, _sql_str, table_location, table_name, typed_columns

log = logging.getLogger("tidelog.spark_export")

DELTA_VERSION = "4.4.0"
SPARK_LINES = ("4.0", "4.1", "4.2")


class DeltaUnavailable(RuntimeError):
    """No Delta Lake release for this Spark, or its jars could not be had."""


def spark_line(version: str | None = None) -> str:
    if version is None:
        import pyspark

        version = pyspark.__version__
    line = ".".join(version.split(".")[:2])
    if line not in SPARK_LINES:
        raise DeltaUnavailable(
            f"Delta Lake {DELTA_VERSION} supports Spark {', '.join(SPARK_LINES)}, not {version}: "
            "install pyspark<4.3 (tidelog[spark] does) or use --table-format parquet"
        )
    return line


def coordinates(version: str | None = None) -> list[str]:
    """Maven coordinates of the two jars Delta needs beside Spark."""
    return [
        f"io.delta:delta-spark_{spark_line(version)}_2.13:{DELTA_VERSION}",
        f"io.delta:delta-storage:{DELTA_VERSION}",
    ]


def _m2_path(coordinate: str) -> Path:
    group, artifact, version = coordinate.split(":")
    repo = Path(os.environ.get("MAVEN_REPO", Path.home() / ".m2" / "repository"))
    return repo.joinpath(*group.split(".")) / artifact / version / f"{artifact}-{version}.jar"


def jars(version: str | None = None) -> list[str] | None:
    """Local jar files for `spark.jars`, or None when Spark must download them (`spark.jars.packages`)."""
    given = os.environ.get("TIDELOG_DELTA_JARS")
    if given:
        return [p for p in given.split(",") if p]
    coords = coordinates(version)
    paths = [_m2_path(c) for c in coords]
    missing = [c for c, p in zip(coords, paths) if not p.exists()]
    if missing and shutil.which("mvn"):
        for c in missing:
            log.info("fetching %s with mvn", c)
            subprocess.run(
                ["mvn", "-B", "-q", "dependency:get", f"-Dartifact={c}", "-Dtransitive=false"],
                check=False,
                timeout=600,
                stdout=subprocess.DEVNULL,
            )
    if all(p.exists() for p in paths):
        return [str(p) for p in paths]
    return None


def session_conf(version: str | None = None) -> dict[str, str]:
    """The settings a SparkSession needs for Delta tables (jars, SQL extension, catalog)."""
    files = jars(version)
    conf = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    }
    if files:
        conf["spark.jars"] = ",".join(files)
    else:
        conf["spark.jars.packages"] = ",".join(coordinates(version))
    return conf


def is_enabled(spark) -> bool:
    return "DeltaSparkSessionExtension" in (spark.conf.get("spark.sql.extensions", "") or "")


def _path(location: Path | str) -> str:
    return "delta.`" + str(location).replace("`", "``") + "`"


class DeltaTables:
    """The Spark side of the Delta export: creating `_latest` and the run's MERGE into it."""

    def __init__(self, spark) -> None:
        if not is_enabled(spark):
            raise DeltaUnavailable(
                "this SparkSession has no Delta Lake: build it with "
                "SparkSettings(table_format='delta') (session.build_session)"
            )
        self.spark = spark

    def ensure(self, location: Path, columns: str) -> None:
        """The table at `location`, created empty (version 0) when the location holds none."""
        location.parent.mkdir(parents=True, exist_ok=True)
        if not (location / "_delta_log").exists():
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {_path(location)} ({columns}) USING delta")

    def merge_latest(self, latest: Path, newest, run_id: str, serial: int, typed: bool = False) -> None:
        """One MERGE of the run's newest row per (partition, key), tombstones included (`newest`:
        at most one row per key, as MERGE requires, in `_latest`'s columns), with the run's txn
        action and id. `typed`: the value is a typed column (`typed`): a tombstone is a null value
        with no `value_raw` (a value that did not decode is kept), and the MERGE evolves the
        table's schema (Delta's autoMerge) when the value gained fields, in the same commit."""
        view = f"tidelog_merge_{serial}"
        newest.createOrReplaceTempView(view)
        conf = {
            "spark.databricks.delta.write.txnAppId": APP_ID,
            "spark.databricks.delta.write.txnVersion": str(serial),
            "spark.databricks.delta.commitInfo.userMetadata": run_id,
        }
        if typed:
            conf["spark.databricks.delta.schema.autoMerge.enabled"] = "true"
        tombstone = "s.value IS NULL" + (" AND s.value_raw IS NULL" if typed else "")
        for k, v in conf.items():
            self.spark.conf.set(k, v)
        try:
            # The offset guards make a repeated MERGE a no-op even without Delta's txn check.
            self.spark.sql(
                f"MERGE INTO {_path(latest)} t USING {view} s "
                "ON t.partition = s.partition AND t.key = s.key "
                f"WHEN MATCHED AND s.offset > t.offset AND {tombstone} THEN DELETE "
                "WHEN MATCHED AND s.offset > t.offset THEN UPDATE SET * "
                f"WHEN NOT MATCHED AND NOT ({tombstone}) THEN INSERT *"
            )
        finally:
            for k in conf:
                self.spark.conf.unset(k)
            self.spark.catalog.dropTempView(view)

    def rows(self, location: Path) -> int:
        return self.spark.read.format("delta").load(str(location)).count()


def ensure_delta_tables(spark, topic: str, warehouse: Path, state, replace: bool = False, formats=None) -> list[str]:
    """The Delta tables `tidelog.<topic>` (and `tidelog.<topic>_latest` when `state`, the topic's
    `TopicState`, is compacted) over their locations, created empty where missing: the append
    table by delta-rs, which commits to it (`deltalog`), `_latest` by Spark, whose MERGE writes it.
    With typed columns (`state.formats`) the append table is created only by a run, which gives
    its `formats` (`typed.Formats`: the files' types); `_latest` takes the types `state` records."""
    if formats or not state.formats:
        deltalog.create(table_location(warehouse, topic), deltalog.table_schema(formats))
    if state.compacted:
        columns = typed_columns(LATEST_COLUMNS, state.formats)
        DeltaTables(spark).ensure(table_location(warehouse, topic + "_latest"), columns)
    names = [topic] + ([topic + "_latest"] if state.compacted else [])
    for name in names:
        if replace:
            spark.sql(f"DROP TABLE IF EXISTS {table_name(name)}")
        loc = table_location(warehouse, name)
        spark.sql(f"CREATE TABLE IF NOT EXISTS {table_name(name)} USING delta LOCATION '{_sql_str(loc)}'")
    return [f"{DATABASE}.{name}" for name in names]


class DeltaExport:
    """The Delta steps of an export run for `job` (an `ExportJob`): per topic, the append commit
    (files written by the Spark tasks, committed by the driver with delta-rs) and the MERGE."""

    def __init__(self, job) -> None:
        self.job = job
        self.spark = job.spark
        self.warehouse = job.o.warehouse
        self.tables = DeltaTables(job.spark)
        self.recovering = False  # completing a crashed run: its files may be on disk

    def deliver(
        self, topic: str, state, offsets: dict, scan_from: dict, run: tuple[str, int], summary, formats=None
    ) -> None:
        """The run's commits for one topic: the append, then the MERGE into `_latest`. Each is
        skipped when its table's txn version shows the run's commit, so a crashed run is completed
        by calling this again with the same run (id, serial) and offsets. `formats`: the topic's
        typed columns (`typed.Formats`, their union recorded in `state.formats`); a commit whose
        columns gained fields widens its table's schema in that same commit."""
        run_id, serial = run
        ensure_delta_tables(self.spark, topic, self.warehouse, state, formats=formats)
        main = table_location(self.warehouse, topic)
        summary.rows = self._append(topic, state, offsets, scan_from, run, formats)
        self.job._point("appended")
        if state.compacted:
            latest = table_location(self.warehouse, topic + "_latest")
            if not deltalog.committed(latest, serial):
                columns = typed_columns(LATEST_COLUMNS, state.formats)
                newest = self._run_rows(main, offsets).select(*self.spark.createDataFrame([], columns).columns)
                self.tables.merge_latest(latest, newest, run_id, serial, typed=bool(state.formats))
            self.job._point("merged")
            summary.latest_rows = self.tables.rows(latest)

    def _append(self, topic: str, state, offsets: dict, scan_from: dict, run: tuple[str, int], formats=None) -> int:
        """The append commit, written and committed unless the table holds it: its row count.
        Inferred JSON columns (`json_infer`) that gained fields while the files were written are
        recorded in `state` and the manifest's pending run first (`job.record_written`), and the
        commit widens the table's schema to them."""
        from . import direct

        run_id, serial = run
        main = table_location(self.warehouse, topic)
        if deltalog.committed(main, serial):
            deltalog.remove_uncommitted(main, run_id)  # strays the crash left before their cleanup
            return deltalog.run_rows(main, run_id)
        if self.recovering:
            deltalog.remove_uncommitted(main, run_id)  # the crashed attempt's files
        o = self.job.o
        groups = direct.task_groups(
            o.log_dirs, topic, offsets, scan_from, o.max_partition_bytes, self.job._parallelism()
        )
        with self.job.progress.topic(self.spark, topic, len(groups)):
            files, written = direct.write_typed_files(
                self.spark, groups, main, f"{run_id}-", deltalog.describe, formats=formats
            )
        if written is not formats:
            self.job.record_written(topic, state, written)
            formats = written
        self.job._point("written")
        deltalog.commit(main, files, run_id, serial, deltalog.table_schema(formats) if formats else None)
        deltalog.remove_strays(files, run_id)
        return sum(f[1] for f in files)

    def _run_rows(self, main: Path, offsets: dict):
        """The run's newest row per (partition, key), read back from its append commit."""
        from pyspark.sql import functions as F

        from .compaction import newest_per_key

        mine = functools.reduce(
            operator.or_,
            (
                (F.col("partition") == partition) & (F.col("offset") >= lo) & (F.col("offset") < hi)
                for partition, (lo, hi) in offsets.items()
            ),
        )  # never empty: a run has data
        return newest_per_key(self.spark.read.format("delta").load(str(main)).where(mine))

    def check_schema(self, topic: str, formats) -> None:
        """Refuse (`TableFormatError`, before the run begins) typed columns whose union changed
        the append table's columns other than by adding fields (`deltalog.widened`)."""
        from .manifest import TableFormatError

        main = table_location(self.warehouse, topic)
        if (main / "_delta_log").exists():
            from deltalake import DeltaTable

            try:
                deltalog.widened(DeltaTable(str(main)), deltalog.table_schema(formats))
            except deltalog.SchemaChange as e:
                raise TableFormatError(f"tidelog.{topic}: Delta tables take new fields only: {e}") from None

    def complete(self, manifest) -> None:
        """Complete a run a crash interrupted: its offsets are those between the committed and
        the pending state (its typed columns: those the state records, `typed_plan.TypedPlan.recorded`);
        the tables that hold its commit already are skipped."""
        from .progress import TopicSummary

        p = manifest.pending
        if p is None:
            return
        log.warning("export run %s was interrupted: completing it", p.run_id)
        self.recovering = True
        done = {}
        for topic, state in p.topics.items():
            offsets = manifest.pending_offsets(topic)
            summary = TopicSummary(topic)
            if offsets:
                scan_from = {n: lo for n, (lo, _hi) in offsets.items()}
                formats = self.job.typed.recorded(topic, state)
                self.deliver(topic, state, offsets, scan_from, (p.run_id, p.serial), summary, formats)
            done[topic] = summary.to_json()
        manifest.commit({"recovered": True, "topics": done})
