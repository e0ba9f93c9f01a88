"""Delta Lake tables for the export (`tidelog export --table-format delta`).

Each export run is one Delta commit per table: an append to `tidelog.<topic>` (partitioned by
`date` and `partition`, like the Parquet table) and, for a compacted topic, one MERGE into
`tidelog.<topic>_latest` (latest committed value per (partition, key); a tombstone deletes the
key). A reader sees a table before or after a run's commit, never part of it; `DESCRIBE HISTORY`
lists one version per run, its `userMetadata` the run id, and `VERSION AS OF` shows each run.

Exactly once, with the manifest (see `job`): the manifest records the run as pending first, with
a serial number. Every write of the run carries Delta's idempotent-write pair `txnAppId =
tidelog-export`, `txnVersion = serial` (Delta keeps it in the table's log in the same commit and
skips a write whose version it already holds) and the run id as commit metadata. A crashed run is
completed by the next one: it re-executes the pending run's writes, which skip the tables that
already hold its commit, then commits the manifest. So the tables and the manifest agree after a
crash at any point, and no record is appended twice.

The jars: Delta Lake 4.4.0 for the running Spark line (4.0, 4.1 or 4.2; there is no Delta release
for Spark 4.3 yet). `jars()` takes, in order: `TIDELOG_DELTA_JARS` (comma-separated paths); the
two jars in the local Maven repository (`~/.m2/repository`), fetched there with `mvn` when it is on
PATH; otherwise Spark downloads them itself (`spark.jars.packages`, from Maven Central).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger("tidelog.spark_export")

DELTA_VERSION = "4.4.0"
SPARK_LINES = ("4.0", "4.1", "4.2")
APP_ID = "tidelog-export"


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
    """The Delta side of an export run: creating the tables, the run's append and MERGE, and
    finding a run's commit in a table's history."""

    def __init__(self, spark) -> None:
        if not is_enabled(spark):
            raise DeltaUnavailable(
                "this SparkSession has no Delta Lake: build it with "
                "SparkSettings(table_format='delta') (session.build_session)"
            )
        self.spark = spark

    def ensure(self, location: Path, columns: str, partitioned_by: str | None = None) -> None:
        """The table at `location`, created empty (version 0) when the location holds none."""
        location.parent.mkdir(parents=True, exist_ok=True)
        parts = f" PARTITIONED BY ({partitioned_by})" if partitioned_by else ""
        if not (location / "_delta_log").exists():
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {_path(location)} ({columns}) USING delta{parts}")

    def commit_of(self, location: Path, run_id: str) -> dict | None:
        """The history entry (version, operation, metrics) of `run_id`'s commit, if the table has it."""
        if not (location / "_delta_log").exists():
            return None
        rows = (
            self.spark.sql(f"DESCRIBE HISTORY {_path(location)} LIMIT 100")
            .select("version", "operation", "operationMetrics", "userMetadata")
            .collect()
        )
        for r in rows:
            if r.userMetadata == run_id:
                return {"version": r.version, "operation": r.operation, "metrics": dict(r.operationMetrics or {})}
        return None

    def append(self, df, location: Path, run_id: str, serial: int) -> None:
        """One commit appending `df`, skipped by Delta if the table already holds `serial`."""
        (
            df.write.format("delta")
            .mode("append")
            .option("txnAppId", APP_ID)
            .option("txnVersion", serial)
            .option("userMetadata", run_id)
            .save(str(location))
        )

    def merge_latest(self, latest: Path, newest, run_id: str, serial: int) -> None:
        """One MERGE of the run's newest row per (partition, key), tombstones included (`newest`:
        at most one row per key, as MERGE requires)."""
        view = f"tidelog_merge_{serial}"
        newest.createOrReplaceTempView(view)
        conf = {
            "spark.databricks.delta.write.txnAppId": APP_ID,
            "spark.databricks.delta.write.txnVersion": str(serial),
            "spark.databricks.delta.commitInfo.userMetadata": run_id,
        }
        for k, v in conf.items():
            self.spark.conf.set(k, v)
        try:
            # The offset guards make a repeated MERGE a no-op even without Delta's txn check.
            self.spark.sql(
                f"MERGE INTO {_path(latest)} t USING {view} s "
                "ON t.partition = s.partition AND t.key = s.key "
                "WHEN MATCHED AND s.offset > t.offset AND s.value IS NULL THEN DELETE "
                "WHEN MATCHED AND s.offset > t.offset THEN UPDATE SET * "
                "WHEN NOT MATCHED AND s.value IS NOT NULL THEN INSERT *"
            )
        finally:
            for k in conf:
                self.spark.conf.unset(k)
            self.spark.catalog.dropTempView(view)

    def rows(self, location: Path) -> int:
        return self.spark.read.format("delta").load(str(location)).count()
