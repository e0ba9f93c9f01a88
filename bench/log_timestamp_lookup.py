"""Timestamp -> offset lookups over 10M records in 1000 segments (ListOffsets by time).

    .venv/bin/python bench/log_timestamp_lookup.py [--records 10000000] [--segments 1000] [--lookups 2000]

Batches of 100 records are made from one template batch by rewriting firstTimestamp /
maxTimestamp and the CRC (record timestamps are deltas, so they move with it); record timestamps
are out of order inside a batch. Prints build time, open time (clean start) and the median and
p99 lookup times. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import struct
import tempfile
import time

from tidelog.log import LogConfig, PartitionLog
from tidelog.log.records import (
    CRC_OFFSET,
    FIRST_TIMESTAMP_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    Record,
    build_batch,
    compute_crc,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--segments", type=int, default=1000)
    ap.add_argument("--per-batch", type=int, default=100)
    ap.add_argument("--lookups", type=int, default=2000)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args()
    rng = random.Random(1)
    per = args.per_batch
    deltas = list(range(per))
    rng.shuffle(deltas)
    deltas[0] = 0  # first record carries firstTimestamp
    t0 = 1_700_000_000_000
    template = bytearray(build_batch([Record(b"k%d" % i, b"value-%06d" % i, t0 + d) for i, d in enumerate(deltas)]))
    n_batches = args.records // per
    seg_bytes = max(1024, n_batches * len(template) // args.segments + 1)
    cfg = LogConfig(segment_bytes=seg_bytes, retention_ms=-1)
    work = tempfile.mkdtemp(prefix="tidelog-ts-", dir=args.dir)
    try:
        log = PartitionLog.open(work, "bench", 0, cfg, lambda: t0)
        t = time.perf_counter()
        for b in range(n_batches):
            first = t0 + b * per
            struct.pack_into(">q", template, FIRST_TIMESTAMP_OFFSET, first)
            struct.pack_into(">q", template, MAX_TIMESTAMP_OFFSET, first + per - 1)
            struct.pack_into(">I", template, CRC_OFFSET, compute_crc(template))
            log.append(template)
        build_s = time.perf_counter() - t
        n_segments = len(log.segments)
        log.close()
        t = time.perf_counter()
        log = PartitionLog.open(work, "bench", 0, cfg, lambda: t0, clean_shutdown=True)
        open_s = time.perf_counter() - t
        span = n_batches * per
        times = []
        for _ in range(args.lookups):
            ts = t0 + rng.randrange(span)
            t = time.perf_counter()
            log.offset_for_timestamp(ts)
            times.append(time.perf_counter() - t)
        times.sort()
        print(
            f"{n_batches * per} records, {n_batches} batches of {per}, {n_segments} segments "
            f"({seg_bytes} bytes each); built in {build_s:.1f} s; clean open in {open_s * 1000:.0f} ms"
        )
        print(
            f"offset_for_timestamp: median {statistics.median(times) * 1e6:.0f} us, "
            f"p99 {times[int(len(times) * 0.99)] * 1e6:.0f} us over {len(times)} random lookups "
            f"(first lookups open each segment's indexes lazily)"
        )
        log.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
