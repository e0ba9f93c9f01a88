"""`--table-format iceberg`: one pyiceberg snapshot per run and table (the run id in its
summary), time travel per run, the day(timestamp)/identity(partition) spec, exactly once through a
crash at every phase (in process and a killed `tidelog export`), no file left that no snapshot
references, `_latest` against a brute-force compaction, and Spark reading the tables by name."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_logdata import LogWriter, Model
from test_job import assert_exactly, export, manifest, table_idents

pytest.importorskip("pyiceberg")

from tidelog.spark_export.iceberg import IcebergCatalogError, catalog_config, load_catalog
from tidelog.spark_export.iceberg_job import ICEBERG_CRASH_POINTS
from tidelog.spark_export.iceberg_source import snapshots
from tidelog.spark_export.job import SimulatedCrash
from tidelog.spark_export.manifest import TableFormatError

pytestmark = pytest.mark.timeout(900)
HERE = Path(__file__).parent


def run_ids(warehouse: Path) -> list[str]:
    return [r["run_id"] for r in manifest(warehouse)["runs"]]


def table(warehouse: Path, name: str):
    return load_catalog(warehouse).load_table(("tidelog", name))


def unreferenced(warehouse: Path, name: str) -> set[str]:
    """Data files on disk that no snapshot of the table references."""
    t = table(warehouse, name)
    referenced = {task.file.file_path for s in t.snapshots() for task in t.scan(snapshot_id=s.snapshot_id).plan_files()}
    on_disk = {str(p) for p in (warehouse / "tidelog.db" / name / "data").rglob("*.parquet")}
    return on_disk - referenced


def view(spark, warehouse: Path, name: str, **option) -> str:
    """A temporary view of `name` (as of a snapshot) read by Spark through `tidelog_iceberg`.
    The suite's session has Delta's spark_catalog, which reads no Python data source table by
    name: the tables are read by name in a new session (`iceberg_reader.py`)."""
    df = spark.read.format("tidelog_iceberg").option("warehouse", str(warehouse)).option("table", name)
    for k, v in option.items():
        df = df.option(k.replace("_", "-"), v)
    df.load().createOrReplaceTempView(f"iceberg_{name}")
    return f"iceberg_{name}"


def idents_at(spark, warehouse: Path, name: str, **option) -> list[tuple]:
    return table_idents(spark, view(spark, warehouse, name, **option))


def assert_tables(spark, warehouse: Path, topic: str, committed) -> None:
    """`tidelog.<topic>` holds `committed` once each, `tidelog.<topic>_latest` its compaction."""
    assert_exactly(spark, view(spark, warehouse, topic), committed)
    latest = Model.compact(committed)
    assert idents_at(spark, warehouse, topic + "_latest") == sorted(r.ident() for r in latest.values())


def read_by_name(warehouse: Path, name: str, *snapshot_ids: int) -> dict:
    """`iceberg_reader.py`: a new session attaches the tables and reads `tidelog.<name>`."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    out = subprocess.run(
        [sys.executable, str(HERE / "iceberg_reader.py"), str(warehouse), name, *map(str, snapshot_ids)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def assert_time_travel(spark, wh: Path, seen_orders: list, seen_profiles: list) -> None:
    """Each run's snapshot read by Spark (by snapshot id and by time) and pyiceberg: the rows
    committed up to that run, `_latest` their brute-force compaction."""
    for n, snap in enumerate(snapshots(wh, "orders")):
        want = sorted(r.ident() for r in seen_orders[n])
        assert idents_at(spark, wh, "orders", snapshot_id=snap["snapshot_id"]) == want
        assert idents_at(spark, wh, "orders", as_of_timestamp=snap["timestamp_ms"]) == want
        assert table(wh, "orders").scan(snapshot_id=snap["snapshot_id"]).to_arrow().num_rows == len(want)
    for n, snap in enumerate(snapshots(wh, "profiles_latest")):
        brute = Model.compact(seen_profiles[n])
        assert idents_at(spark, wh, "profiles_latest", snapshot_id=snap["snapshot_id"]) == sorted(
            r.ident() for r in brute.values()
        )


def assert_spec(wh: Path, expected: list) -> None:
    """day(timestamp) as `date`, identity(partition); every file in one partition of the spec."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = table(wh, "orders")
    assert [(f.name, str(f.transform)) for f in t.spec().fields] == [("date", "day"), ("partition", "identity")]
    epoch = dt.date(1970, 1, 1)
    days = set()
    for task in t.scan().plan_files():
        rows = pq.read_table(task.file.file_path, columns=["timestamp", "partition"])
        day, partition = task.file.partition[0], task.file.partition[1]
        assert {d - epoch for d in pc.cast(rows["timestamp"], "date32").to_pylist()} == {dt.timedelta(day)}
        assert set(rows["partition"].to_pylist()) == {partition}
        days.add(day)
    assert len(days) > 1
    pruned = t.scan(row_filter="partition = 1").to_arrow()
    assert sorted(pruned["offset"].to_pylist()) == sorted(r.offset for r in expected if r.partition == 1)


def test_each_run_is_one_snapshot_per_table_with_time_travel(catalog, tmp_path):
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    orders = LogWriter(data, "orders", partitions=2, segment_bytes=8192, seed=41)
    profiles = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=42, keys=25, compact=True)
    seen_orders, seen_profiles = [], []
    for _ in range(3):
        orders.fill(20)
        profiles.fill(15)
        closed_o, closed_p = orders.roll(), profiles.roll()
        s = export(spark, data, wh, table_format="iceberg")
        assert s["orders"].rows > 0 and s["profiles"].latest_rows is not None
        seen_orders.append(orders.model.committed(closed_o))
        seen_profiles.append(profiles.model.committed(closed_p))
        assert s["profiles"].latest_rows == len(Model.compact(seen_profiles[-1]))
    assert manifest(wh)["table_format"] == "iceberg"
    assert (wh / "_tidelog" / "iceberg.db").exists()
    assert_exactly(spark, view(spark, wh, "orders"), seen_orders[-1])
    assert_tables(spark, wh, "profiles", seen_profiles[-1])

    ids = run_ids(wh)
    assert [(s["operation"], s["run_id"]) for s in snapshots(wh, "orders")] == [("append", i) for i in ids]
    latest_snaps = snapshots(wh, "profiles_latest")
    assert [s["run_id"] for s in latest_snaps] == ids
    assert [s["operation"] for s in latest_snaps] == ["append", "overwrite", "overwrite"]
    offsets = json.loads(snapshots(wh, "orders")[0]["summary"]["tidelog.offsets"])
    assert set(offsets) == {"0", "1"} and all(lo == 0 < hi for lo, hi in offsets.values())
    assert_time_travel(spark, wh, seen_orders, seen_profiles)
    assert not unreferenced(wh, "orders") and not unreferenced(wh, "profiles")
    assert not list((wh / "_tidelog").glob("staging/*"))

    assert_spec(wh, seen_orders[-1])
    # A warehouse keeps its format.
    with pytest.raises(TableFormatError):
        export(spark, data, wh, table_format="delta")
    # A new session attaches the tables and reads them by name, time travel in SQL.
    from tidelog.spark_export.iceberg_source import IcebergSessionError
    from tidelog.spark_export.session import attach_tables

    with pytest.raises(IcebergSessionError):
        attach_tables(spark, wh)  # this one has Delta's spark_catalog
    ids = [s["snapshot_id"] for s in snapshots(wh, "orders")]
    got = read_by_name(wh, "orders", *ids)
    assert set(got["tables"]) == {"tidelog.orders", "tidelog.profiles", "tidelog.profiles_latest"}
    assert got["rows"] == sorted([r.partition, r.offset] for r in seen_orders[-1])
    assert got["at"] == {str(i): len(seen) for i, seen in zip(ids, seen_orders)}
    orders.close()
    profiles.close()


def test_crash_at_every_phase_then_rerun_commits_each_run_once(catalog, tmp_path):
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=43, keys=30, compact=True)
    w.fill(20)
    w.roll()
    export(spark, data, wh, table_format="iceberg")
    for point in ICEBERG_CRASH_POINTS:
        w.fill(10)
        closed = w.roll()
        with pytest.raises(SimulatedCrash):
            export(spark, data, wh, crash_at=point)
        crashed = manifest(wh)["pending"]
        assert crashed is not None and crashed["run_id"]
        if point == "written":  # the run's files are on disk, in no snapshot
            assert unreferenced(wh, "profiles")
        if point == "latest-written":
            assert unreferenced(wh, "profiles_latest")
        export(spark, data, wh)  # completes the crashed run, then runs (nothing new to export)
        assert manifest(wh)["pending"] is None and crashed["run_id"] in run_ids(wh)
        assert_tables(spark, wh, "profiles", w.model.committed(closed))
        assert not unreferenced(wh, "profiles") and not unreferenced(wh, "profiles_latest")
    # One snapshot per run and table: the completed runs did not commit twice.
    ids = run_ids(wh)
    for name in ("profiles", "profiles_latest"):
        meta = [s["run_id"] for s in snapshots(wh, name)]
        assert len(meta) == len(set(meta)) == 1 + len(ICEBERG_CRASH_POINTS), meta
        assert set(meta) <= set(ids)
    w.close()


def test_killed_export_is_completed_by_the_next_command(catalog, tmp_path):
    """`tidelog export --table-format iceberg` killed (os._exit) after its workers wrote the data
    files, before the snapshot: the next `tidelog export` deletes them, writes the run again,
    commits it once and exits 0."""
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=44, keys=30, compact=True)
    w.fill(20)
    closed = w.roll()
    cmd = [sys.executable, "-m", "tidelog", "export", "--log-dirs", str(data), "--warehouse", str(wh)]
    cmd += ["--shuffle-partitions", "2", "--driver-memory", "512m"]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    killed = subprocess.run(
        cmd + ["--table-format", "iceberg"],
        env={**env, "TIDELOG_EXPORT_CRASH_AT": "written:hard"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == 137, killed.stderr[-3000:]
    pending = manifest(wh)["pending"]
    assert pending is not None
    left = unreferenced(wh, "profiles")
    assert left and all(f"part-{pending['run_id']}-" in f for f in left)
    assert snapshots(wh, "profiles") == []
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert manifest(wh)["pending"] is None
    assert not any(Path(f).exists() for f in left) and not unreferenced(wh, "profiles")
    assert [s["run_id"] for s in snapshots(wh, "profiles")] == [pending["run_id"]]
    refused = subprocess.run(cmd + ["--table-format", "delta"], env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "holds iceberg tables" in refused.stderr
    refused = subprocess.run(
        cmd + ["--iceberg-catalog-uri", "http://127.0.0.1:1/catalog"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2 and "keeps its Iceberg tables" in refused.stderr
    assert_tables(catalog, wh, "profiles", w.model.committed(closed))
    w.close()


def test_a_run_of_only_aborted_transactions_keeps_the_tables(catalog, tmp_path):
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=1, segment_bytes=8192, seed=45, keys=10, compact=True)
    w.fill(10)
    closed = w.roll()
    export(spark, data, wh, table_format="iceberg")
    w.begin(0, batches=1)  # one transactional batch, nothing else
    w.end(0, commit=False)
    assert w.roll() != closed
    s = export(spark, data, wh)["profiles"]
    assert s.rows == 0 and manifest(wh)["pending"] is None
    assert_tables(spark, wh, "profiles", w.model.committed(w.closed_end()))
    assert len(snapshots(wh, "profiles")) == len(snapshots(wh, "profiles_latest")) == 1  # no empty snapshot
    w.close()


def test_a_warehouse_keeps_its_catalog(tmp_path):
    wh = tmp_path / "wh"
    embedded = catalog_config(wh, save=True)
    assert embedded == {"type": "sql", "uri": f"sqlite:///{wh.resolve() / '_tidelog' / 'iceberg.db'}"}
    assert catalog_config(wh) == embedded
    with pytest.raises(IcebergCatalogError):
        catalog_config(wh, "http://127.0.0.1:1/catalog")
    rest = tmp_path / "rest"
    assert catalog_config(rest, "http://127.0.0.1:8181", save=True) == {"type": "rest", "uri": "http://127.0.0.1:8181"}
    assert catalog_config(rest) == {"type": "rest", "uri": "http://127.0.0.1:8181"}


def test_files_of_failed_task_attempts_are_removed_before_the_commit(tmp_path):
    """`remove_strays`: the run's files beside the ones its tasks reported (a failed attempt's
    output, written again by the retry) go; other runs' files and the reported ones stay."""
    from tidelog.spark_export.iceberg import IcebergTables

    d = tmp_path / "data" / "date=2025-01-01" / "partition=0"
    d.mkdir(parents=True)
    names = ["part-R1-00000-aaa.parquet", "part-R1-00000-bbb.parquet", "part-R0-00000-ccc.parquet"]
    for n in names:
        (d / n).write_bytes(b"x")
    kept = str(d / names[1])
    assert IcebergTables.remove_strays([kept], "R1") == [d / names[0]]
    assert sorted(p.name for p in d.iterdir()) == sorted(names[1:])


