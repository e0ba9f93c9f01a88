"""A new session in its own JVM for test_iceberg: attaches an Iceberg warehouse's tables and
reads them by name, as a user's session would; prints one JSON document.

    python iceberg_reader.py <warehouse> <table> [<snapshot id> ...]

Output: {"tables": [names attached], "rows": [[partition, offset], ...] of `tidelog.<table>`,
"at": {"<snapshot id>": count read with WITH ('snapshot-id' = ...)}}.
"""

from __future__ import annotations

import json
import sys
import tempfile

from tidelog.spark_export.session import SparkSettings, attach_tables, build_session


def main() -> int:
    warehouse, name, *ids = sys.argv[1:]
    spark = build_session(
        tempfile.mkdtemp(prefix="iceberg-reader-"),
        SparkSettings(master="local[1]", app_name="iceberg-reader", driver_memory="512m", table_format="iceberg"),
    )
    try:
        tables = attach_tables(spark, warehouse)
        rows = spark.sql(f"SELECT partition, offset FROM tidelog.`{name}` ORDER BY 1, 2").collect()
        at = {
            i: spark.sql(f"SELECT count(*) FROM tidelog.`{name}` WITH ('snapshot-id' = '{i}')").first()[0] for i in ids
        }
        print(json.dumps({"tables": tables, "rows": [[r.partition, r.offset] for r in rows], "at": at}))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
