"""Export rows/s: the Spark export job against the same rows written with pyarrow alone.

    .venv/bin/python bench/spark_export.py [--records 1000000] [--partitions 4] [--dir /tmp]

Builds a topic of `--records` records (100-byte values, 10k keys, lz4 batches of 1000 records,
timestamps over 5 days) with the log engine, rolls it, then measures:

- `decode (numba)` / `decode (python)`: `segments.read_task` (one process, no Spark) into Arrow
  with the compiled decoder and with the pure-Python reference;
- `pyarrow write`: those rows written with `pyarrow.dataset.write_dataset` partitioned by date
  and partition (zstd Parquet, as the job writes), decoding excluded: what the export ends in;
- `export (parquet)` / `export (delta)`: `ExportJob.run()` (local[2], the CLI's defaults) from
  segments to the registered table, manifest included, into Parquet and into a Delta table (both:
  each Spark task decodes and writes with pyarrow; Delta: then one commit of the files with
  delta-rs); the SparkSession is started (and each format warmed on a tiny topic) before the clock
  starts;
- `tidelog scan`: `spark.read.format("tidelog")` over the same segments, summing value lengths
  (the scan's Python workers warmed on the tiny topic first).

Prints rows/s for each (and the ratios to pyarrow's write) and checks the row counts. Prints,
never asserts timings.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tidelog.core.topics import TopicRegistry
from tidelog.log import LogConfig, PartitionLog
from tidelog.log.records import Record, build_batch

DAY_MS = 86_400_000
T0 = 1_735_689_600_000


def build_topic(log_dir: Path, topic: str, records: int, partitions: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    TopicRegistry(log_dir, node_id=1).create(topic, partitions, {})
    cfg = LogConfig(segment_bytes=32 << 20, retention_ms=-1)
    logs = [PartitionLog.open(log_dir, topic, p, cfg) for p in range(partitions)]
    per_batch = 1000
    step = 5 * DAY_MS // max(records, 1)
    ts = T0
    for b in range(0, records, per_batch):
        recs = []
        for _i in range(min(per_batch, records - b)):
            ts += step
            k = rng.randrange(10_000)
            recs.append(Record(b"key-%05d" % k, rng.randbytes(100), ts, []))
        logs[(b // per_batch) % partitions].append_raw(build_batch(recs, codec=3), now_ms=ts)
    for lg in logs:
        lg.roll(now_ms=ts)
        lg.close()


def decode_all(log_dir: Path, topic: str) -> tuple[list, float]:
    """Every closed segment decoded into Arrow batches by `segments.read_task` (one process, no
    Spark): the batches and the seconds it took."""
    from tidelog.spark_export import segments as seg

    t = time.perf_counter()
    batches = []
    for partition, pdir in seg.partition_dirs([log_dir], topic).items():
        for task in seg.plan_partition(topic, partition, pdir).tasks:
            batches += list(seg.read_task(task))
    return batches, time.perf_counter() - t


def pyarrow_write(batches: list, out: Path) -> tuple[int, float]:
    """The decoded rows written by pyarrow alone as the job writes them (zstd Parquet, partitioned
    by date and partition): the floor of the export's write."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    table = pa.Table.from_batches(batches)
    date = pc.cast(pc.cast(table["timestamp"], pa.timestamp("ms", tz="UTC")), pa.date32())
    table = table.append_column("date", date)
    t = time.perf_counter()
    ds.write_dataset(
        table,
        out,
        format="parquet",
        partitioning=["date", "partition"],
        partitioning_flavor="hive",
        file_options=ds.ParquetFileFormat().make_write_options(compression="zstd"),
    )
    return table.num_rows, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="tidelog-spark-bench-", dir=args.dir))
    try:
        data = work / "data"
        t = time.perf_counter()
        build_topic(data, "bench", args.records, args.partitions)
        build_topic(data, "warmup", 4000, 4)  # a task per core: every Python worker warmed
        print(
            f"built {args.records:,} records in {time.perf_counter() - t:.1f}s "
            f"({sum(f.stat().st_size for f in data.rglob('*.log')) / 2**20:.0f} MiB of segments)"
        )

        from tidelog.spark_export import fastdecode, segments

        if fastdecode.DECODER == "numba":
            decode_all(data, "warmup")  # the JIT compiles (or loads its cache) once per process
            batches, fast_s = decode_all(data, "bench")
            rows = sum(b.num_rows for b in batches)
            print(f"decode (numba)  : {rows:,} rows in {fast_s:6.1f}s = {rows / fast_s:10,.0f} rows/s")
        segments.DECODER = "python"  # the pure-Python reference, same process
        ref, py_s = decode_all(data, "bench")
        segments.DECODER = fastdecode.DECODER
        rows = sum(b.num_rows for b in ref)
        print(f"decode (python) : {rows:,} rows in {py_s:6.1f}s = {rows / py_s:10,.0f} rows/s")
        written, pa_s = pyarrow_write(ref, work / "pyarrow")
        print(
            f"pyarrow write   : {written:,} rows in {pa_s:6.1f}s = {written / pa_s:10,.0f} rows/s "
            "(zstd Parquet by date and partition, already decoded)"
        )

        from tidelog.spark_export.datasource import register
        from tidelog.spark_export.job import ExportJob, ExportOptions
        from tidelog.spark_export.session import SparkSettings, build_session, table_location

        spark = build_session(work / "wh", SparkSettings(table_format="delta"))
        register(spark)
        for fmt in ("parquet", "delta"):
            wh = work / f"wh-{fmt}"
            ExportJob(spark, ExportOptions([data], wh, topics=["warmup"], table_format=fmt)).run()
            t = time.perf_counter()
            ExportJob(spark, ExportOptions([data], wh, topics=["bench"], table_format=fmt)).run()
            sp_s = time.perf_counter() - t
            n = spark.read.format(fmt).load(str(table_location(wh, "bench"))).count()
            assert n == args.records, (fmt, n)
            print(
                f"export ({fmt:7}): {n:,} rows in {sp_s:6.1f}s = {n / sp_s:10,.0f} rows/s "
                f"({(written / pa_s) and (n / sp_s) / (written / pa_s):.2f} of pyarrow's write)"
            )
        # The scan's Python workers decode with the JIT: warm them (compile or cache load) first.
        warm = spark.read.format("tidelog").option("topic", "warmup").option("minPartitions", 2).load(str(data))
        warm.selectExpr("sum(length(value))").first()
        df = (
            spark.read.format("tidelog")
            .option("topic", "bench")
            .option("maxPartitionBytes", 128 << 20)
            .option("minPartitions", 2)
            .load(str(data))
        )
        t = time.perf_counter()
        scanned = df.selectExpr("sum(length(value))").first()[0]
        scan_s = time.perf_counter() - t
        n = args.records
        print(
            f"tidelog scan    : {n:,} rows in {scan_s:6.1f}s = {n / scan_s:10,.0f} rows/s "
            f"({(n / scan_s) / (written / pa_s):.2f} of pyarrow's write; {scanned:,} value bytes)"
        )
        spark.stop()
        assert n == rows == written == args.records, (n, rows, written)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