def test_icebergs_spark_runtime_reads_the_tables(catalog, tmp_path):
    """Iceberg's own Spark runtime (Spark 4.1 or 4.0; none works with 4.2) reads the tables over
    the same SQLite catalog: names, counts, `VERSION AS OF` per run. Needs an interpreter with
    that pyspark and tidelog's dependencies: `TIDELOG_ICEBERG_SPARK_PYTHON=/path/to/python`."""
    python = os.environ.get("TIDELOG_ICEBERG_SPARK_PYTHON")
    if not python:
        pytest.skip("TIDELOG_ICEBERG_SPARK_PYTHON (a python with pyspark 4.0/4.1) is not set")
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    orders = LogWriter(data, "orders", partitions=2, segment_bytes=8192, seed=46)
    profiles = LogWriter(data, "profiles", partitions=2, segment_bytes=8192, seed=47, keys=25, compact=True)
    counts = []
    for _ in range(2):
        orders.fill(15)
        profiles.fill(15)
        closed_o, closed_p = orders.roll(), profiles.roll()
        export(spark, data, wh, table_format="iceberg")
        counts.append(len(orders.model.committed(closed_o)))
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": python}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parents[1] / "src"), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [python, str(HERE / "iceberg_runtime_reader.py"), str(wh)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["tables"] == ["orders", "profiles", "profiles_latest"]
    assert got["orders"] == counts[-1]
    assert got["profiles_latest"] == len(Model.compact(profiles.model.committed(closed_p)))
    assert got["runs"] == dict(zip(run_ids(wh), counts))
    orders.close()
    profiles.close()


