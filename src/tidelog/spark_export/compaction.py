"""The reduction behind every `_latest` table (Parquet's rewrite in `job`, Delta's MERGE in
`delta`, Iceberg's copy-on-write in `iceberg_job`): the newest row per (partition, key)."""

from __future__ import annotations


def newest_per_key(df):
    """The rows of `df` with a key, the one of highest offset per (partition, key) (tombstones included)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("partition", "key").orderBy(F.col("offset").desc())
    return (
        df.where(F.col("key").isNotNull())
        .withColumn("_rank", F.row_number().over(w))
        .where(F.col("_rank") == 1)
        .drop("_rank")
    )
