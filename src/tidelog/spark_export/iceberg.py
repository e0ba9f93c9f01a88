"""Apache Iceberg tables for the export (`tidelog export --table-format iceberg`): the catalog,
the tables' schemas and partition specs, and the run's commits, with pyiceberg.

Catalog: an embedded SQL catalog on SQLite, `<warehouse>/_tidelog/iceberg.db` (pyiceberg's
`SqlCatalog`; its tables `iceberg_tables` and `iceberg_namespace_properties` are those of
Iceberg's Java `JdbcCatalog`, schema V1), or a REST catalog (`--iceberg-catalog-uri
http://...`). Either way the catalog is named `iceberg` and the tables are `tidelog.<topic>` and
`tidelog.<topic>_latest` in it. The first run records the catalog in
`<warehouse>/_tidelog/iceberg.json`; later runs and readers take it from there.

On disk (both catalogs): a table lives in `<warehouse>/tidelog.db/<name>/`, its metadata (JSON,
manifest lists, manifests) in `metadata/`, its data files in `data/`:

    tidelog.db/orders/data/date=<UTC day>/partition=<n>/part-<run id>-<task>-<uuid>.parquet
    tidelog.db/profiles_latest/data/partition=<n>/part-<run id>-<uuid>.parquet

`tidelog.<topic>` is partitioned by `day(timestamp)` (the partition field is named `date`) and
`identity(partition)`; `tidelog.<topic>_latest` by `identity(partition)`. The data files are
written by pyarrow (see `direct` and `iceberg_job`), one partition of the spec per file, and added
to the table by `commit_append` / `commit_replace`: pyiceberg reads each file's footer for its
statistics and partition, and commits ONE snapshot. Its summary carries the run id
(`tidelog.run-id`), the manifest's serial (`tidelog.serial`) and the run's offset ranges per
partition (`tidelog.offsets`, JSON `{"<partition>": [start, end]}`), which is how a run finds out
whether its commit happened (`snapshot_of`).

Crash behaviour: a commit is one compare-and-swap of the table's metadata location in the
catalog: a crash before it leaves the run's data files on disk, unreferenced, and
`remove_uncommitted` deletes them when the run is completed (every file name carries the run id);
after it, the snapshot is there and the run's write of that table is skipped. Files of a failed
Spark task attempt (its retry wrote the rows again) are deleted before the commit
(`remove_strays`).

Typed columns (`typed`): a table is created with its files' Arrow schema (`_typed_schema`), and
each commit first unions the files' schema into the table's in the same transaction (`widen`):
one catalog swap adds the schema (new nested fields with fresh ids, the name mapping extended)
and the snapshot that uses it. Files carry no field ids and are read through the name mapping,
so an older file reads a field added since as null; a union already there changes nothing.

Iceberg's own Spark runtime reads the tables where it runs: Spark 4.1 (runtime 1.12.0, checked by
hand with pyspark 4.1.4: names, `VERSION AS OF`, metadata tables) and 4.0 (runtime 1.10.1, not
tried); there is none for 4.2 (`iceberg_source` is the route there). `spark_conf(warehouse)` is
the session configuration for it: the runtime and SQLite's JDBC driver (from the local Maven
repository, fetched with mvn, else `spark.jars.packages`) and a catalog `iceberg` over the same
SQLite file (Iceberg's `JdbcCatalog`, schema V1) or REST catalog; then `iceberg.tidelog.orders`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .direct import FILE_COLUMNS
from .manifest import MANIFEST_DIR
from .tables import DATABASE, table_location

log = logging.getLogger("tidelog.spark_export")

CATALOG = "iceberg"
CONFIG_FILE = "iceberg.json"
RUN_ID = "tidelog.run-id"
SERIAL = "tidelog.serial"
OFFSETS = "tidelog.offsets"
# The data files' columns, in the order of the tables' schemas: the Parquet export's file columns
# with `partition` after `topic` (in the files: an Iceberg reader takes column values from the
# files, not from directory names).
MAIN_COLUMNS = (FILE_COLUMNS[0], "partition", *FILE_COLUMNS[1:])
LATEST_COLUMNS = (
    "topic",
    "partition",
    "key",
    "offset",
    "timestamp",
    "timestamp_type",
    "value",
    "headers",
    "producer_id",
    "is_transactional",
)


RUNTIMES = {"4.0": "1.10.1", "4.1": "1.12.0"}  # Spark line -> newest iceberg-spark-runtime for it
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.54.1.0"


class IcebergCatalogError(ValueError):
    """A catalog other than the one the warehouse's tables are in."""


