"""`tidelog export --follow`: one session exports each segment as it closes; its lag (records and
seconds behind the log) against the log's own contents; the metrics endpoint; SIGTERM stops the
command cleanly after the run in progress."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from spark_logdata import LogWriter
from test_job import assert_exactly, manifest

from tidelog.spark_export.follow import Follower, FollowMetrics, partition_lag, topic_lags
from tidelog.spark_export.job import ExportOptions
from tidelog.spark_export.manifest import Manifest
from tidelog.spark_export.progress import Progress

# Spark runs take seconds alone and minutes on a 2-core machine shared with other jobs (a CI run
# beside the simulation timed out at 120 s waiting for the runs after a roll, a test that passes
# in 10 s alone): generous bounds, and the follower's state in the message when one is exceeded.
RUN_TIMEOUT = 300.0


def wait_for(cond, what: str, timeout: float = RUN_TIMEOUT, proc: subprocess.Popen | None = None, state=lambda: None):
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {proc.returncode}")
        assert time.monotonic() < deadline, f"timed out waiting for {what} ({state()})"
        time.sleep(0.1)
    return got


def active_records(w: LogWriter) -> int:
    return sum(lg.log_end_offset - lg.segments[-1].base_offset for lg in w.logs)


def metric(body: str, name: str) -> float:
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in {body!r}")


def test_lag_counts_what_the_table_lacks(tmp_path):
    data = tmp_path / "data"
    w = LogWriter(data, "orders", partitions=2, segment_bytes=4096, seed=3)
    w.fill(20)
    w.roll()
    w.plain(0, 5)
    ends = {p: lg.log_end_offset for p, lg in enumerate(w.logs)}
    pdir = data / "orders-0"
    # Nothing exported yet: every record is behind, the oldest (the first) sets the seconds.
    first_ts = min(r.timestamp for r in w.model.rows if r.partition == 0)
    now = first_ts + 90_000
    assert partition_lag(pdir, 0, now) == (ends[0], 90.0)
    assert partition_lag(pdir, ends[0], now) == (0, 0.0)  # caught up
    # Half exported: the seconds come from the batch holding the first missing record.
    half = w.logs[0].segments[1].base_offset + 1
    ts = next(r.timestamp for r in w.model.rows if r.partition == 0 and r.offset >= half)
    records, seconds = partition_lag(pdir, half, now)
    assert records == ends[0] - half and seconds >= (now - ts) / 1000 - 0.001
    lags = topic_lags([data], ["orders"], Manifest.load(tmp_path / "wh"), now)
    assert [(lag.topic, lag.records) for lag in lags] == [("orders", sum(ends.values()))]
    w.close()


def test_follower_exports_each_closed_segment_and_reports_lag(catalog, tmp_path):
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "orders", partitions=2, segment_bytes=8192, seed=21)
    w.fill(15)
    closed = w.roll()
    metrics, stop = FollowMetrics(), threading.Event()
    server = metrics.serve(0)
    follower = Follower(spark, ExportOptions([data], wh), Progress(), metrics, stop, poll_interval=0.1)
    thread = threading.Thread(target=follower.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: metrics.runs >= 1, "the first run")
        expected = w.model.committed(closed)
        assert_exactly(spark, "tidelog.orders", expected)
        runs = metrics.runs
        # Records in the active segment only: no run, and the lag is exactly those records.
        w.plain(0, 4)
        wait_for(lambda: metrics.lags.get("orders") and metrics.lags["orders"].records == active_records(w), "lag")
        assert metrics.runs == runs
        # A segment closes: the follower runs by itself and catches up to the new closed end.
        w.fill(10)
        closed = w.roll()
        want = len(w.model.committed(closed))
        wait_for(
            lambda: metrics.rows.get("orders") == want,  # counted once a run ended
            "the runs after the roll",
            state=lambda: f"{metrics.runs} runs, rows {metrics.rows}, want {want}, thread alive {thread.is_alive()}",
        )
        assert_exactly(spark, "tidelog.orders", w.model.committed(closed))
        wait_for(lambda: metrics.lags["orders"].records == active_records(w), "lag after run 2")
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        assert metric(body, 'tidelog_export_lag_records{topic="orders"}') == active_records(w)
        assert metric(body, 'tidelog_export_rows_total{topic="orders"}') == len(w.model.committed(closed))
        assert metric(body, "tidelog_export_runs_total") == metrics.runs >= 2
    finally:
        stop.set()
        thread.join(timeout=120)
        server.shutdown()
    assert not thread.is_alive()
    w.close()


def test_follow_command_stops_cleanly_on_sigterm(tmp_path):
    """`tidelog export --follow` as a user runs it: it exports what is closed, then, on SIGTERM,
    exits 0 with its manifest committed (no run left in flight)."""
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "orders", partitions=2, segment_bytes=8192, seed=8)
    w.fill(10)
    closed = w.roll()
    w.close()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    cmd = [sys.executable, "-m", "tidelog.spark_export", "--log-dirs", str(data), "--warehouse", str(wh)]
    proc = subprocess.Popen(
        [*cmd, "--follow", "--poll-interval", "0.2", "--master", "local[1]"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        done = lambda: (wh / "_tidelog" / "manifest.json").exists() and manifest(wh).get("pending") is None
        wait_for(
            lambda: done() and manifest(wh)["topics"].get("orders", {}).get("partitions", {}).get("0"),
            "the first run",
            timeout=240,
            proc=proc,
        )
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert "stopping after the run in progress" in err
    m = manifest(wh)
    assert m.get("pending") is None
    assert {int(p): s["next_offset"] for p, s in m["topics"]["orders"]["partitions"].items()} == closed
