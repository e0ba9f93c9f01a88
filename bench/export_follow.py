"""Freshness of `tidelog export --follow`: how far the table trails the log while producers write.

    .venv/bin/python bench/export_follow.py [--rate 50000] [--seconds 120] [--segment-ms 10000]

Starts a tidelog broker, creates a topic (4 partitions, `segment.ms`), runs one confluent-kafka
producer process per partition pair at `--rate` records/s in all (100-byte values, lz4), and
`tidelog export --follow --metrics-port P` against the broker's log directory. Every half second
it reads the follower's `tidelog_export_lag_seconds` (the age of the oldest record not yet in the
table) once the first run has ended, and prints the median, p99 and maximum of that lag, the
producers' achieved rate, and the number of export runs. The bound to compare with is
`segment.ms` + the poll interval + one run's duration. Prints, never asserts timings.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import Tidelog, free_port

TOPIC = "fresh"
PARTITIONS = 4


def produce(bootstrap: str, rate: float, seconds: float, seed: int, out) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": "lz4", "acks": 1})
    value = os.urandom(100)
    sent, start = 0, time.monotonic()
    while (now := time.monotonic()) - start < seconds:
        due = int((now - start) * rate)
        while sent < due:
            try:
                p.produce(TOPIC, value, key=str(sent % 10_000 + seed).encode())
                sent += 1
            except BufferError:
                p.poll(0.01)
        p.poll(0)
        time.sleep(0.002)
    p.flush(60)
    out.put(sent)


def scrape(url: str) -> dict[str, float]:
    try:
        body = urllib.request.urlopen(url, timeout=2).read().decode()
    except OSError:
        return {}
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def create_topic(bootstrap: str, segment_ms: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config={"segment.ms": str(segment_ms)})])
    fut[TOPIC].result(30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=50_000)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--segment-ms", type=int, default=10_000)
    ap.add_argument("--producers", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="export-follow-"))
    broker = Tidelog(work / "data").start(work)
    port = free_port()
    exporter = None
    try:
        create_topic(broker.bootstrap, args.segment_ms)
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        exporter = subprocess.Popen(
            [sys.executable, "-m", "tidelog.spark_export", "--log-dirs", str(work / "data")]
            + ["--warehouse", str(work / "wh"), "--follow", "--metrics-port", str(port), "--master", "local[1]"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(work / "export.log", "w"),
        )
        q: multiprocessing.Queue = multiprocessing.Queue()
        producers = [
            multiprocessing.Process(
                target=produce, args=(broker.bootstrap, args.rate / args.producers, args.seconds, i, q)
            )
            for i in range(args.producers)
        ]
        t0 = time.monotonic()
        for pr in producers:
            pr.start()
        url = f"http://127.0.0.1:{port}/metrics"
        lags: list[float] = []
        runs = 0.0
        while any(pr.is_alive() for pr in producers):
            m = scrape(url)
            runs = m.get("tidelog_export_runs_total", 0.0)
            if runs >= 1:
                lags.append(m.get(f'tidelog_export_lag_seconds{{topic="{TOPIC}"}}', 0.0))
            time.sleep(0.5)
        sent = sum(q.get() for _ in producers)
        elapsed = time.monotonic() - t0
        for pr in producers:
            pr.join()
        achieved = sent / elapsed
        print(f"producers: {sent} records in {elapsed:.0f} s ({achieved:,.0f} records/s, target {args.rate:,.0f})")
        print(f"segment.ms {args.segment_ms}; export runs {runs:.0f}; {len(lags)} lag samples after the first run")
        if lags:
            q99 = statistics.quantiles(lags, n=100)[98] if len(lags) >= 2 else lags[0]
            print(
                f"table lag behind the log, seconds: median {statistics.median(lags):.1f}, "
                f"p99 {q99:.1f}, max {max(lags):.1f}"
            )
    finally:
        if exporter is not None:
            exporter.terminate()
            exporter.wait(120)
        broker.stop()
        broker.cleanup()


if __name__ == "__main__":
    main()
