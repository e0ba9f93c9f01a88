"""The Spark session the export job runs in, tuned for a small shared machine, and the catalog.

Defaults suit 2 shared cores: `local[2]`, 1 GiB of driver memory, 4 shuffle partitions (Spark's
200 would mean 200 tiny tasks per shuffle), no UI, adaptive execution on, a small JVM heap with
G1 and a short thread stack. Every one of them is an option of `SparkSettings` (and of the CLI).
The Python workers fork from `tidelog.spark_export.daemon`, which has the decoder loaded.

Catalog: tables live in the `tidelog` database of a warehouse directory. With `hive=True` the
session uses Spark's Hive catalog backed by an embedded Derby metastore in
`<warehouse>/metastore_db` (bundled with pyspark; one session at a time), so tables persist by
themselves. Otherwise (the default) the in-memory catalog is used and `attach_tables` re-creates
every table over its location from the export manifest, repairing partitions, so that
`spark.table("tidelog.orders")` works in any later session that calls it. A warehouse exported
with `--table-format delta` holds Delta tables: the session then needs
`SparkSettings(table_format="delta")` (see `delta`). Iceberg tables (`--table-format iceberg`) are
in their own catalog (`iceberg`); `attach_tables` registers them as `tidelog.<name>` over the
`tidelog_iceberg` data source (see `iceberg_source`), in any session whose `spark_catalog` is
Spark's own (not in a Delta-enabled one, which cannot read such tables by name).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .tables import (
    DATABASE,
    LATEST_COLUMNS,
    TABLE_COLUMNS,
    _sql_str,
    ensure_database,
    is_hive,
    table_location,
    table_name,
    typed_columns,
)


@dataclass
class SparkSettings:
    master: str = "local[2]"
    app_name: str = "tidelog-export"
    driver_memory: str = "1g"
    shuffle_partitions: int = 4
    jvm_flags: str = "-XX:+UseG1GC -Xss4m -XX:+UseStringDeduplication"
    hive: bool = False
    table_format: str = "parquet"  # "delta" adds Delta Lake's jars, SQL extension and catalog
    extra: dict[str, str] = field(default_factory=dict)


def build_session(warehouse: str | Path, settings: SparkSettings | None = None):
    """A SparkSession over `warehouse` with the tidelog data source registered."""
    from pyspark.sql import SparkSession

    from .datasource import register

    s = settings or SparkSettings()
    warehouse = Path(warehouse).resolve()
    warehouse.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    b = (
        SparkSession.builder.master(s.master)
        .appName(s.app_name)
        .config("spark.driver.memory", s.driver_memory)
        .config("spark.driver.extraJavaOptions", s.jvm_flags)
        .config("spark.executor.extraJavaOptions", s.jvm_flags)
        .config("spark.sql.shuffle.partitions", str(s.shuffle_partitions))
        .config("spark.default.parallelism", str(max(2, s.shuffle_partitions)))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
        .config("spark.sql.parquet.compression.codec", "zstd")
        .config("spark.python.worker.reuse", "true")
        .config("spark.python.daemon.module", "tidelog.spark_export.daemon")  # workers fork with the decoder loaded
    )
    if s.hive:
        b = (
            b.config("spark.sql.catalogImplementation", "hive")
            .config(
                "spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={warehouse / 'metastore_db'};create=true",
            )
            .config("spark.hadoop.derby.system.home", str(warehouse))
        )
    if s.table_format == "delta":
        from .delta import session_conf

        for k, v in session_conf().items():
            b = b.config(k, v)
        # Delta rebuilds a table's state from its log in this many tasks (default 50: 50 tiny
        # tasks per changed table on a small machine).
        b = b.config("spark.databricks.delta.snapshotPartitions", str(max(1, s.shuffle_partitions)))
    for k, v in s.extra.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def attach_tables(spark, warehouse: str | Path) -> list[str]:
    """Register every exported table of `warehouse` in this session's catalog; returns their names."""
    from .manifest import Manifest

    manifest = Manifest.load(warehouse)
    ensure_database(spark, warehouse)
    names = []
    if manifest.table_format == "iceberg":
        from .iceberg_source import attach_iceberg_tables

        return attach_iceberg_tables(spark, warehouse)
    if manifest.table_format == "delta":
        from .delta import ensure_delta_tables

        for topic, state in sorted(manifest.topics.items()):
            names += ensure_delta_tables(spark, topic, Path(warehouse), state, replace=not is_hive(spark))
        return names
    for topic, state in sorted(manifest.topics.items()):
        columns = typed_columns(TABLE_COLUMNS, state.formats)
        ensure_table(spark, topic, Path(warehouse), replace=not is_hive(spark), columns=columns)
        names.append(f"{DATABASE}.{topic}")
        if state.latest_location:
            point_latest(spark, topic, state.latest_location, typed_columns(LATEST_COLUMNS, state.formats))
            names.append(f"{DATABASE}.{topic}_latest")
    return names


def ensure_table(spark, topic: str, warehouse: Path, replace: bool = False, columns: str = TABLE_COLUMNS) -> None:
    """The append table `tidelog.<topic>` over its location, partitions repaired (`columns`:
    `tables.typed_columns` for a topic with typed columns)."""
    loc = table_location(warehouse, topic)
    loc.mkdir(parents=True, exist_ok=True)
    name = table_name(topic)
    if replace:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {name} ({columns}) USING parquet "
        f"PARTITIONED BY (date, partition) LOCATION '{_sql_str(loc)}'"
    )
    spark.sql(f"MSCK REPAIR TABLE {name} SYNC PARTITIONS")
    spark.sql(f"REFRESH TABLE {name}")


def point_latest(spark, topic: str, location: str, columns: str = LATEST_COLUMNS) -> None:
    """(Re)create `tidelog.<topic>_latest` over one version directory of the compacted table
    (`columns`: `tables.typed_columns` for a topic with typed columns)."""
    name = table_name(topic, "_latest")
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} ({columns}) USING parquet LOCATION '{_sql_str(location)}'")
