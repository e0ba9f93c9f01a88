"""The Delta export's log side without Spark: statistics from Parquet footers, one commit per run
with its txn version and run id, read back by delta-rs, and the cleanup of files no commit names."""

from __future__ import annotations

import datetime as dt
import json

import pytest

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from spark_logdata import LogWriter  # noqa: E402

from tidelog.spark_export import deltalog, direct  # noqa: E402
from tidelog.spark_export import segments as seg  # noqa: E402

UTC = dt.UTC


def test_footer_stats_bound_every_row_group(tmp_path):
    us = [1_735_689_600_000_123, 1_735_689_600_001_000, 1_735_689_700_000_999, 1_735_689_650_000_000]
    table = pa.table(
        {
            "topic": ["b", "a", "c", "b"],
            "offset": pa.array([7, 3, 9, 5], pa.int64()),
            "timestamp": pa.array(us, pa.timestamp("us", tz="UTC")),
            "key": pa.array([b"k", None, None, b"z"]),
            "producer_id": pa.array([None, None, 4, 2], pa.int64()),  # the first row group: all null
            "is_transactional": [True, False, True, False],
        }
    )
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=2)
    assert pq.read_metadata(path).num_row_groups == 2
    _path, rows, size, _mtime, stats = deltalog.describe(str(path), 4)
    stats = json.loads(stats)
    assert (rows, size) == (4, path.stat().st_size)
    assert stats["numRecords"] == 4
    assert stats["minValues"] == {
        "topic": "a",
        "offset": 3,
        "timestamp": "2025-01-01T00:00:00.000Z",  # 123 µs rounded down
        "producer_id": 2,
    }
    # The max rounded up to the next millisecond: still a bound. No bounds for binary or boolean.
    assert stats["maxValues"] == {
        "topic": "c",
        "offset": 9,
        "timestamp": "2025-01-01T00:01:40.001Z",
        "producer_id": 4,
    }
    assert stats["nullCount"] == {
        "topic": 0,
        "offset": 0,
        "timestamp": 0,
        "key": 2,
        "producer_id": 2,
        "is_transactional": 0,
    }


@pytest.fixture
def topic(tmp_path):
    w = LogWriter(tmp_path / "data", "orders", partitions=2, segment_bytes=4096, seed=31)
    w.fill(40)
    closed = w.roll()
    yield w, closed
    w.close()


def write_run(data, root, run_id):
    """Every closed segment written as the export's Spark tasks write them, a group per partition."""
    files = []
    for n, (partition, pdir) in enumerate(sorted(seg.partition_dirs([data], "orders").items())):
        tasks = seg.plan_partition("orders", partition, pdir).tasks
        files += [deltalog.describe(p, r) for p, r in direct.write_tasks(tasks, str(root), f"{run_id}-{n:05d}")]
    return files


def test_one_commit_per_run_with_txn_run_id_and_stats(topic, tmp_path):
    w, closed = topic
    root = tmp_path / "orders"
    deltalog.create(root)
    deltalog.create(root)  # a no-op: the table exists
    assert deltalake.DeltaTable(str(root)).history()[0]["operation"] == "CREATE TABLE"
    assert not deltalog.committed(root, 1)
    files = write_run(tmp_path / "data", root, "run-a")
    assert len(files) > 1
    version = deltalog.commit(root, files, "run-a", 1)

    table = deltalake.DeltaTable(str(root))
    assert version == table.version() == 1
    assert table.transaction_version(deltalog.APP_ID) == 1
    assert deltalog.committed(root, 1) and not deltalog.committed(root, 2)
    last = table.history(1)[0]
    assert (last["operation"], last["userMetadata"]) == ("WRITE", "run-a")
    # delta-rs reads back exactly the committed records, each in its (date, partition).
    got = table.to_pyarrow_table()
    want = w.model.committed(closed)
    assert sorted(zip(got["partition"].to_pylist(), got["offset"].to_pylist())) == sorted(
        (r.partition, r.offset) for r in want
    )
    days = pc.cast(got["timestamp"], pa.date32())
    assert pc.all(pc.equal(days, got["date"])).as_py()
    assert deltalog.run_rows(root, "run-a") == len(want) == sum(f[1] for f in files)
    # Each file's statistics match its rows.
    adds = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    assert len(adds) == len(files)
    for add in adds:
        rows = pq.read_table(root / add["path"])
        assert add["num_records"] == rows.num_rows
        bounds = pc.min_max(rows["offset"]).as_py()
        assert (add["min.offset"], add["max.offset"]) == (bounds["min"], bounds["max"])
        assert add["partition.partition"] == int(add["path"].split("partition=")[1].split("/")[0])
        assert add["null_count.key"] == rows["key"].null_count


