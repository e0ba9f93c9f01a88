"""Append throughput of tidelog.log (1 MiB batches, page cache) against `dd` in the same run, and
the cost of one small batch appended across many partitions.

    .venv/bin/python bench/log_append.py [--total-mib 1024] [--dir /tmp] [--partitions 500]

Prints MiB/s for PartitionLog.append (validation incl. CRC32C, offset assignment, one write per
append, index entries) and for `dd bs=1M` writing the same amount to the same filesystem; then
microseconds per append of a 10-record batch of 200-byte values over --partitions fresh
partitions in turn (the many-partition produce regime: every append writes index entries, and
every partition's index files grow into new pages). No fsync (flush.messages left to the OS).
Prints, never asserts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time

from tidelog.log import LogConfig, PartitionLog
from tidelog.log.records import Record, build_batch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--total-mib", type=int, default=1024)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--partitions", type=int, default=500)
    ap.add_argument("--small-appends", type=int, default=200_000)
    args = ap.parse_args()
    large(args)
    small(args)


def large(args: argparse.Namespace) -> None:
    work = tempfile.mkdtemp(prefix="tidelog-bench-", dir=args.dir)
    try:
        # one batch of ~1 MiB: 1024 records of 1 KiB
        now = int(time.time() * 1000)
        batch = build_batch([Record(b"key-%d" % i, os.urandom(1000), now) for i in range(1024)])
        n = max(1, args.total_mib * 1024 * 1024 // len(batch))
        cfg = LogConfig(max_message_bytes=2 * len(batch))
        log = PartitionLog.open(work, "bench", 0, cfg)
        t = time.perf_counter()
        for _ in range(n):
            log.append(batch)
        el = time.perf_counter() - t
        mib = n * len(batch) / 2**20
        log.close()
        print(
            f"tidelog append: {n} batches of {len(batch)} bytes, {mib:.0f} MiB in {el:.2f} s = {mib / el:.0f} MiB/s "
            f"({n / el:.0f} appends/s, {el / n * 1e6:.0f} us/append)"
        )
        out = os.path.join(work, "dd.out")
        t = time.perf_counter()
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={out}", "bs=1M", f"count={int(mib)}"], check=True, capture_output=True
        )
        el_dd = time.perf_counter() - t
        print(f"dd bs=1M:       {int(mib)} MiB in {el_dd:.2f} s = {int(mib) / el_dd:.0f} MiB/s")
        print(f"ratio tidelog/dd: {(mib / el) / (int(mib) / el_dd):.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def small(args: argparse.Namespace) -> None:
    work = tempfile.mkdtemp(prefix="tidelog-bench-", dir=args.dir)
    try:
        now = int(time.time() * 1000)
        batch = build_batch([Record(os.urandom(8), os.urandom(200), now) for _ in range(10)])
        # an index entry for every batch, as for producers' small batches of many partitions
        cfg = LogConfig(index_interval_bytes=len(batch))
        logs = [PartitionLog.open(work, "bench", p, cfg) for p in range(args.partitions)]
        n = args.small_appends
        t = time.perf_counter()
        for i in range(n):
            logs[i % len(logs)].append(batch)
        el = time.perf_counter() - t
        for log in logs:
            log.close()
        print(
            f"small batches: {n} appends of {len(batch)} bytes over {len(logs)} partitions in {el:.2f} s = "
            f"{el / n * 1e6:.1f} us/append"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