def sqlite_path(warehouse: Path) -> Path:
    return Path(warehouse).resolve() / MANIFEST_DIR / "iceberg.db"


def catalog_config(warehouse: str | Path, uri: str | None = None, save: bool = False) -> dict[str, str]:
    """The warehouse's catalog: what its first run recorded, else a REST catalog at `uri`, else
    the embedded SQLite one. `uri` naming another catalog than the recorded one is refused."""
    warehouse = Path(warehouse).resolve()
    path = warehouse / MANIFEST_DIR / CONFIG_FILE
    if path.exists():
        conf = json.loads(path.read_text())
        if uri and uri != conf.get("uri"):
            raise IcebergCatalogError(
                f"{warehouse} keeps its Iceberg tables in the catalog at {conf.get('uri')}, not {uri}"
            )
        return conf
    if uri:
        conf = {"type": "rest", "uri": uri}
    else:
        conf = {"type": "sql", "uri": f"sqlite:///{sqlite_path(warehouse)}"}
    if save:
        from tidelog.log.atomic import replace_file

        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, json.dumps(conf, indent=1).encode(), sync_dir=True)
    return conf


def load_catalog(warehouse: str | Path, uri: str | None = None, save: bool = False):
    """The pyiceberg catalog of `warehouse` (see `catalog_config`)."""
    conf = catalog_config(warehouse, uri, save)
    warehouse_uri = Path(warehouse).resolve().as_uri()
    if conf["type"] == "sql":
        from pyiceberg.catalog.sql import SqlCatalog

        sqlite_path(Path(warehouse)).parent.mkdir(parents=True, exist_ok=True)
        return SqlCatalog(CATALOG, uri=conf["uri"], warehouse=warehouse_uri)
    from pyiceberg.catalog.rest import RestCatalog

    # No `warehouse`: for a REST catalog it names one of the server's; tables get their location
    # (in this warehouse) when they are created.
    return RestCatalog(CATALOG, uri=conf["uri"])


