"""Run by test_spark_kafka_source.py in its own process (a SparkSession's jars are fixed when its JVM
starts): read a tidelog topic with Spark's own Kafka source, as a batch query and as a Structured
Streaming query (trigger availableNow into a memory sink), with the isolation level given, and
print one JSON line {"batch": [...], "stream": [...]} of the values read, in offset order per
partition.

    python spark_kafka_driver.py BOOTSTRAP TOPIC ISOLATION JARS CHECKPOINT_DIR
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    bootstrap, topic, isolation, jars, checkpoint = sys.argv[1:6]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("tidelog-spark-kafka")
        .config("spark.jars", jars)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    common = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
        "kafka.isolation.level": isolation,
    }
    df = spark.read.format("kafka").options(**common).option("endingOffsets", "latest").load()
    batch = [
        (r.partition, r.offset, r.value.decode())
        for r in df.select("partition", "offset", "value").orderBy("partition", "offset").collect()
    ]
    q = (
        spark.readStream.format("kafka")
        .options(**common)
        .load()
        .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName("tidelog_stream")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(300)
    stream = [
        (r.partition, r.offset, r.value)
        for r in spark.sql("SELECT * FROM tidelog_stream ORDER BY partition, offset").collect()
    ]
    print(json.dumps({"batch": batch, "stream": stream}))
    spark.stop()


if __name__ == "__main__":
    main()
