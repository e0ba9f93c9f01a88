"""A reader in its own JVM for test_delta: counts two Delta tables in a loop, one JSON line per
round, until the stop file appears.

    python delta_reader.py <main table dir> <latest table dir> <out.jsonl> <stop file>
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from tidelog.spark_export.session import SparkSettings, build_session


def main() -> int:
    main_dir, latest_dir, out, stop = sys.argv[1:5]
    spark = build_session(
        tempfile.mkdtemp(prefix="delta-reader-"),
        SparkSettings(
            master="local[1]", app_name="delta-reader", driver_memory="512m", shuffle_partitions=1, table_format="delta"
        ),
    )
    try:
        with open(out, "a") as f:
            while not Path(stop).exists():
                row = {
                    "main": spark.read.format("delta").load(main_dir).count(),
                    "latest": spark.read.format("delta").load(latest_dir).count(),
                    "at": time.time(),
                }
                f.write(json.dumps(row) + "\n")
                f.flush()
                time.sleep(0.2)  # leave the writer CPU on a small machine
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