def _schema(columns: tuple[str, ...]):
    """The Iceberg schema of `columns` (field ids in that order; nested ids after them)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        BinaryType,
        BooleanType,
        IntegerType,
        ListType,
        LongType,
        NestedField,
        StringType,
        StructType,
        TimestamptzType,
    )

    types: dict[str, Any] = {
        "topic": StringType(),
        "partition": IntegerType(),
        "offset": LongType(),
        "timestamp": TimestamptzType(),
        "timestamp_type": IntegerType(),
        "key": BinaryType(),
        "value": BinaryType(),
        "producer_id": LongType(),
        "is_transactional": BooleanType(),
    }
    n = len(columns)
    types["headers"] = ListType(
        n + 1,
        StructType(
            NestedField(n + 2, "key", StringType(), required=False),
            NestedField(n + 3, "value", BinaryType(), required=False),
        ),
        element_required=False,
    )
    return Schema(*(NestedField(i + 1, c, types[c], required=False) for i, c in enumerate(columns)))


def _typed_schema(file_schema):
    """The Iceberg schema of typed tables' files (`file_schema`: Arrow, `direct.files_schema`),
    with fresh field ids (pyiceberg's own conversion, as `create_table` does for an Arrow schema)."""
    from pyiceberg.io.pyarrow import _ConvertToIcebergWithoutIDs, visit_pyarrow
    from pyiceberg.schema import assign_fresh_schema_ids

    return assign_fresh_schema_ids(visit_pyarrow(file_schema, _ConvertToIcebergWithoutIDs()))


def _spec(schema, latest: bool):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import DayTransform, IdentityTransform

    part = schema.find_field("partition").field_id
    if latest:
        return PartitionSpec(PartitionField(part, 1000, IdentityTransform(), "partition"))
    ts = schema.find_field("timestamp").field_id
    return PartitionSpec(
        PartitionField(ts, 1000, DayTransform(), "date"), PartitionField(part, 1001, IdentityTransform(), "partition")
    )


def identifier(name: str) -> tuple[str, str]:
    return (DATABASE, name)


class IcebergTables:
    """The Iceberg side of an export run over one warehouse's catalog."""

    def __init__(self, warehouse: str | Path, uri: str | None = None, save: bool = False) -> None:
        self.warehouse = Path(warehouse).resolve()
        self.catalog = load_catalog(self.warehouse, uri, save)

    def ensure(self, name: str, latest: bool = False, file_schema=None):
        """The table `tidelog.<name>`, created empty (no snapshot) when the catalog has none; with
        typed columns (`typed`) in the types of `file_schema` (Arrow: its files' schema)."""
        self.catalog.create_namespace_if_not_exists(DATABASE)
        if file_schema is not None:
            schema = _typed_schema(file_schema)
        else:
            schema = _schema(LATEST_COLUMNS if latest else MAIN_COLUMNS)
        table = self.catalog.create_table_if_not_exists(
            identifier(name),
            schema=schema,
            location=table_location(self.warehouse, name).as_uri(),
            partition_spec=_spec(schema, latest),
            properties={"write.parquet.compression-codec": "zstd"},
        )
        return table

    def load(self, name: str):
        return self.catalog.load_table(identifier(name))

    def exists(self, name: str) -> bool:
        return self.catalog.table_exists(identifier(name))

    @staticmethod
    def data_dir(table) -> Path:
        return _local(table.location()) / "data"

    @staticmethod
    def snapshot_of(table, run_id: str):
        """The snapshot `run_id` committed to `table`, or None."""
        for s in table.snapshots():
            if s.summary is not None and s.summary.additional_properties.get(RUN_ID) == run_id:
                return s
        return None

    @staticmethod
    def added_files(table, snapshot) -> list[str]:
        """The data files `snapshot` added (as paths on this machine)."""
        from pyiceberg.manifest import ManifestEntryStatus

        out = []
        for mf in snapshot.manifests(table.io):
            if mf.added_snapshot_id != snapshot.snapshot_id:
                continue
            for e in mf.fetch_manifest_entry(table.io, discard_deleted=True):
                if e.status == ManifestEntryStatus.ADDED and e.snapshot_id == snapshot.snapshot_id:
                    out.append(str(_local(e.data_file.file_path)))
        return sorted(out)

    @staticmethod
    def current_files(table, partitions: list[int] | None = None) -> list:
        """The DataFiles of the current snapshot (of those Kafka partitions)."""
        if table.current_snapshot() is None or partitions == []:
            return []
        where = "true" if partitions is None else f"partition IN ({', '.join(str(int(p)) for p in partitions)})"
        return [t.file for t in table.scan(row_filter=where).plan_files()]

    @staticmethod
    def remove_uncommitted(table, run_id: str) -> list[Path]:
        """Delete `run_id`'s data files of `table` (call it only when the run has no snapshot there)."""
        removed = []
        data = IcebergTables.data_dir(table)
        if data.exists():
            for f in data.rglob(f"part-{run_id}-*"):
                f.unlink(missing_ok=True)
                removed.append(f)
        if removed:
            log.warning("deleted %d data files of run %s never committed to %s", len(removed), run_id, table.name())
        return removed

    @staticmethod
    def remove_strays(files: list[str], run_id: str) -> list[Path]:
        """Delete `run_id`'s files beside `files` that are not among them: those of Spark task
        attempts that failed and were retried (their directories are those of the retry's files)."""
        keep = {str(Path(f)) for f in files}
        stray = [f for d in {Path(f).parent for f in files} for f in d.glob(f"part-{run_id}-*") if str(f) not in keep]
        for f in stray:
            f.unlink(missing_ok=True)
        return stray

    @staticmethod
    def properties(run_id: str, serial: int, offsets: dict[int, tuple[int, int]]) -> dict[str, str]:
        return {
            RUN_ID: run_id,
            SERIAL: str(serial),
            OFFSETS: json.dumps({str(p): [lo, hi] for p, (lo, hi) in sorted(offsets.items())}),
        }

    @staticmethod
    def widen(tx, file_schema) -> None:
        """In transaction `tx`: the table's schema extended by the fields of `file_schema` (Arrow)
        it lacks (`union_by_name`: new fields get fresh ids, the name mapping follows, a field
        only gains fields or a wider type); nothing when it has them all, so a union applied again
        changes nothing."""
        if file_schema is not None:
            with tx.update_schema() as update:
                update.union_by_name(file_schema)

    @staticmethod
    def check_widening(table, file_schema) -> None:
        """Raise (pyiceberg's ValidationError or ValueError) when `file_schema` cannot be unioned
        into `table`'s schema; nothing is committed."""
        table.update_schema().union_by_name(file_schema)._apply()

    @staticmethod
    def commit_append(table, files: list[str], props: dict[str, str], file_schema=None) -> None:
        """One snapshot adding `files` (each in one partition of the spec); with `file_schema`
        (typed columns: the files' Arrow schema), the table's schema widened to it in the same
        commit (`widen`), so the snapshot reads the files' new fields and older files read them as
        null (they are matched by name: the files carry no field ids, the name mapping does)."""
        with table.transaction() as tx:
            IcebergTables.widen(tx, file_schema)
            tx.add_files(files, snapshot_properties=props, check_duplicate_files=False)

    @staticmethod
    def commit_replace(table, deleted: list, files: list[str], props: dict[str, str], file_schema=None) -> None:
        """One snapshot removing the DataFiles `deleted` and adding `files` (copy-on-write; the
        schema widened as in `commit_append`)."""
        from pyiceberg.io.pyarrow import parquet_file_to_data_file
        from pyiceberg.table import TableProperties

        with table.transaction() as tx:
            IcebergTables.widen(tx, file_schema)
            if tx.table_metadata.name_mapping() is None:
                tx.set_properties(
                    **{TableProperties.DEFAULT_NAME_MAPPING: tx.table_metadata.schema().name_mapping.model_dump_json()}
                )
            added = [parquet_file_to_data_file(table.io, tx.table_metadata, f) for f in files]
            with tx.update_snapshot(snapshot_properties=props).overwrite() as op:
                for f in deleted:
                    op.delete_data_file(f)
                for f in added:
                    op.append_data_file(f)

    @staticmethod
    def total_records(table) -> int:
        s = table.current_snapshot()
        if s is None or s.summary is None:
            return 0
        return int(s.summary.additional_properties.get("total-records", 0))


def _local(location: str) -> Path:
    """A table or file location as a local path (`file:` URIs and plain paths)."""
    if location.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(location).path))
    if location.startswith("file:"):
        return Path(location[len("file:") :])
    return Path(location)


