"""Segment planning and decoding without Spark: read_committed semantics, LSO, indexes, codecs."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow")

from spark_logdata import LogWriter, Model

from tidelog.spark_export import segments as seg


def read_all(log_dir, topic, partition, **kw):
    pdir = seg.partition_dirs([log_dir], topic)[partition]
    plan = seg.plan_partition(topic, partition, pdir, **kw)
    rows = []
    for task in plan.tasks:
        for b in seg.read_task(task, rows_per_batch=100):
            rows += b.to_pylist()
    return plan, rows


def idents(rows):
    return sorted(
        (
            r["partition"],
            r["offset"],
            r["key"],
            r["value"],
            int(r["timestamp"].timestamp() * 1000),
            tuple((h["key"], h["value"]) for h in r["headers"]),
            r["producer_id"],
            r["is_transactional"],
        )
        for r in rows
    )


@pytest.fixture
def writer(tmp_path):
    w = LogWriter(tmp_path / "data", "orders", partitions=2, segment_bytes=4096)
    yield w
    w.close()


def test_read_committed_matches_model(writer, tmp_path):
    writer.fill(80)
    closed = writer.roll()
    for p in range(2):
        plan, rows = read_all(tmp_path / "data", "orders", p)
        assert len(plan.closed_segments) > 5
        expected = [r for r in Model(writer.model.rows).committed(closed) if r.partition == p]
        assert idents(rows) == sorted(r.ident() for r in expected)
        assert plan.last_stable_offset == closed[p]


def test_read_uncommitted_keeps_aborted_but_not_markers(writer, tmp_path):
    writer.fill(30)
    writer.roll()
    _plan, rows = read_all(tmp_path / "data", "orders", 0, isolation=seg.READ_UNCOMMITTED)
    expected = [r for r in writer.model.rows if r.partition == 0]
    assert [r["offset"] for r in rows] == [r.offset for r in expected]


def test_open_transaction_caps_at_the_last_stable_offset(writer, tmp_path):
    writer.fill(10)
    pid = writer.begin(0, batches=2)
    first_open = writer.open_txns[0][1][0].offset
    writer.fill(10)  # partition 0 keeps getting data behind the open transaction
    writer.roll()
    plan, rows = read_all(tmp_path / "data", "orders", 0)
    assert plan.last_stable_offset == first_open
    assert max(r["offset"] for r in rows) < first_open
    assert pid not in {r["producer_id"] for r in rows}


def test_abort_marker_in_a_later_segment_still_drops_the_records(writer, tmp_path):
    writer.begin(0, batches=1)
    aborted = list(writer.open_txns[0][1])
    writer.logs[0].roll(now_ms=writer.clock)  # the records' segment closes before the marker
    writer.plain(0, 5)
    writer.end(0, commit=False)
    writer.roll()
    _plan, rows = read_all(tmp_path / "data", "orders", 0)
    assert not {r.offset for r in aborted} & {r["offset"] for r in rows}
    assert len(rows) == 5


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_every_codec(tmp_path, codec):
    w = LogWriter(tmp_path / "data", "c", partitions=1, segment_bytes=2048)
    for _ in range(20):
        w.plain(0, 10, codec=codec)
    closed = w.roll()
    _plan, rows = read_all(tmp_path / "data", "c", 0)
    assert idents(rows) == sorted(r.ident() for r in w.model.committed(closed))
    w.close()


def test_offset_and_time_ranges_use_the_indexes(writer, tmp_path):
    writer.fill(80)
    closed = writer.roll()
    committed = [r for r in writer.model.committed(closed) if r.partition == 1]
    mid = committed[len(committed) // 2]
    plan, rows = read_all(tmp_path / "data", "orders", 1, start_offset=mid.offset)
    assert [r["offset"] for r in rows] == [r.offset for r in committed if r.offset >= mid.offset]
    assert plan.tasks[0].base_offset > 0  # earlier segments were not even planned

    t = mid.timestamp
    plan, rows = read_all(tmp_path / "data", "orders", 1, start_timestamp=t, end_timestamp=t + 86_400_000)
    assert [r["offset"] for r in rows] == [r.offset for r in committed if t <= r.timestamp < t + 86_400_000]
    all_plan = seg.plan_partition("orders", 1, seg.partition_dirs([tmp_path / "data"], "orders")[1])
    assert len(plan.tasks) < len(all_plan.tasks)  # the time index skipped segments
    segment = seg.SegmentFile(plan.tasks[0].base_offset, plan.tasks[0].segment)
    assert seg.start_position(segment, plan.tasks[0].start_offset, t) >= 0


def test_active_segment_excluded_unless_asked(writer, tmp_path):
    writer.fill(10)
    closed = writer.roll()
    writer.plain(0, 7)
    _plan, rows = read_all(tmp_path / "data", "orders", 0)
    assert max(r["offset"] for r in rows) < closed[0]
    _plan, rows = read_all(tmp_path / "data", "orders", 0, include_active=True)
    assert max(r["offset"] for r in rows) == writer.model.rows[-1].offset


def test_checkpointed_log_start_inside_the_first_segment(writer, tmp_path):
    from tidelog.log.manager import LOG_START_OFFSET_CHECKPOINT, write_checkpoint

    writer.fill(20)
    closed = writer.roll()
    first = writer.logs[0].segments[0]
    inside = next(r.offset for r in writer.model.committed(closed) if r.partition == 0 and r.offset > first.base_offset)
    write_checkpoint(tmp_path / "data" / LOG_START_OFFSET_CHECKPOINT, {("orders", 0): inside})
    starts = seg.log_start_offsets([tmp_path / "data"])
    assert starts == {("orders", 0): inside}
    plan, rows = read_all(tmp_path / "data", "orders", 0, log_start_offset=starts[("orders", 0)])
    assert plan.log_start_offset == inside and min(r["offset"] for r in rows) == inside


def test_pack_tasks_groups_small_segments_but_keeps_every_core_busy(writer, tmp_path):
    writer.fill(80)
    writer.roll()
    tasks = [
        t
        for p, pdir in seg.partition_dirs([tmp_path / "data"], "orders").items()
        for t in seg.plan_partition("orders", p, pdir).tasks
    ]
    assert [g for g in seg.pack_tasks(tasks, 0)] == [[t] for t in tasks]  # default: one per segment
    groups = seg.pack_tasks(tasks, 128 << 20, min_groups=3)
    assert [t for g in groups for t in g] == tasks  # order kept, nothing lost
    assert 3 <= len(groups) < len(tasks)
    import os

    for g in seg.pack_tasks(tasks, 6000, min_groups=1):  # segments are ~4 KiB
        assert len(g) == 1 or sum(os.path.getsize(t.segment) for t in g) <= 6000
