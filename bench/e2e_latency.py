"""Produce-to-consume latency (issue 4): how soon a consumer waiting in a long poll gets a new
message, tidelog vs tansu 0.6.0, alternating.

    .venv/bin/python bench/e2e_latency.py [--messages 2000] [--rate 500] [--rounds 3]

A confluent-kafka consumer (fetch.wait.max.ms=500, fetch.min.bytes=1: it waits in the broker's
long poll) is assigned to the end of a fresh one-partition topic in a thread; a producer
(linger.ms=0, acks=all) in the main thread sends --messages values at --rate msgs/s, each
carrying its `perf_counter_ns` send time. Latency = receive time - send time (same process, same
clock): producer queueing + produce round trip + the broker waking the parked fetch + the fetch
response + the consumer's queue. Prints p50/p99 per broker (medians over rounds) and ratios.
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import Tansu, Tidelog

_Q = struct.Struct(">q")


def one_round(bootstrap: str, n: int, rate: float) -> tuple[float, float]:
    topic = "lat-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    p.list_topics(topic, timeout=10)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "lat-" + topic,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 500,
            "fetch.min.bytes": 1,
            "fetch.queue.backoff.ms": 0,
        }
    )
    c.assign([TopicPartition(topic, 0, OFFSET_END)])
    lat: list[float] = []
    ready = threading.Event()
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set():
            m = c.poll(0.05)
            ready.set()
            if m is None or m.error() is not None:
                continue
            v = m.value()
            if len(v) >= 8 and v[:2] != b"WU":
                lat.append((time.perf_counter_ns() - _Q.unpack_from(v)[0]) / 1e6)

    th = threading.Thread(target=consume)
    th.start()
    ready.wait(10)
    for _ in range(20):  # warm up: connections, the consumer's first fetch
        p.produce(topic, b"WU" + bytes(6))
        p.poll(0.02)
    p.flush(5)
    time.sleep(1.0)
    t0 = time.perf_counter()
    for i in range(n):
        due = t0 + i / rate
        while (now := time.perf_counter()) < due:
            p.poll(min(due - now, 0.001))
        p.produce(topic, _Q.pack(time.perf_counter_ns()) + bytes(92))
        p.poll(0)
    p.flush(10)
    deadline = time.monotonic() + 10
    while len(lat) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    th.join()
    c.close()
    lat.sort()
    if not lat:
        return float("nan"), float("nan")
    return statistics.median(lat), lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidelog-e2e-"))
    brokers = [Tidelog(), Tansu()]
    for b in brokers:
        b.start(work)
    time.sleep(1.5)
    res: dict[str, list[tuple[float, float]]] = {b.name: [] for b in brokers}
    try:
        for r in range(args.rounds):
            for b in brokers:
                p50, p99 = one_round(b.bootstrap, args.messages, args.rate)
                res[b.name].append((p50, p99))
                print(f"round {r + 1} {b.name}: p50 {p50:.2f} ms p99 {p99:.2f} ms", flush=True)
    finally:
        for b in brokers:
            b.stop()
            b.cleanup()
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in res.items()}
    t, a = med["tidelog"], med["tansu"]
    print(
        f"produce-to-consume, {args.messages} msgs at {args.rate:.0f}/s, medians of {args.rounds} rounds: "
        f"tidelog p50 {t[0]:.2f} ms p99 {t[1]:.2f} ms; tansu p50 {a[0]:.2f} ms p99 {a[1]:.2f} ms; "
        f"tansu/tidelog p50 {a[0] / t[0]:.2f}, p99 {a[1] / t[1]:.2f}"
    )


if __name__ == "__main__":
    main()
