"""One SparkSession for the whole Spark part of the suite (starting one costs seconds).

It has Delta Lake (jars from the local Maven repository, fetched with mvn): the Delta tests need it,
and the Parquet tests then also show that a user's Delta-enabled session reads Parquet exports."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from tidelog.spark_export.session import SparkSettings, build_session

    session = build_session(
        tmp_path_factory.mktemp("spark-warehouse"),
        SparkSettings(
            app_name="tidelog-tests", shuffle_partitions=2, table_format="delta", extra={"spark.ui.enabled": "false"}
        ),
    )
    yield session
    session.stop()


@pytest.fixture
def catalog(spark):
    """A clean `tidelog` database for one test (tables are external: their files stay)."""
    yield spark
    if spark.catalog.databaseExists("tidelog"):
        for t in spark.catalog.listTables("tidelog"):
            spark.sql(f"DROP TABLE IF EXISTS tidelog.`{t.name}`")
        spark.sql("DROP DATABASE IF EXISTS tidelog")
