"""Soak: 25 producers and 25 consumers (separate client instances, so at least 50 connections)
work against one broker for TIDELOG_SOAK_SECONDS (default 60; the issue's long form is 600) while
the broker's RSS is sampled every second. After a warm-up (the first quarter), RSS must not keep
growing: the highest sample of the last quarter stays within 32 MB of the highest sample of the
second quarter. Every consumer keeps receiving records throughout."""

import os
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

SECONDS = int(os.environ.get("TIDELOG_SOAK_SECONDS", "60"))
N = 25
TOPIC = "soak"

pytestmark = pytest.mark.timeout(max(300, SECONDS + 240))  # the long form outlives the default


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_soak_rss_does_not_grow(broker_factory):
    b = broker_factory({"log.segment.bytes": str(4 << 20), "num.partitions": "5"})
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 5, 1)])[TOPIC].result(20)
    stop = threading.Event()
    produced = [0] * N
    consumed = [0] * N
    errors: list[str] = []

    def producer(i):
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 20, "acks": "all"})
        while not stop.is_set():
            try:
                p.produce(TOPIC, b"x" * 200, partition=i % 5)
                produced[i] += 1
            except BufferError:
                p.poll(0.05)
            if produced[i] % 50 == 0:
                p.poll(0.02)
        p.flush(30)

    def consumer(i):
        c = Consumer(
            {
                "bootstrap.servers": b.bootstrap,
                "group.id": f"soak-{i}",
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
            }
        )
        c.assign([TopicPartition(TOPIC, i % 5, -1)])
        while not stop.is_set():
            for m in c.consume(200, 0.5):
                if m.error() is None:
                    consumed[i] += 1
                elif not m.error().retriable():
                    errors.append(str(m.error()))
        c.close()

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(N)]
    threads += [threading.Thread(target=consumer, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    samples = []
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < SECONDS:
            samples.append(rss_mb(b.proc.pid))
            time.sleep(1)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    q = max(1, len(samples) // 4)
    second, last = max(samples[q : 2 * q]), max(samples[-q:])
    print(
        f"soak {SECONDS}s: produced {sum(produced)}, consumed {sum(consumed)}, "
        f"RSS {samples[0]:.0f} -> {second:.0f} (2nd quarter max) -> {last:.0f} MB (last quarter max)"
    )
    assert not errors, errors[:5]
    assert all(c > 0 for c in consumed), consumed
    assert last - second < 32, f"RSS still growing: {samples}"
    assert b.proc.poll() is None