def test_a_concurrent_reader_never_sees_part_of_a_run(catalog, tmp_path):
    """A reader in its own process counts both tables in a loop (pyiceberg, the catalog read
    afresh each round) while runs commit several files each: every count it sees is a count at a
    run boundary."""
    spark = catalog
    data, wh = tmp_path / "data", tmp_path / "wh"
    w = LogWriter(data, "profiles", partitions=2, segment_bytes=4096, seed=25, keys=40, compact=True)
    w.fill(10)
    w.roll()
    export(spark, data, wh, table_format="iceberg")  # the tables exist before the reader starts

    def counts() -> tuple[int, int]:
        return (
            table(wh, "profiles").scan().to_arrow().num_rows,
            table(wh, "profiles_latest").scan().to_arrow().num_rows,
        )

    boundaries = {counts()}
    out, stop = tmp_path / "seen.jsonl", tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, str(HERE / "iceberg_counter.py"), str(wh), "profiles", "profiles_latest", str(out), str(stop)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (out.exists() and out.read_text().strip()):
            assert reader.poll() is None, reader.stderr.read()[-3000:] if reader.stderr else ""
            assert time.monotonic() < deadline, "the reader did not start"
            time.sleep(0.2)
        for _ in range(4):
            w.fill(12)
            w.roll()
            export(spark, data, wh)
            boundaries.add(counts())
    finally:
        stop.touch()
        try:
            reader.wait(timeout=60)
        finally:
            if reader.poll() is None:
                reader.kill()
    assert reader.returncode == 0, reader.stderr.read()[-3000:] if reader.stderr else ""
    seen = [json.loads(line) for line in out.read_text().splitlines()]
    mains, latests = {m for m, _l in boundaries}, {lt for _m, lt in boundaries}
    assert len({s["main"] for s in seen}) >= 2, seen  # it read while the runs committed
    assert {s["main"] for s in seen} <= mains, (sorted({s["main"] for s in seen} - mains), sorted(mains))
    assert {s["latest"] for s in seen} <= latests, (sorted({s["latest"] for s in seen} - latests), sorted(latests))
    # Each run added several files in its one snapshot, so a partial run was there to be seen.
    t = table(wh, "profiles")
    assert all(int(s.summary["added-data-files"]) > 1 for s in t.snapshots()[1:]), [s.summary for s in t.snapshots()]
    w.close()
