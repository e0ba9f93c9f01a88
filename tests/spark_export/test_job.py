"""The export job over segments built by the log engine: exactly once across runs and crashes,
new segments only, retention gaps, `_latest` against a brute-force compaction, the catalog."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
from collections import Counter

import pytest
from spark_logdata import LogWriter, Model

from tidelog.spark_export.progress import Progress, TopicSummary


def table_idents(spark, name):
    rows = spark.table(name).collect()
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


def assert_exactly(spark, name, expected):
    got = table_idents(spark, name)
    dups = [k for k, n in Counter((g[0], g[1]) for g in got).items() if n > 1]
    assert not dups, f"{len(dups)} (partition, offset) pairs more than once, e.g. {dups[:3]}"
    assert got == sorted(r.ident() for r in expected)


def assert_tables(spark, topic, committed):
    """`tidelog.<topic>` holds `committed` once each, `tidelog.<topic>_latest` its compaction."""
    assert_exactly(spark, f"tidelog.{topic}", committed)
    latest = Model.compact(committed)
    assert table_idents(spark, f"tidelog.{topic}_latest") == sorted(r.ident() for r in latest.values())
    return latest


def export(spark, data, warehouse, **kw):
    from tidelog.spark_export.job import ExportJob, ExportOptions

    return {s.topic: s for s in ExportJob(spark, ExportOptions([data], warehouse, **kw)).run()}


def manifest(warehouse):
    return json.loads((warehouse / "_tidelog" / "manifest.json").read_text())


def test_runs_export_new_segments_once_and_report_retention_gaps(catalog, tmp_path, caplog):
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "orders", partitions=2, segment_bytes=8192, seed=11)
    w.fill(40)
    closed = w.roll()
    w.plain(0, 3)  # the active segment: never exported
    first = export(spark, data, wh)["orders"]
    expected = w.model.committed(closed)
    assert first.rows == len(expected) and first.segments == sum(len(lg.segments) - 1 for lg in w.logs)
    assert_exactly(spark, "tidelog.orders", expected)
    # Partitioned by the UTC date of the timestamp, then by partition.
    assert spark.sql("SELECT count(*) FROM tidelog.orders WHERE date != to_date(timestamp)").first()[0] == 0
    dirs = {
        p.relative_to(wh / "tidelog.db" / "orders").parent.as_posix()
        for p in (wh / "tidelog.db" / "orders").rglob("*.parquet")
    }
    want = {
        f"date={dt.datetime.fromtimestamp(r.timestamp / 1000, dt.UTC):%Y-%m-%d}/partition={r.partition}"
        for r in expected
    }
    assert dirs == want and len({d.split("/")[0] for d in dirs}) > 1

    assert export(spark, data, wh)["orders"].rows == 0  # nothing closed since
    assert_exactly(spark, "tidelog.orders", expected)

    consumed = {p: set(s["segments"]) for p, s in manifest(wh)["topics"]["orders"]["partitions"].items()}
    w.fill(35)
    closed = w.roll()
    # Retention deletes two unexported segments of partition 0 before the next run.
    lg = w.logs[0]
    new = [s for s in lg.segments[:-1] if f"{s.base_offset:020d}.log" not in consumed["0"]]
    gap = (0, new[0].base_offset, new[2].base_offset)
    lg.delete_records(new[2].base_offset)
    caplog.set_level(logging.WARNING, "tidelog.spark_export")
    third = export(spark, data, wh)["orders"]
    assert third.gaps == [gap]
    assert f"orders-0: offsets [{gap[1]}, {gap[2]}) were deleted by retention before export" in caplog.text
    survived = [r for r in w.model.committed(closed) if not (r.partition == 0 and gap[1] <= r.offset < gap[2])]
    assert_exactly(spark, "tidelog.orders", survived)
    m = manifest(wh)["topics"]["orders"]["partitions"]
    assert m["0"]["gaps"] == [list(gap[1:])]
    assert {p: s["next_offset"] for p, s in m.items()} == {str(p): e for p, e in closed.items()}
    assert not consumed["1"] & set(m["1"]["segments"][len(consumed["1"]) :])  # each segment listed once
    assert third.segments == sum(
        f"{s.base_offset:020d}.log" not in consumed[str(p)] for p, lg in enumerate(w.logs) for s in lg.segments[:-1]
    )

    # A later session: the catalog knows nothing; attach_tables registers the tables again.
    from tidelog.spark_export.session import attach_tables

    spark.sql("DROP TABLE tidelog.orders")
    assert "tidelog.orders" in attach_tables(spark, wh)
    assert spark.table("tidelog.orders").count() == len(survived)
    w.close()


def test_crashes_at_every_stage_then_rerun_keep_rows_once_and_latest_compacted(catalog, tmp_path):
    from tidelog.spark_export.job import SimulatedCrash

    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=5, keys=30, compact=True)
    w.fill(25)
    closed = w.roll()
    assert export(spark, data, wh, rewrite_min_files=2)["profiles"].latest_rows is not None
    for point in ("mid-publish", "published", "marked"):
        w.fill(8)
        closed = w.roll()
        with pytest.raises(SimulatedCrash):
            export(spark, data, wh, rewrite_min_files=2, crash_at=point)
        s = export(spark, data, wh, rewrite_min_files=2)["profiles"]
        committed = w.model.committed(closed)
        latest = assert_tables(spark, "profiles", committed)
        # Rolled back and redone, or (crashed after "marked") rolled forward by recovery.
        assert s.rows == (0 if point == "marked" else s.rows) and s.latest_rows in (None, len(latest))
    assert manifest(wh)["pending"] is None
    runs = manifest(wh)["runs"]
    assert sum(r["topics"].get("profiles", {}).get("files_rewritten", 0) for r in runs) > 0  # small files merged
    versions = list((wh / "tidelog.db" / "profiles_latest").iterdir())
    assert len(versions) == 1  # earlier versions and crashed runs' versions are gone
    assert not list((wh / "_tidelog").glob("staging/*"))
    w.close()


def test_progress_bar_and_summary_table():
    out = io.StringIO()
    p = Progress(out, tty=True)
    s = TopicSummary("orders", partitions=2, segments=7, rows=1234, latest_rows=None, gaps=[(0, 5, 9)], seconds=1.5)
    text = p.summary("run-1", [s, TopicSummary("profiles", 1, 3, 10, 4)], 2.0)
    lines = text.splitlines()
    assert lines[0] == "export run run-1: 1,244 rows in 2.0s"
    assert lines[1].split() == ["topic", "partitions", "segments", "rows", "latest", "rewritten", "gaps", "seconds"]
    assert lines[3].split() == ["orders", "2", "7", "1,234", "-", "0", "p0:[5,9)", "1.5"]
    assert lines[4].split()[:5] == ["profiles", "1", "3", "10", "4"]

    bar = p.topic(None, "orders", 4)  # drawing needs no Spark
    bar._draw(2)
    assert "\rorders                   [###############...............] 2/4 tasks" in out.getvalue()


def test_progress_lines_in_logs(caplog):
    caplog.set_level(logging.INFO, "tidelog.spark_export")
    t = Progress(io.StringIO(), tty=False).topic(None, "orders", 8)
    for done in range(9):
        t._draw(done)
    assert [m.split(" (")[0] for m in caplog.messages if m.startswith("export orders")] == [
        f"export orders: {n}/8 tasks" for n in (0, 2, 4, 6, 8)
    ]


def test_a_second_run_at_once_is_refused(tmp_path):
    from tidelog.spark_export.job import ExportRunning, _exclusive

    lock = tmp_path / "_tidelog" / "export.lock"
    with _exclusive(lock):
        with pytest.raises(ExportRunning):
            with _exclusive(lock):
                pass
    with _exclusive(lock):  # released
        pass


def test_new_process_completes_a_run_killed_after_publishing(catalog, tmp_path):
    """`tidelog export` killed (os._exit) after the "published" mark, then run again in a new
    process: recovery completes the killed run and the command exits 0 (it failed once with
    SCHEMA_NOT_FOUND: recovery created tables before the database existed in the new session)."""
    import os
    import subprocess
    import sys

    from tidelog.spark_export.session import attach_tables

    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=9, keys=30, compact=True)
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
        cmd, env={**env, "TIDELOG_EXPORT_CRASH_AT": "marked:hard"}, capture_output=True, text=True, timeout=240
    )
    assert killed.returncode == 137, killed.stderr[-3000:]
    assert manifest(wh)["pending"]["phase"] == "published"
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert manifest(wh)["pending"] is None
    attach_tables(catalog, wh)
    committed = w.model.committed(closed)
    assert_tables(catalog, "profiles", committed)
    w.close()


@pytest.mark.parametrize("table_format", ["parquet", "delta"])
def test_a_run_of_only_aborted_transactions_keeps_the_tables(catalog, tmp_path, table_format):
    """New closed segments holding nothing but an aborted transaction and its marker: the run
    exports no row, and `_latest` keeps what earlier runs made of the topic."""
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=1, segment_bytes=8192, seed=31, keys=10, compact=True)
    w.fill(10)
    closed = w.roll()
    export(spark, data, wh, table_format=table_format)
    w.begin(0, batches=1)  # one transactional batch, nothing else
    w.end(0, commit=False)
    assert w.roll() != closed
    s = export(spark, data, wh)["profiles"]
    assert s.rows == 0 and manifest(wh)["pending"] is None
    committed = w.model.committed(w.closed_end())
    assert_tables(spark, "profiles", committed)
    w.close()


def test_a_retried_task_attempt_leaves_no_second_copy(tmp_path):
    """Each task group's first attempt fails after writing its files (as a lost executor would) and
    Spark retries it (`local[2,3]`): the table holds the files of the successful attempts only."""
    import os
    import subprocess
    import sys

    import pyarrow.parquet as pq

    data, wh, faults = tmp_path / "data", tmp_path / "wh", tmp_path / "faults"
    faults.mkdir()
    w = LogWriter(data, "orders", partitions=2, segment_bytes=8192, seed=13)
    w.fill(20)
    closed = w.roll()
    w.close()
    env = {
        **os.environ,
        "TIDELOG_EXPORT_TASK_FAULT": str(faults),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    cmd = [sys.executable, "-m", "tidelog.spark_export", "--log-dirs", str(data), "--warehouse", str(wh)]
    res = subprocess.run([*cmd, "--master", "local[2,3]"], env=env, capture_output=True, text=True, timeout=400)
    assert res.returncode == 0, res.stderr[-3000:]
    assert list(faults.iterdir()), "no task attempt failed: the test tested nothing"
    table = pq.read_table(wh / "tidelog.db" / "orders", partitioning="hive")
    got = Counter(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    assert max(got.values()) == 1, "rows of a failed attempt were published"
    assert sorted(got) == sorted((r.partition, r.offset) for r in w.model.committed(closed))
