"""Iceberg's own Spark runtime reading an exported warehouse, for test_iceberg; run with an
interpreter whose pyspark is 4.0 or 4.1 (`TIDELOG_ICEBERG_SPARK_PYTHON`): the runtime does not work
with pyspark 4.2. Prints one JSON document:

    python iceberg_runtime_reader.py <warehouse>
    {"tables": [...], "orders": n, "profiles_latest": n, "runs": {"<run id>": count at that snapshot}}
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

from tidelog.spark_export.iceberg import spark_conf


def main() -> int:
    warehouse = sys.argv[1]
    b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    for k, v in spark_conf(warehouse).items():
        b = b.config(k, v)
    spark = b.config("spark.sql.session.timeZone", "UTC").getOrCreate()
    try:
        snaps = spark.sql(
            "SELECT snapshot_id, summary['tidelog.run-id'] AS run FROM iceberg.tidelog.orders.snapshots"
        ).collect()
        doc = {
            "tables": sorted(r.tableName for r in spark.sql("SHOW TABLES IN iceberg.tidelog").collect()),
            "orders": spark.table("iceberg.tidelog.orders").count(),
            "profiles_latest": spark.table("iceberg.tidelog.profiles_latest").count(),
            "runs": {
                s.run: spark.sql(f"SELECT count(*) FROM iceberg.tidelog.orders VERSION AS OF {s.snapshot_id}").first()[
                    0
                ]
                for s in snaps
            },
        }
        print(json.dumps(doc))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
