"""A broker holding 10M records in 1,000 segments: start-up time after a clean shutdown, and
ListOffsets-by-time over the wire (issue 8: start < 2 s, lookup < 1 ms median per partition).

    .venv/bin/python bench/segments_1000.py [--records 10000000] [--segments 1000] [--lookups 2000]

1. `tidelog serve` creates topic `ts` (segment.bytes sized for --segments) and stops cleanly.
2. The partition is filled offline through `PartitionLog` with batches of 100 records whose
   timestamps are out of order inside each batch (as `log_timestamp_lookup.py`), closed cleanly.
3. The broker is started again; printed: time from spawn to listening (the logs are opened
   before the listener), to the first ListOffsets answer, the broker's own "opened N partition
   logs" line, and its RSS.
4. ListOffsets v5 for random timestamps, one partition per request, from a raw socket client:
   median and p99 per request (each answer is checked against the arithmetic expectation).
Prints, never asserts.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import Tidelog
from rawclient import RawClient

from tidelog.log import LogConfig, PartitionLog
from tidelog.log.records import (
    CRC_OFFSET,
    FIRST_TIMESTAMP_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    Record,
    build_batch,
    compute_crc,
)

T0 = 1_700_000_000_000


def deltas_for(per: int) -> list[int]:
    rng = random.Random(1)
    deltas = list(range(per))
    rng.shuffle(deltas)
    deltas[0] = 0  # the first record carries firstTimestamp
    return deltas


def build(data_dir: Path, topic: str, records: int, per: int, seg_bytes: int) -> int:
    deltas = deltas_for(per)
    template = bytearray(build_batch([Record(b"k%d" % i, b"value-%06d" % i, T0 + d) for i, d in enumerate(deltas)]))
    cfg = LogConfig(segment_bytes=seg_bytes, retention_ms=-1)
    log = PartitionLog.open(data_dir, topic, 0, cfg, lambda: T0)
    for b in range(records // per):
        first = T0 + b * per
        struct.pack_into(">q", template, FIRST_TIMESTAMP_OFFSET, first)
        struct.pack_into(">q", template, MAX_TIMESTAMP_OFFSET, first + per - 1)
        struct.pack_into(">I", template, CRC_OFFSET, compute_crc(template))
        log.append(template, now_ms=T0)
    n = len(log.segments)
    log.close()
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--segments", type=int, default=1000)
    ap.add_argument("--lookups", type=int, default=2000)
    args = ap.parse_args()
    per = 100
    batch_len = len(build_batch([Record(b"k%d" % i, b"value-%06d" % i, T0 + i) for i in range(per)]))
    seg_bytes = max(1024, (args.records // per) * batch_len // args.segments + 1)
    work = Path(tempfile.mkdtemp(prefix="tidelog-seg1000-"))
    b = Tidelog(work / "data", overrides=["log.retention.ms=-1"])
    b.start(work)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog",
            "topics",
            "create",
            "--bootstrap-server",
            b.bootstrap,
            "--topic",
            "ts",
            "--partitions",
            "1",
            "--config",
            f"segment.bytes={seg_bytes}",
            "--config",
            "retention.ms=-1",
        ],
        check=True,
        capture_output=True,
    )
    b.stop()
    t = time.perf_counter()
    n_segments = build(b.data_dir, "ts", args.records, per, seg_bytes)
    print(
        f"built {args.records} records in {n_segments} segments of {seg_bytes} bytes in "
        f"{time.perf_counter() - t:.1f} s",
        flush=True,
    )

    starts = []
    for attempt in range(3):  # three clean restarts; the first after the offline build
        t = time.perf_counter()
        b.start(work)  # returns once the port accepts
        listening = time.perf_counter() - t
        c = RawClient(b.bootstrap)
        c.list_offset("ts", 0, -1)
        answered = time.perf_counter() - t
        opened = re.findall(r"opened (\d+) partition logs in (\d+) ms", b.log_path.read_text())
        starts.append((listening, answered, opened[-1] if opened else None, b.rss_kb()))
        if attempt < 2:
            c.close()
            b.stop()
    for i, (listening, answered, opened, rss) in enumerate(starts):
        print(
            f"start {i + 1}: listening after {listening * 1000:.0f} ms, first ListOffsets answered after "
            f"{answered * 1000:.0f} ms (broker: opened {opened[0]} logs in {opened[1]} ms), RSS {rss // 1024} MB"
        )

    rng = random.Random(2)
    deltas = deltas_for(per)
    span = (args.records // per) * per
    times = []
    for _ in range(args.lookups):
        ts = T0 + rng.randrange(span)
        t = time.perf_counter()
        err, off, found_ts = c.list_offset("ts", 0, ts)
        times.append(time.perf_counter() - t)
        b_idx = (ts - T0) // per
        i = min(j for j in range(per) if deltas[j] >= ts - (T0 + b_idx * per))
        assert err == 0 and off == b_idx * per + i and found_ts == T0 + b_idx * per + deltas[i], (
            ts,
            err,
            off,
            found_ts,
        )
    first_pass = sorted(times)
    times = []
    for _ in range(args.lookups):
        ts = T0 + rng.randrange(span)
        t = time.perf_counter()
        c.list_offset("ts", 0, ts)
        times.append(time.perf_counter() - t)
    times.sort()
    noop = []
    for _ in range(500):
        t = time.perf_counter()
        c.list_offset("ts", 0, -1)
        noop.append(time.perf_counter() - t)
    noop.sort()

    def q(v, p):
        return v[min(len(v) - 1, int(len(v) * p))] * 1e3

    print(
        f"ListOffsets by time over the wire, 1 partition per request: first {args.lookups} lookups "
        f"(indexes opened lazily) median {statistics.median(first_pass) * 1e3:.3f} ms "
        f"p99 {q(first_pass, 0.99):.3f} ms; "
        f"next {args.lookups}: median {statistics.median(times) * 1e3:.3f} ms p99 {q(times, 0.99):.3f} ms; "
        f"ListOffsets(latest) round trip median {statistics.median(noop) * 1e3:.3f} ms; RSS {b.rss_kb() // 1024} MB"
    )
    c.close()
    b.stop()
    b.cleanup()


if __name__ == "__main__":
    main()
