"""Names and locations of the export's tables, shared by every table format: the `tidelog`
database of a warehouse, `tidelog.<topic>` under `<warehouse>/tidelog.db/<topic>`, and the
tables' columns (`session` builds the session and registers the tables; `delta`, `iceberg` and
`iceberg_source` name and place theirs with these)."""

from __future__ import annotations

from pathlib import Path

DATABASE = "tidelog"


def is_hive(spark) -> bool:
    return spark.conf.get("spark.sql.catalogImplementation", "in-memory") == "hive"


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def table_name(topic: str, suffix: str = "") -> str:
    """`tidelog`.`<topic><suffix>`; topic names may hold '.' and '-', hence the quoting."""
    return f"{quote(DATABASE)}.{quote(topic + suffix)}"


def ensure_database(spark, warehouse: str | Path) -> None:
    """The `tidelog` database of `warehouse` in this session's catalog."""
    spark.sql(
        f"CREATE DATABASE IF NOT EXISTS {quote(DATABASE)} "
        f"LOCATION '{_sql_str(Path(warehouse).resolve() / (DATABASE + '.db'))}'"
    )


def _sql_str(v) -> str:
    return str(v).replace("\\", "\\\\").replace("'", "\\'")


TABLE_COLUMNS = (
    "topic string, offset long, timestamp timestamp, timestamp_type int, key binary, value binary, "
    "headers array<struct<key: string, value: binary>>, producer_id long, is_transactional boolean, "
    "date date, partition int"
)
LATEST_COLUMNS = (
    "topic string, partition int, key binary, offset long, timestamp timestamp, timestamp_type int, "
    "value binary, headers array<struct<key: string, value: binary>>, producer_id long, "
    "is_transactional boolean"
)


def spark_type(arrow_type) -> str:
    """Spark's DDL name of an Arrow type (a typed column's, `typed`)."""
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(arrow_type).simpleString()


def typed_columns(columns: str, formats: dict[str, dict]) -> str:
    """`columns` (TABLE_COLUMNS or LATEST_COLUMNS) of a topic with typed columns (`formats`, as
    the manifest records them: `{"value": {"type": <Spark DDL>, ...}}`): their types, then their
    `<column>_raw` and the `_error` columns (before the partition columns)."""
    if not formats:
        return columns
    for column in ("key", "value"):
        if column in formats:
            columns = columns.replace(f" {column} binary,", f" {column} {formats[column]['type']},", 1)
    extra = "".join(f", {quote(c + '_raw')} binary" for c in ("key", "value") if c in formats)
    extra += f", {quote('_error')} string"
    if ", date date" in columns:
        return columns.replace(", date date", extra + ", date date", 1)
    return columns + extra


def table_location(warehouse: Path, topic: str) -> Path:
    return Path(warehouse).resolve() / (DATABASE + ".db") / topic