def local_path(location: str) -> str:
    return str(_local(location))


def runtime_coordinates(version: str | None = None) -> list[str]:
    """Maven coordinates of Iceberg's Spark runtime for this Spark and of SQLite's JDBC driver."""
    if version is None:
        import pyspark

        version = pyspark.__version__
    line = ".".join(version.split(".")[:2])
    if line not in RUNTIMES:
        raise RuntimeError(
            f"Iceberg has no Spark runtime that works with Spark {version} (runtimes exist for "
            f"{', '.join(RUNTIMES)}): read the tables with the tidelog_iceberg data source (iceberg_source)"
        )
    return [f"org.apache.iceberg:iceberg-spark-runtime-{line}_2.13:{RUNTIMES[line]}", SQLITE_JDBC]


def _m2_jar(coordinate: str) -> Path:
    group, artifact, version = coordinate.split(":")
    repo = Path(os.environ.get("MAVEN_REPO", Path.home() / ".m2" / "repository"))
    return repo.joinpath(*group.split(".")) / artifact / version / f"{artifact}-{version}.jar"


def spark_conf(warehouse: str | Path, version: str | None = None) -> dict[str, str]:
    """Spark settings for reading the warehouse's tables with Iceberg's own runtime (Spark 4.0/4.1),
    as `iceberg.tidelog.<name>`: `SparkSettings(extra=spark_conf(warehouse))`."""
    coords = runtime_coordinates(version)
    jars = [_m2_jar(c) for c in coords]
    for c, jar in zip(coords, jars):
        if not jar.exists() and shutil.which("mvn"):
            subprocess.run(
                ["mvn", "-B", "-q", "dependency:get", f"-Dartifact={c}", "-Dtransitive=false"],
                check=False,
                timeout=600,
                stdout=subprocess.DEVNULL,
            )
    conf = catalog_config(warehouse)
    prefix = f"spark.sql.catalog.{CATALOG}"
    out = {prefix: "org.apache.iceberg.spark.SparkCatalog", f"{prefix}.cache-enabled": "false"}
    if all(j.exists() for j in jars):
        out["spark.jars"] = ",".join(str(j) for j in jars)
    else:
        out["spark.jars.packages"] = ",".join(coords)
    if conf["type"] == "sql":
        out[f"{prefix}.type"] = "jdbc"
        out[f"{prefix}.uri"] = f"jdbc:sqlite:{sqlite_path(Path(warehouse))}"
        out[f"{prefix}.warehouse"] = Path(warehouse).resolve().as_uri()
        out[f"{prefix}.jdbc.schema-version"] = "V1"
    else:
        out[f"{prefix}.type"] = "rest"
        out[f"{prefix}.uri"] = conf["uri"]
    return out
