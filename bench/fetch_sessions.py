"""What declining fetch sessions (KIP-227) costs: a full Fetch of many idle partitions against the
smallest Fetch an incremental session could send instead.

    .venv/bin/python bench/fetch_sessions.py [--partitions 100] [--requests 3000]

tidelog answers every Fetch with session_id 0, so a client keeps sending full requests. With a
session, a consumer whose partitions have no new data sends (and gets back) only what changed:
at most a partition or two. This starts a broker, creates a topic of `--partitions` idle
partitions, and times round trips of Fetch v11 (max_wait 0) naming all of them vs naming one:
the difference is the most a session could save per fetch. librdkafka (confluent-kafka, kcat)
and aiokafka never open sessions; kafka-python and Java clients do. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from brokers import Tidelog
from rawclient import RawClient

from tidelog.wire import fetch


def fetch_round_trips(client: RawClient, topic: str, partitions: int, n: int) -> tuple[list[float], int, int]:
    req = fetch.FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        topics=[
            fetch.FetchRequestTopic(
                topic=topic,
                partitions=[
                    fetch.FetchRequestPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                    for p in range(partitions)
                ],
            )
        ],
    )
    body = fetch.encode_request(req, 11)
    req_bytes = sum(len(c) for c in body)
    times = []
    resp_bytes = 0
    for _ in range(n):
        t = time.perf_counter()
        client.send(1, 11, body)
        frame = client.recv_frame()
        times.append(time.perf_counter() - t)
        resp_bytes = len(frame)
    return times, req_bytes, resp_bytes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--requests", type=int, default=3000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fetch-sessions-"))
    broker = Tidelog(overrides=[f"num.partitions={args.partitions}"]).start(work)
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("idle", args.partitions, 1)])["idle"].result(15)
        client = RawClient(broker.bootstrap)
        fetch_round_trips(client, "idle", args.partitions, 200)  # warm up
        cpu0 = broker.cpu_s()
        full, full_req, full_resp = fetch_round_trips(client, "idle", args.partitions, args.requests)
        cpu1 = broker.cpu_s()
        one, one_req, one_resp = fetch_round_trips(client, "idle", 1, args.requests)
        cpu2 = broker.cpu_s()
        client.close()
        for name, t, rq, rs, cpu in (
            (f"full fetch, {args.partitions} idle partitions", full, full_req, full_resp, cpu1 - cpu0),
            ("fetch of 1 partition (session's best case)", one, one_req, one_resp, cpu2 - cpu1),
        ):
            print(
                f"{name:45s} request {rq:6,} B  response {rs:6,} B  "
                f"round trip p50 {statistics.median(t) * 1e6:7.1f} µs  "
                f"p99 {sorted(t)[int(len(t) * 0.99)] * 1e6:7.1f} µs  "
                f"broker CPU {cpu / len(t) * 1e6:6.1f} µs/fetch"
            )
    finally:
        broker.stop()
        broker.cleanup()


if __name__ == "__main__":
    main()
