"""A `tidelog` streaming query in a process of its own (test_stream's kill-and-restart test).

    python stream_query.py <log dir> <sink dir> <checkpoint dir> <maxOffsetsPerTrigger>

Reads topic `events` read_committed into a Parquet file sink with Trigger.AvailableNow, a few
offsets per micro-batch, and prints DONE once it has caught up.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(log_dir: str, sink: str, checkpoint: str, max_offsets: str) -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from tidelog.spark_export.session import SparkSettings, build_session

    spark = build_session(
        Path(checkpoint).parent / "warehouse",
        SparkSettings(app_name="tidelog-stream-test", shuffle_partitions=2),
    )
    query = (
        spark.readStream.format("tidelog")
        .option("topic", "events")
        .option("maxOffsetsPerTrigger", max_offsets)
        .load(log_dir)
        .writeStream.format("parquet")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(sink)
    )
    query.awaitTermination()
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
