"""Spark reads the Iceberg tables through the `tidelog_iceberg` PySpark data source.

Why not Iceberg's own Spark runtime: there is none for Spark 4.2 (Iceberg 1.12.0, the newest
release, ships `iceberg-spark-runtime-4.0_2.13` and `-4.1_2.13`), and those for 4.1 and 4.0 fail on
pyspark 4.2 when loading a table (`IncompatibleClassChangeError`: Spark 4.2 turned
`connector.catalog.View` into a class and `CatalogManager` into an interface). So Spark reads a
table the way Iceberg's reader would, through the table's metadata: the driver asks pyiceberg for
the data files of ONE snapshot (the current one, or the one asked for), and the Spark tasks read
exactly those Parquet files with pyarrow. A query therefore sees a table as of a snapshot, never
part of a run, and never a file that no snapshot references.

    register(spark)
    df = (spark.read.format("tidelog_iceberg")
          .option("warehouse", "/data/lake")
          .option("table", "orders")                 # or "orders_latest"
          .option("snapshot-id", 123)                # time travel: a snapshot (see `snapshots`)
          .option("as-of-timestamp", 1735689600000)  # or the snapshot current at this time (ms)
          .load())

`attach_iceberg_tables(spark, warehouse)` (what `session.attach_tables` does for an Iceberg
warehouse; a run does it for its own tables) registers every table of the catalog as
`tidelog.<name>` in the session's catalog, backed by a data source registered per table, so that
`spark.table("tidelog.orders")` reads the table's current snapshot at each query, and
`SELECT * FROM tidelog.orders WITH ('snapshot-id' = '123')` (or `'as-of-timestamp'`) travels in
time. `snapshots(warehouse, name)` lists a table's snapshots with the run id of each. Spark reads
such catalog tables only while `spark_catalog` is Spark's own: a session whose `spark_catalog` is
replaced (Delta's `DeltaCatalog`, say) fails on them ("not a valid Spark SQL Data Source"), so
`attach_iceberg_tables` refuses such a session (`IcebergSessionError`); it can still read the
tables with `spark.read.format("tidelog_iceberg")`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

NAME = "tidelog_iceberg"
MAX_PARTITION_BYTES = 128 << 20


class IcebergSessionError(RuntimeError):
    """A session that cannot read Python data source tables by name."""


def names_readable(spark) -> bool:
    """Whether catalog tables backed by a Python data source can be read in `spark` (only while
    `spark_catalog` is Spark's own session catalog)."""
    return not spark.conf.get("spark.sql.catalog.spark_catalog", "")


def _load(warehouse: str, table: str):
    from .iceberg import identifier, load_catalog

    name = table.split(".", 1)[1] if table.startswith("tidelog.") else table
    return load_catalog(warehouse).load_table(identifier(name))


def _snapshot(t, options: dict[str, str]):
    """The snapshot `options` ask for (`snapshot-id`, `as-of-timestamp`), else the current one
    (None: the table has none)."""
    if options.get("snapshot-id"):
        s = t.snapshot_by_id(int(options["snapshot-id"]))
        if s is None:
            raise ValueError(f"{t.name()} has no snapshot {options['snapshot-id']}")
        return s
    if options.get("as-of-timestamp"):
        s = t.snapshot_as_of_timestamp(int(options["as-of-timestamp"]))
        if s is None:
            raise ValueError(f"{t.name()} had no snapshot at {options['as-of-timestamp']}")
        return s
    return t.current_snapshot()


def spark_schema(t, options: dict[str, str]):
    """The Spark schema of `t` as of the snapshot `options` ask for (a typed column's fields are
    those of the snapshot's schema: a later run's new fields appear from its snapshot on), or of
    its current schema: Iceberg's types through Arrow (`pyiceberg`'s mapping, then Spark's)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyspark.sql.pandas.types import from_arrow_schema

    snap = _snapshot(t, options) if options.get("snapshot-id") or options.get("as-of-timestamp") else None
    schema = t.schemas()[snap.schema_id] if snap is not None and snap.schema_id is not None else t.schema()
    return from_arrow_schema(schema_to_pyarrow(schema, include_field_ids=False))


def snapshots(warehouse: str | Path, table: str) -> list[dict[str, Any]]:
    """`table`'s snapshots, oldest first: snapshot_id, timestamp_ms, operation, run_id, summary."""
    from .iceberg import RUN_ID

    t = _load(str(warehouse), table)
    out = []
    for s in sorted(t.snapshots(), key=lambda s: (s.sequence_number or 0, s.timestamp_ms)):
        summary = dict(s.summary.additional_properties) if s.summary else {}
        op = s.summary.operation.value if s.summary else None
        out.append(
            {
                "snapshot_id": s.snapshot_id,
                "timestamp_ms": s.timestamp_ms,
                "operation": op,
                "run_id": summary.get(RUN_ID),
                "summary": summary,
            }
        )
    return out


class IcebergSource(DataSource):
    """`tidelog_iceberg`: options `warehouse`, `table`, `snapshot-id`, `as-of-timestamp` (ms),
    `maxPartitionBytes`. The per-table subclasses `attach_iceberg_tables` registers carry the
    warehouse and table themselves (Spark passes a catalog table's options to no Python source)."""

    source_name = NAME
    warehouse: str | None = None
    table: str | None = None

    @classmethod
    def name(cls) -> str:
        return cls.source_name

    def _option(self, key: str) -> str:
        value = self.options.get(key) or getattr(type(self), key)
        if not value:
            raise ValueError(f"the {NAME} data source needs option {key!r}")
        return value

    def schema(self):
        return spark_schema(_load(self._option("warehouse"), self._option("table")), dict(self.options))

    def reader(self, schema) -> IcebergReader:
        return IcebergReader(self._option("warehouse"), self._option("table"), dict(self.options), schema)


class IcebergReader(DataSourceReader):
    def __init__(self, warehouse: str, table: str, options: dict[str, str], schema) -> None:
        self.warehouse = warehouse
        self.table = table
        self.options = options
        self.columns = [f.name for f in schema.fields]
        self.types = {f.name: f.dataType for f in schema.fields}

    def partitions(self) -> list[InputPartition]:
        """The snapshot's data files, packed into partitions of up to `maxPartitionBytes`."""
        from .iceberg import local_path

        t = _load(self.warehouse, self.table)
        snap = _snapshot(t, self.options)
        if snap is None:
            return [InputPartition([])]
        limit = int(self.options.get("maxPartitionBytes", MAX_PARTITION_BYTES))
        groups: list[list[str]] = []
        size = 0
        for task in t.scan(snapshot_id=snap.snapshot_id).plan_files():
            if task.delete_files:  # tidelog's tables are copy-on-write: never written
                raise NotImplementedError(f"{self.table}: delete files are not read by {NAME}")
            if not groups or size + task.file.file_size_in_bytes > limit:
                groups.append([])
                size = 0
            groups[-1].append(local_path(task.file.file_path))
            size += task.file.file_size_in_bytes
        return [InputPartition(g) for g in groups] or [InputPartition([])]

    def read(self, partition: InputPartition) -> Iterator:
        """The rows of the partition's files in the read schema: a file written before a typed
        column gained fields has them null (matched by name, as the table's name mapping says)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark.sql.pandas.types import from_arrow_type

        from . import segments as seg

        arrow = seg.arrow_schema()  # the record columns as the export writes them; typed ones as Spark maps them
        schema = pa.schema(
            [
                arrow.field(c)
                if c in arrow.names and from_arrow_type(arrow.field(c).type) == self.types[c]
                else pa.field(c, _arrow_type(self.types[c]))
                for c in self.columns
            ]
        )
        for path in partition.value:
            f = pq.ParquetFile(path)
            for batch in f.iter_batches(batch_size=65536, columns=self.columns):
                yield pa.RecordBatch.from_arrays(
                    [batch.column(c).cast(schema.field(c).type) for c in self.columns], schema=schema
                )


def _arrow_type(spark_type):
    """Spark's Arrow type of a Spark type (timestamps in UTC, as the session's)."""
    from pyspark.sql.pandas.types import to_arrow_type

    try:
        return to_arrow_type(spark_type, timezone="UTC")  # pyspark 4.2
    except TypeError:  # pyspark 4.0/4.1: no `timezone`, timestamps in UTC
        return to_arrow_type(spark_type)


def register(spark) -> None:
    """Make `spark.read.format("tidelog_iceberg")` available in this session."""
    from .datasource import register as register_tidelog

    register_tidelog(spark)  # points the workers at this interpreter when PYSPARK_PYTHON is unset
    spark.dataSource.register(IcebergSource)


def source_name(warehouse: Path, table: str) -> str:
    digest = hashlib.sha1(f"{warehouse}\0{table}".encode()).hexdigest()[:16]
    return f"{NAME}_{digest}"


def attach_iceberg_tables(spark, warehouse: str | Path, names: list[str] | None = None) -> list[str]:
    """Register the catalog's tables (or `names`) as `tidelog.<name>` in this session."""
    from .iceberg import load_catalog
    from .tables import DATABASE, _sql_str, ensure_database, table_location, table_name

    warehouse = Path(warehouse).resolve()
    if not names_readable(spark):
        raise IcebergSessionError(
            "this session replaces spark_catalog (spark.sql.catalog.spark_catalog = "
            f"{spark.conf.get('spark.sql.catalog.spark_catalog')}), which cannot read Python data source "
            'tables: read Iceberg tables with spark.read.format("tidelog_iceberg") here, or by name in a '
            'session without it (build_session(warehouse, SparkSettings(table_format="iceberg")))'
        )
    register(spark)
    ensure_database(spark, warehouse)
    if names is None:
        names = sorted(ident[-1] for ident in load_catalog(warehouse).list_tables(DATABASE))
    for name in names:
        src = source_name(warehouse, name)
        cls = type(
            "IcebergTableSource", (IcebergSource,), {"source_name": src, "warehouse": str(warehouse), "table": name}
        )
        spark.dataSource.register(cls)
        spark.sql(f"DROP TABLE IF EXISTS {table_name(name)}")
        # External (LOCATION): dropping it from Spark's catalog must leave the files alone.
        location = _sql_str(table_location(warehouse, name))
        spark.sql(f"CREATE TABLE {table_name(name)} USING {src} LOCATION '{location}'")
    return [f"{DATABASE}.{n}" for n in names]
