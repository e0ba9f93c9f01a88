"""`--table-format delta`: one Delta commit per run and table, time travel per run, exactly once
through a crash at every phase (in process and a killed `tidelog export`), and a reader in another
JVM that never sees part of a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_logdata import LogWriter
from test_job import assert_exactly, assert_tables, export, manifest

from tidelog.spark_export.job import DELTA_CRASH_POINTS, SimulatedCrash
from tidelog.spark_export.manifest import TableFormatError

pytestmark = pytest.mark.timeout(900)
HERE = Path(__file__).parent


def history(spark, location: Path) -> list[tuple[int, str, str | None]]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{location}`").select("version", "operation", "userMetadata").collect()
    return sorted((r.version, r.operation, r.userMetadata) for r in rows)


def unreferenced(location: Path) -> list[str]:
    """Parquet files under a Delta table that its log does not name."""
    import pyarrow as pa
    from deltalake import DeltaTable

    named = set(pa.table(DeltaTable(str(location)).get_add_actions()).column("path").to_pylist())
    return sorted(
        f.relative_to(location).as_posix()
        for f in location.rglob("*.parquet")
        if f.relative_to(location).as_posix() not in named
    )


def run_ids(warehouse: Path) -> list[str]:
    return [r["run_id"] for r in manifest(warehouse)["runs"]]


def test_each_run_is_one_commit_per_table_with_time_travel(catalog, tmp_path):
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    orders = LogWriter(data, "orders", partitions=2, segment_bytes=8192, seed=21)
    profiles = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=22, keys=25, compact=True)
    counts = []
    for _ in range(3):
        orders.fill(20)
        profiles.fill(15)
        closed_o, closed_p = orders.roll(), profiles.roll()
        s = export(spark, data, wh, table_format="delta")
        assert s["orders"].rows > 0 and s["profiles"].latest_rows is not None
        counts.append(len(orders.model.committed(closed_o)))
    assert manifest(wh)["table_format"] == "delta"
    # The append table (created by delta-rs) has the Parquet table's schema.
    from tidelog.spark_export.session import TABLE_COLUMNS

    want = spark.createDataFrame([], TABLE_COLUMNS).schema
    assert spark.table("tidelog.orders").schema.simpleString() == want.simpleString()
    assert_exactly(spark, "tidelog.orders", orders.model.committed(closed_o))
    committed = profiles.model.committed(closed_p)
    assert_tables(spark, "profiles", committed)
    assert spark.sql("SELECT count(*) FROM tidelog.orders WHERE date != to_date(timestamp)").first()[0] == 0
    # Filters Delta answers with the files' statistics (data skipping) lose no row.
    rows = orders.model.committed(closed_o)
    mid = sorted(r.timestamp for r in rows)[len(rows) // 2]
    q = f"SELECT count(*) FROM tidelog.orders WHERE timestamp >= timestamp_millis({mid})"
    assert spark.sql(q).first()[0] == sum(r.timestamp >= mid for r in rows)
    off = sorted(r.offset for r in rows if r.partition == 1)[len(rows) // 4]
    q = f"SELECT count(*) FROM tidelog.orders WHERE partition = 1 AND offset > {off} AND topic = 'orders'"
    assert spark.sql(q).first()[0] == sum(r.partition == 1 and r.offset > off for r in rows)

    ids = run_ids(wh)
    main = wh / "tidelog.db" / "orders"
    # Version 0 creates the table; then one append per run, named by its run id.
    assert history(spark, main) == [(0, "CREATE TABLE", None)] + [(n + 1, "WRITE", i) for n, i in enumerate(ids)]
    assert [op for _v, op, _m in history(spark, wh / "tidelog.db" / "profiles_latest")] == ["CREATE TABLE"] + [
        "MERGE"
    ] * 3
    for version, want in enumerate(counts, start=1):  # time travel: each run's table
        assert spark.sql(f"SELECT count(*) FROM tidelog.orders VERSION AS OF {version}").first()[0] == want
    # Nothing staged, no Parquet version directories of _latest.
    assert not list((wh / "_tidelog").glob("staging/*"))
    assert not list((wh / "tidelog.db" / "profiles_latest").glob("v-*"))

    # A warehouse keeps its format.
    with pytest.raises(TableFormatError):
        export(spark, data, wh, table_format="parquet")
    # A later session attaches the tables from the manifest.
    spark.sql("DROP TABLE tidelog.orders")
    from tidelog.spark_export.session import attach_tables

    assert set(attach_tables(spark, wh)) == {"tidelog.orders", "tidelog.profiles", "tidelog.profiles_latest"}
    assert spark.table("tidelog.orders").count() == counts[-1]
    orders.close()
    profiles.close()


def test_crash_at_every_phase_then_rerun_commits_each_run_once(catalog, tmp_path):
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=23, keys=30, compact=True)
    w.fill(20)
    w.roll()
    export(spark, data, wh, table_format="delta")
    for point in DELTA_CRASH_POINTS:
        w.fill(10)
        closed = w.roll()
        with pytest.raises(SimulatedCrash):
            export(spark, data, wh, crash_at=point)
        crashed = manifest(wh)["pending"]
        assert crashed is not None and crashed["run_id"]
        if point == "written":  # its files are on disk, not in the table
            assert unreferenced(wh / "tidelog.db" / "profiles")
        export(spark, data, wh)  # completes the crashed run, then runs (nothing new to export)
        m = manifest(wh)
        assert m["pending"] is None and crashed["run_id"] in run_ids(wh)
        assert unreferenced(wh / "tidelog.db" / "profiles") == []
        committed = w.model.committed(closed)
        assert_tables(spark, "profiles", committed)
    # One append and one MERGE per run that had data: the completed runs did not commit twice.
    ids = run_ids(wh)
    for table, op in (("profiles", "WRITE"), ("profiles_latest", "MERGE")):
        h = history(spark, wh / "tidelog.db" / table)
        meta = [m for _v, o, m in h if o == op]
        assert len(meta) == len(set(meta)) == 1 + len(DELTA_CRASH_POINTS), h
        assert set(meta) <= set(ids)
    w.close()


def test_killed_export_is_completed_by_the_next_command(catalog, tmp_path):
    """`tidelog export --table-format delta` killed (os._exit) right after its append commit; the
    next `tidelog export` (format taken from the warehouse) completes the run and exits 0."""
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=24, keys=30, compact=True)
    w.fill(20)
    closed = w.roll()
    cmd = [
        sys.executable,
        "-m",
        "tidelog",
        "export",
        "--log-dirs",
        str(data),
        "--warehouse",
        str(wh),
        "--shuffle-partitions",
        "2",
        "--driver-memory",
        "512m",
    ]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    killed = subprocess.run(
        cmd + ["--table-format", "delta"],
        env={**env, "TIDELOG_EXPORT_CRASH_AT": "appended:hard"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == 137, killed.stderr[-3000:]
    pending = manifest(wh)["pending"]
    assert pending is not None
    assert [m for _v, _o, m in history(catalog, wh / "tidelog.db" / "profiles")][-1] == pending["run_id"]
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert manifest(wh)["pending"] is None
    refused = subprocess.run(cmd + ["--table-format", "parquet"], env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "holds delta tables" in refused.stderr
    from tidelog.spark_export.session import attach_tables

    attach_tables(catalog, wh)
    committed = w.model.committed(closed)
    assert_tables(catalog, "profiles", committed)
    assert [o for _v, o, _m in history(catalog, wh / "tidelog.db" / "profiles")] == ["CREATE TABLE", "WRITE"]
    w.close()


def test_a_concurrent_reader_never_sees_part_of_a_run(catalog, tmp_path):
    """A reader in its own JVM counts both tables in a loop while runs commit many files each:
    every count it sees is a count at a run boundary."""
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=2, segment_bytes=4096, seed=25, keys=40, compact=True)
    w.fill(10)
    w.roll()
    export(spark, data, wh, table_format="delta")  # the tables exist before the reader starts
    main, latest = wh / "tidelog.db" / "profiles", wh / "tidelog.db" / "profiles_latest"
    boundaries = {
        (spark.read.format("delta").load(str(main)).count(), spark.read.format("delta").load(str(latest)).count())
    }
    out, stop = tmp_path / "seen.jsonl", tmp_path / "stop"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    reader = subprocess.Popen(
        [sys.executable, str(HERE / "delta_reader.py"), str(main), str(latest), str(out), str(stop)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not (out.exists() and out.read_text().strip()):
            assert reader.poll() is None, reader.stderr.read()[-3000:] if reader.stderr else ""
            assert time.monotonic() < deadline, "the reader did not start"
            time.sleep(0.5)
        for _ in range(4):
            w.fill(12)
            w.roll()
            export(spark, data, wh)
            boundaries.add(
                (
                    spark.read.format("delta").load(str(main)).count(),
                    spark.read.format("delta").load(str(latest)).count(),
                )
            )
    finally:
        stop.touch()
        try:
            reader.wait(timeout=120)
        finally:
            if reader.poll() is None:
                reader.kill()
    seen = [json.loads(line) for line in out.read_text().splitlines()]
    assert reader.returncode == 0, reader.stderr.read()[-3000:] if reader.stderr else ""
    mains = {m for m, _l in boundaries}
    latests = {lt for _m, lt in boundaries}
    assert len({s["main"] for s in seen}) >= 2, seen  # it read while the runs committed
    assert {s["main"] for s in seen} <= mains, (sorted({s["main"] for s in seen} - mains), sorted(mains))
    assert {s["latest"] for s in seen} <= latests, (sorted({s["latest"] for s in seen} - latests), sorted(latests))
    # Each run wrote several files in its one commit, so a partial run was there to be seen.
    added = [
        sum(1 for line in f.read_text().splitlines() if '"add"' in line)
        for f in sorted((main / "_delta_log").glob("*.json"))
    ]
    assert max(added) > 1, added
    w.close()
