"""The `tidelog` PySpark data source against segment files built by the log engine."""

from __future__ import annotations

import datetime as dt

import pytest
from spark_logdata import DAY_MS, LogWriter


def idents(rows):
    return sorted(
        (
            r.partition,
            r.offset,
            r.key and bytes(r.key),
            r.value and bytes(r.value),
            int(r.timestamp.replace(tzinfo=dt.UTC).timestamp() * 1000),
            tuple((h.key, h.value and bytes(h.value)) for h in r.headers),
            r.producer_id,
            r.is_transactional,
        )
        for r in rows
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds") / "data"
    w = LogWriter(d, "events", partitions=2, segment_bytes=8192, seed=7)
    w.fill(60)
    closed = w.roll()
    w.plain(0, 5)  # in the active segment: not read by default
    w.close()
    return d, w.model.committed(closed)


def test_schema_and_committed_rows(spark, data):
    d, expected = data
    df = spark.read.format("tidelog").option("topic", "events").load(str(d))
    assert [f.name for f in df.schema.fields] == [
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "producer_id",
        "is_transactional",
    ]
    assert df.rdd.getNumPartitions() > 4  # one Spark partition per segment
    assert idents(df.collect()) == sorted(r.ident() for r in expected)


def test_pushed_down_filters_are_exact(spark, data):
    d, expected = data
    df = spark.read.format("tidelog").option("topic", "events").load(str(d))
    ts = sorted(r.timestamp for r in expected)
    lo, hi = ts[len(ts) // 3], ts[len(ts) // 3] + DAY_MS
    lo_dt = dt.datetime.fromtimestamp(lo / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    hi_dt = dt.datetime.fromtimestamp(hi / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    got = df.where(f"partition = 1 AND offset >= 40 AND timestamp >= '{lo_dt}' AND timestamp < '{hi_dt}'")
    want = [r for r in expected if r.partition == 1 and r.offset >= 40 and lo <= r.timestamp < hi]
    assert idents(got.collect()) == sorted(r.ident() for r in want)
    fresh = spark.read.format("tidelog").option("topic", "events").load(str(d))  # see README: pyspark 4.3
    assert got.rdd.getNumPartitions() < fresh.rdd.getNumPartitions()  # segments skipped at planning


def test_pushdown_can_be_turned_off(spark, data):
    d, expected = data
    df = spark.read.format("tidelog").option("topic", "events").option("pushFilters", "false").load(str(d))
    assert [r.offset for r in df.where("partition = 0 AND offset < 30").collect()] == [
        r.offset for r in expected if r.partition == 0 and r.offset < 30
    ]
    assert df.count() == len(expected)  # the same DataFrame, unfiltered: nothing left over from above


def test_options(spark, data):
    d, expected = data

    def base():
        return spark.read.format("tidelog").option("topic", "events")  # a reader's options stick to it

    got = base().option("partitions", "0").option("startingOffset", 10).option("endingOffset", 50).load(str(d))
    assert [r.offset for r in got.collect()] == [r.offset for r in expected if r.partition == 0 and 10 <= r.offset < 50]
    everything = base().option("isolationLevel", "read_uncommitted").option("includeActiveSegment", "true").load(str(d))
    assert everything.count() > len(expected)


def test_active_segment_with_a_timestamp_filter(spark, tmp_path):
    """An active segment read while its log is open (as while the broker runs): its .timeindex is
    preallocated and zero-filled past the real entries. With includeActiveSegment and a timestamp
    filter the segment was dropped (its "largest timestamp" read as 0 from an unfilled slot)."""
    from spark_logdata import T0

    from tidelog.log import LogConfig, PartitionLog
    from tidelog.log.records import Record, build_batch

    d = tmp_path / "data"
    log = PartitionLog.open(d, "active", 0, LogConfig(index_interval_bytes=512), lambda: T0 + 1000)
    try:
        for i in range(100):
            log.append(build_batch([Record(b"k%d" % i, b"v" * 20, T0 + i)]))
        log.flush()
        tindex = next((d / "active-0").glob("*.timeindex"))
        assert tindex.stat().st_size > 12 * 10, "the active time index is preallocated"

        def read(**opts):
            r = spark.read.format("tidelog").option("topic", "active").option("includeActiveSegment", "true")
            for k, v in opts.items():
                r = r.option(k, v)
            return r.load(str(d))

        assert read().count() == 100
        assert read(startingTimestamp=1).count() == 100
        assert read(startingTimestamp=T0 + 90).count() == 10
        late = dt.datetime.fromtimestamp((T0 + 50) / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        assert read().where(f"timestamp >= '{late}'").count() == 50
    finally:
        log.close()


def _env_without_venv():
    import os
    import sys
    from pathlib import Path

    venv_bin = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def test_readme_recipes_work_without_an_activated_venv(data, tmp_path):
    """The README's `PYSPARK_PYTHON=.venv/bin/python .venv/bin/pyspark` recipe and a user's own
    script run as `.venv/bin/python script.py` (its workers used `python3` from PATH, which lacks
    tidelog: PYTHON_DATA_SOURCE_ERROR)."""
    import subprocess
    import sys
    from pathlib import Path

    d, expected = data
    env = _env_without_venv()
    script = tmp_path / "user.py"
    script.write_text(
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[2]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        "from tidelog.spark_export.datasource import register\n"
        "register(spark)\n"
        "print('COUNT', spark.read.format('tidelog').option('topic', 'events').load(sys.argv[1]).count())\n"
    )
    res = subprocess.run(
        [sys.executable, str(script), str(d)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert f"COUNT {len(expected)}" in res.stdout, res.stderr[-3000:]
    pyspark = Path(sys.executable).parent / "pyspark"
    shell = subprocess.run(
        [str(pyspark)],
        input=(
            "from tidelog.spark_export.datasource import register; register(spark)\n"
            f"print('COUNT', spark.read.format('tidelog').option('topic', 'events').load({str(d)!r}).count())\n"
        ),
        env={**env, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON_OPTS": "-i"},  # stdin is a pipe
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert f"COUNT {len(expected)}" in shell.stdout, shell.stderr[-3000:]
