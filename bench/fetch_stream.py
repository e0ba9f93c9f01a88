"""One Fetch of a partition holding 1 GiB (in the page cache) vs loopback TCP in the same run
(issue 8: >= 50% of loopback, the zero-copy path).

    .venv/bin/python bench/fetch_stream.py [--mib 1024] [--rounds 3]

The partition is written offline through `PartitionLog` (1 MiB batches of 1 KiB records) into
one segment (topic segment.bytes = 1.5 GiB), read once to warm the page cache, then the broker is
started. Each round, alternating: (a) loopback: a thread `sendall`s the same number of bytes from
a 1 MiB buffer to a socket this process drains with `recv_into` into a 1 MiB buffer; (b) one
FetchRequest v11 (max_bytes and partition_max_bytes above the partition size) from a raw socket,
drained the same way, timed from sending the request to the last byte. Prints GB/s of each,
their ratio (medians), and the broker's RSS after the fetches. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import Tidelog
from rawclient import RawClient

from tidelog.log import LogConfig, PartitionLog
from tidelog.log.records import Record, build_batch

_I32 = struct.Struct(">i")
CHUNK = 1 << 20


def drain(sock: socket.socket, n: int, buf: memoryview) -> None:
    while n:
        got = sock.recv_into(buf, min(n, len(buf)))
        if not got:
            raise ConnectionError("closed early")
        n -= got


def loopback(total: int) -> float:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    payload = bytes(CHUNK)

    def send() -> None:
        conn, _ = srv.accept()
        with conn:
            left = total
            while left:
                k = min(left, CHUNK)
                conn.sendall(payload[:k] if k < CHUNK else payload)
                left -= k

    th = threading.Thread(target=send)
    th.start()
    buf = memoryview(bytearray(CHUNK))
    with socket.create_connection(srv.getsockname()) as c:
        t = time.perf_counter()
        drain(c, total, buf)
        dt = time.perf_counter() - t
    th.join()
    srv.close()
    return total / dt / 1e9


def fetch_once(bootstrap: str, topic: str, max_bytes: int) -> tuple[float, int]:
    c = RawClient(bootstrap)
    from tidelog.wire import fetch

    req = fetch.FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=max_bytes,
        topics=[
            fetch.FetchRequestTopic(
                topic=topic,
                partitions=[fetch.FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=max_bytes)],
            )
        ],
    )
    buf = memoryview(bytearray(CHUNK))
    t = time.perf_counter()
    c.send(1, 11, fetch.encode_request(req, 11))
    size = _I32.unpack(c._exactly(4))[0]
    drain(c.sock, size, buf)
    dt = time.perf_counter() - t
    c.close()
    return size / dt / 1e9, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidelog-fetch1g-"))
    seg_bytes = 1536 << 20
    b = Tidelog(work / "data")
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
            "big",
            "--partitions",
            "1",
            "--config",
            f"segment.bytes={seg_bytes}",
        ],
        check=True,
        capture_output=True,
    )
    b.stop()
    batch = build_batch([Record(None, bytes(1000), int(time.time() * 1000)) for _ in range(1024)])
    log = PartitionLog.open(b.data_dir, "big", 0, LogConfig(segment_bytes=seg_bytes))
    total = 0
    while total < args.mib << 20:
        total += log.append(batch).size
    n_segments = len(log.segments)
    log.close()
    seg = b.data_dir / "big-0" / ("0" * 20 + ".log")
    with open(seg, "rb") as f:  # warm the page cache
        while f.read(16 << 20):
            pass
    b.start(work)
    print(f"partition: {total / 2**30:.2f} GiB in {n_segments} segment(s), {len(batch)} B batches", flush=True)
    lo, fe = [], []
    for r in range(args.rounds):
        lo.append(loopback(total))
        gbps, size = fetch_once(b.bootstrap, "big", min(2**31 - 1, total + (64 << 20)))
        fe.append(gbps)
        print(
            f"round {r + 1}: loopback {lo[-1]:.2f} GB/s, one fetch of {size / 2**30:.2f} GiB {fe[-1]:.2f} GB/s "
            f"({fe[-1] / lo[-1]:.2f})",
            flush=True,
        )
    print(
        f"median: loopback {statistics.median(lo):.2f} GB/s, fetch {statistics.median(fe):.2f} GB/s, "
        f"ratio {statistics.median(fe) / statistics.median(lo):.2f}; broker RSS {b.rss_kb() // 1024} MB "
        f"(peak {b.peak_rss_kb() // 1024} MB)"
    )
    b.stop()
    b.cleanup()


if __name__ == "__main__":
    main()