def test_files_no_commit_names_are_removed(topic, tmp_path):
    w, _closed = topic
    root = tmp_path / "orders"
    deltalog.create(root)
    deltalog.commit(root, write_run(tmp_path / "data", root, "run-a"), "run-a", 1)
    kept = sorted(root.rglob("*.parquet"))
    stray = kept[0].parent / "part-run-a-00000-0123456789ab.parquet"  # left by a crash: not committed
    stray.write_bytes(kept[0].read_bytes())
    assert deltalog.remove_uncommitted(root, "run-a") == 1
    assert sorted(root.rglob("*.parquet")) == kept
    # A crashed run's files: on disk, not in the table.
    crashed = write_run(tmp_path / "data", root, "run-b")
    assert not deltalog.committed(root, 2)
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().num_rows == deltalog.run_rows(root, "run-a")
    assert deltalog.remove_uncommitted(root, "run-b") == len(crashed)
    assert sorted(root.rglob("*.parquet")) == kept
    # A failed task attempt's file beside the committed ones of its run: only it goes.
    stray = kept[0].parent / "part-run-a-00000-0123456789ab.parquet"
    stray.write_bytes(kept[0].read_bytes())
    assert deltalog.remove_strays([(str(f), 0, 0, 0, "") for f in kept], "run-a") == 1
    assert sorted(root.rglob("*.parquet")) == kept
    assert deltalog.remove_uncommitted(root, "run-a") == 0


def typed_schema(*fields):
    """`table_schema` with a typed `value` struct of `fields` ((name, Arrow type))."""
    from tidelog.spark_export.typed import Field, Formats

    return deltalog.table_schema(Formats((Field("value", "orders-value", pa.struct(list(fields))),)))


def write_typed(root, schema, name, value):
    """One file of one row (typed `value`) in the table's `date=.../partition=0` directory."""
    files = pa.schema([f for f in schema if f.name not in ("date", "partition")])
    row = {f.name: [None] for f in files}
    row |= {"topic": ["orders"], "offset": [len(list(root.rglob("*.parquet")))], "value": [value]}
    row["timestamp"] = [dt.datetime(2025, 1, 1, tzinfo=UTC)]
    path = root / "date=2025-01-01" / "partition=0" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(row, schema=files), path)
    return deltalog.describe(str(path), 1)


def test_a_commit_of_wider_files_widens_the_schema_in_that_commit(tmp_path):
    """A typed value that gained fields: the run's adds, the widened schema (metaData) and its txn
    are one log entry, an append (no remove); the older file reads with the new fields null."""
    root = tmp_path / "orders"
    address = ("ship_to", pa.struct([("city", pa.string())]))
    v1 = typed_schema(("id", pa.int64()), address)
    deltalog.create(root, v1)
    deltalog.commit(
        root, [write_typed(root, v1, "part-run-a-0.parquet", {"id": 1, "ship_to": {"city": "x"}})], "run-a", 1, v1
    )
    wider = ("ship_to", pa.struct([("city", pa.string()), ("zip", pa.string())]))
    v2 = typed_schema(("id", pa.int64()), wider, ("coupon", pa.string()))
    table = deltalake.DeltaTable(str(root))
    assert deltalog.widened(table, v1) is None  # the table's own: nothing to commit
    row = {"id": 2, "ship_to": {"city": "y", "zip": "75001"}, "coupon": "SAVE"}
    version = deltalog.commit(root, [write_typed(root, v2, "part-run-b-0.parquet", row)], "run-b", 2, v2)

    actions = [json.loads(line) for line in (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]
    kinds = sorted(k for a in actions for k in a if k != "commitInfo")
    assert kinds == ["add", "metaData", "txn"]
    assert deltalog.committed(root, 2)
    got = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    assert got.schema.field("value").type.equals(v2.field("value").type)
    values = dict(zip(got["offset"].to_pylist(), got["value"].to_pylist()))
    assert values == {0: {"id": 1, "ship_to": {"city": "x", "zip": None}, "coupon": None}, 1: row}

    # anything but new fields is refused, before any commit
    table = deltalake.DeltaTable(str(root))
    with pytest.raises(deltalog.SchemaChange, match="value.id"):
        deltalog.widened(table, typed_schema(("id", pa.string()), wider, ("coupon", pa.string())))
    with pytest.raises(deltalog.SchemaChange, match="value.coupon"):
        deltalog.widened(table, typed_schema(("id", pa.int64()), wider))
