"""`spark.readStream.format("tidelog")` against segment files built by the log engine.

The reader's offsets, limits and retention reports are checked by driving it as Spark does,
in this process; the Spark tests compare what queries wrote with the batch source and with the
model of what was written (committed, aborted, open transactions)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_logdata import LogWriter

pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from tidelog.spark_export.stream import TidelogStreamReader, admit

HERE = Path(__file__).parent
COLUMNS = (
    "partition",
    "offset",
    "key",
    "value",
    "CAST(unix_millis(timestamp) AS LONG)",
    "headers",
    "producer_id",
    "is_transactional",
)


def idents(df) -> list[tuple]:
    """The rows of a DataFrame in the data source's schema, as `Row.ident()` tuples, sorted."""
    out = []
    for r in df.selectExpr(*COLUMNS).collect():
        p, o, k, v, ts, headers, pid, txn = r
        hs = tuple((h.key, h.value and bytes(h.value)) for h in headers)
        out.append((p, o, k and bytes(k), v and bytes(v), ts, hs, pid, txn))
    return sorted(out)


def model_idents(rows) -> list[tuple]:
    return sorted(r.ident() for r in rows)


def wait_for(condition, timeout: float, what: str, interval: float = 0.05):
    """Poll `condition` until it returns something true, for at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------
# The reader, driven as Spark drives it


def drain(reader, start: dict, limit=None) -> tuple[list[tuple[int, int]], dict, int]:
    """Micro-batches until latestOffset returns its start: the (partition, offset) read, the
    final offset, and how many micro-batches there were."""
    rows, batches = [], 0
    while True:
        end = reader.latestOffset(start, limit or ReadAllAvailable())
        if end == start:
            return rows, start, batches
        batches += 1
        for part in reader.partitions(start, end):
            for b in reader.read(part):
                rows += zip(b.column("partition").to_pylist(), b.column("offset").to_pylist())
        start = end


def test_admit_shares_a_limit_fairly():
    assert admit({0: (0, 10), 1: (5, 8)}, 100) == {0: 10, 1: 8}
    assert admit({0: (0, 100), 1: (0, 3), 2: (10, 110)}, 50) == {0: 23, 1: 3, 2: 34}
    assert admit({0: (0, 5), 1: (0, 5)}, 1) in ({0: 0, 1: 1}, {0: 1, 1: 0})  # progress with a tiny limit


def test_reader_offsets_limits_and_retention(tmp_path, caplog):
    d = tmp_path / "data"
    w = LogWriter(d, "events", partitions=2, segment_bytes=4096, seed=11)
    w.fill(30)
    closed = w.roll()
    w.begin(1)  # an open transaction in the active segment: not read, not blocking closed data
    opts = {"topic": "events", "path": str(d)}
    r = TidelogStreamReader(opts)
    start = r.initialOffset()
    assert start == {"0": 0, "1": 0}
    assert r.latestOffset(start, ReadAllAvailable()) == {str(p): e for p, e in closed.items()}

    first = r.latestOffset(start, ReadMaxRows(50))
    assert sum(first[p] - start[p] for p in start) == 50 and all(first[p] > start[p] for p in start)
    rows, end, batches = drain(TidelogStreamReader(opts), start, ReadMaxRows(100))
    committed = w.model.committed(closed)
    assert sorted(rows) == sorted((x.partition, x.offset) for x in committed)
    assert batches >= sum(closed.values()) // 100
    assert end == {str(p): e for p, e in closed.items()}

    assert TidelogStreamReader({**opts, "startingOffsets": "latest"}).initialOffset() == end
    assert TidelogStreamReader({**opts, "startingOffsets": '{"0": 10}'}).initialOffset() == {"0": 10, "1": 0}
    assert TidelogStreamReader({**opts, "startingOffsets": '{"events": {"1": -1}}'}).initialOffset() == {
        "0": 0,
        "1": end["1"],
    }
    with pytest.raises(ValueError, match="batch reads"):
        TidelogStreamReader({**opts, "startingOffset": "5"})

    # more segments in partition 0, the oldest of them deleted before the stream reads them
    for _ in range(3):
        w.plain(0, 20)
        w.roll()
    lg = w.logs[0]
    new = [s.base_offset for s in lg.segments if s.base_offset >= end["0"]]
    lg.delete_records(new[2])
    caplog.set_level("WARNING", logger="tidelog.spark_export.stream")
    rows2, end2, _ = drain(r, end)
    msg = f"events-0: offsets [{end['0']}, {new[2]}) were deleted by retention before the stream read them"
    assert msg in caplog.text
    assert sorted(rows2) == [(0, o) for o in range(new[2], w.closed_end()[0])]
    assert end2 == {"0": w.closed_end()[0], "1": end["1"]}
    w.close()


def test_segment_deleted_between_planning_and_reading(tmp_path, caplog):
    d = tmp_path / "data"
    w = LogWriter(d, "events", partitions=1, segment_bytes=4096, seed=13)
    w.fill(30)
    closed = w.roll()
    r = TidelogStreamReader({"topic": "events", "path": str(d), "isolationLevel": "read_uncommitted"})
    start = r.initialOffset()
    parts = r.partitions(start, r.latestOffset(start, ReadAllAvailable()))
    assert len(parts) > 2
    second = parts[1].value[0].base_offset
    w.logs[0].delete_records(second)  # the first segment goes, after it was planned
    caplog.set_level("WARNING", logger="tidelog.spark_export.stream")
    offsets = [o for p in parts for b in r.read(p) for o in b.column("offset").to_pylist()]
    assert f"was deleted by retention before the stream read it: offsets [0, {second}) lost" in caplog.text
    assert offsets == sorted(x.offset for x in w.model.rows if second <= x.offset < closed[0])  # all but markers
    w.close()


def test_available_now_target_and_read_uncommitted(tmp_path):
    d = tmp_path / "data"
    w = LogWriter(d, "events", partitions=2, segment_bytes=4096, seed=12)
    w.fill(20)
    closed = w.roll()
    r = TidelogStreamReader({"topic": "events", "path": str(d), "isolationLevel": "read_uncommitted"})
    r.prepareForTriggerAvailableNow()
    w.fill(5)
    w.roll()  # closed after the query started: not for this run
    rows, end, _ = drain(r, r.initialOffset(), ReadMaxRows(40))
    assert end == {str(p): e for p, e in closed.items()}
    uncommitted = [x for x in w.model.rows if x.offset < closed[x.partition]]
    assert any(x.state == "aborted" for x in uncommitted)
    assert sorted(rows) == sorted((x.partition, x.offset) for x in uncommitted)
    w.close()


# ---------------------------------------------------------------------------------------------
# Spark queries


def stream(spark, d, **options):
    reader = spark.readStream.format("tidelog").option("topic", "events")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(d))


def run_available_now(spark, d, sink: Path, checkpoint: Path, **options) -> int:
    """One Trigger.AvailableNow run into a Parquet file sink; the rows it read."""
    q = (
        stream(spark, d, **options)
        .writeStream.format("parquet")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(str(sink))
    )
    assert q.awaitTermination(600), "the availableNow query did not finish"
    assert q.exception() is None, q.exception()
    return sum(p["numInputRows"] for p in q.recentProgress)


def batch(spark, d, **options):
    reader = spark.read.format("tidelog").option("topic", "events")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(d))


def test_available_now_equals_the_batch_read(spark, tmp_path):
    d = tmp_path / "data"
    w = LogWriter(d, "events", partitions=2, segment_bytes=8192, seed=21)
    w.fill(40)
    w.begin(0)  # open at the end of the closed data: the LSO stops partition 0 at its start
    w.plain(1, 10)
    closed = w.roll()
    w.plain(1, 5)  # in the active segment: not read
    expected = w.model.committed(closed)
    assert any(x.state == "aborted" for x in w.model.rows) and any(x.state == "open" for x in w.model.rows)
    run_available_now(spark, d, tmp_path / "out", tmp_path / "ckpt", maxOffsetsPerTrigger=500)
    got = idents(spark.read.parquet(str(tmp_path / "out")))
    assert got == idents(batch(spark, d))
    assert got == model_idents(expected)
    commits = [f for f in os.listdir(tmp_path / "ckpt" / "commits") if f.isdigit()]
    assert len(commits) >= 2, "maxOffsetsPerTrigger made several micro-batches"
    w.close()


def test_restart_from_checkpoint_reads_only_new_records(spark, tmp_path):
    d = tmp_path / "data"
    w = LogWriter(d, "events", partitions=2, segment_bytes=8192, seed=22)
    w.fill(30)
    w.begin(1, batches=2)  # still open when the first run ends
    closed = w.roll()
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first = w.model.committed(closed)
    assert run_available_now(spark, d, out, ckpt, maxOffsetsPerTrigger=300) == len(first)
    assert idents(spark.read.parquet(str(out))) == model_idents(first)

    w.end(1, commit=True)  # the open transaction commits: its records come with the next run
    w.fill(15)
    closed = w.roll()
    everything = w.model.committed(closed)
    new = len(everything) - len(first)
    assert run_available_now(spark, d, out, ckpt, maxOffsetsPerTrigger=300) == new > 0
    got = idents(spark.read.parquet(str(out)))
    assert len(got) == len(set(got)), "a record was written twice"
    assert got == model_idents(everything) == idents(batch(spark, d))
    assert run_available_now(spark, d, out, ckpt) == 0  # nothing new: an empty run
    w.close()


def _batches(checkpoint: Path, log: str) -> int:
    path = checkpoint / log
    return len([f for f in os.listdir(path) if f.isdigit()]) if path.is_dir() else 0


def _start_query(d, out, ckpt, max_offsets: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(HERE / "stream_query.py"), str(d), str(out), str(ckpt), str(max_offsets)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the JVM and its Python workers die with it
    )


def test_killed_query_restarts_without_duplicates_or_gaps(spark, tmp_path):
    d = tmp_path / "data"
    w = LogWriter(d, "events", partitions=2, segment_bytes=8192, seed=23)
    w.fill(60)
    closed = w.roll()
    w.close()
    expected = w.model.committed(closed)
    aborted = {(x.partition, x.offset) for x in w.model.rows if x.state == "aborted"}
    assert aborted
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    max_offsets = max(1, sum(closed.values()) // 20)  # about 20 micro-batches

    def mid_batch() -> bool:
        """A micro-batch logged in offsets/ and not yet in commits/, after at least one more."""
        logged = _batches(ckpt, "offsets")
        return proc.poll() is not None or (logged >= 2 and logged > _batches(ckpt, "commits"))

    proc = _start_query(d, out, ckpt, max_offsets)
    try:
        wait_for(mid_batch, 300, "the query to be in the middle of a micro-batch", interval=0.01)
        assert proc.poll() is None, "the query finished before it could be killed: " + proc.stderr.read()[-3000:]
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
    assert (out / "_spark_metadata").is_dir(), "a micro-batch was committed before the kill"
    partial = idents(spark.read.parquet(str(out)))
    assert len(partial) < len(expected), "killed mid-stream: the sink is not complete yet"

    again = _start_query(d, out, ckpt, max_offsets)
    stdout, stderr = again.communicate(timeout=600)
    assert again.returncode == 0 and "DONE" in stdout, stderr[-3000:]
    got = idents(spark.read.parquet(str(out)))
    assert len(got) == len(set(got)), "a record was written twice"
    assert not aborted & {(x[0], x[1]) for x in got}, "an aborted record was written"
    assert got == model_idents(expected)


def test_processing_time_trigger_picks_up_a_new_segment(spark, tmp_path):
    d = tmp_path / "data"
    w = LogWriter(d, "events", partitions=2, segment_bytes=8192, seed=24)
    w.fill(20)
    first = w.model.committed(w.roll())
    q = (
        stream(spark, d)
        .writeStream.format("memory")
        .queryName("tidelog_stream_pt")
        .trigger(processingTime="250 milliseconds")
        .start()
    )
    try:
        table = lambda: spark.table("tidelog_stream_pt")
        wait_for(lambda: table().count() >= len(first), 300, "the first micro-batch", interval=0.5)
        assert idents(table()) == model_idents(first)
        w.plain(0, 7)
        w.plain(1, 3)
        later = w.model.committed(w.roll())  # a segment closed while the query runs
        wait_for(lambda: table().count() >= len(later), 300, "the new segment", interval=0.5)
        assert q.exception() is None and q.isActive
        assert idents(table()) == model_idents(later)
    finally:
        q.stop()
        w.close()
