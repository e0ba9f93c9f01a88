"""Failover under load (issue 21, "done when" 1 and 6): one etcd and three brokers; a topic with
RF 3, min ISR 2, 6 partitions; idempotent acks=all producers of three client libraries
(confluent-kafka, kafka-python, aiokafka) and a consumer polling every partition; a nemesis
SIGKILLs the leader of a partition and restarts it, again and again. The history checker
(tests/history.py) then reads the clients' own records against the final log.

CI runs the short form (TIDELOG_NEMESIS_KILLS=10 in about a minute); the long form is
`TIDELOG_NEMESIS_KILLS=60 TIDELOG_NEMESIS_SECONDS=360 pytest tests/cluster/test_nemesis.py`."""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.log.records import iter_batches

from cluster_process import Cluster
from history import History
from test_replication import describe, leader_of, wait_for

KILLS = int(os.environ.get("TIDELOG_NEMESIS_KILLS", "10"))
SECONDS = float(os.environ.get("TIDELOG_NEMESIS_SECONDS", "60"))
PARTITIONS = 6

pytestmark = pytest.mark.timeout(300 + int(SECONDS) * 3)


class Clients:
    """The three producers and the consumer, each in its own thread, recording into one History."""

    def __init__(self, c: Cluster, topic: str, h: History) -> None:
        self.c, self.topic, self.h = c, topic, h
        self.stop = threading.Event()
        self.fatal: list[str] = []
        self.threads = [threading.Thread(target=self._guard, args=(f,), name=f.__name__)
                        for f in (self.confluent, self.kafka_python, self.aiokafka, self.consumer)]
        self.counts: dict[str, int] = {}

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(240)
            assert not t.is_alive(), f"{t.name} did not finish"

    def _guard(self, f) -> None:
        try:
            f()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.fatal.append(f"{f.__name__}: {e!r}")

    def _pace(self, i: int) -> None:
        if i % 50 == 0:
            time.sleep(0.1)

    def confluent(self) -> None:
        h, name = self.h, "confluent"
        errors: list[KafkaError] = []

        def cb(err, msg):
            v = msg.value().decode()
            if err:
                errors.append(err)
                h.fail(name, v)
                if err.fatal():
                    self.fatal.append(f"confluent: {err}")
            else:
                h.ack(name, v, msg.partition(), msg.offset())

        p = Producer({"bootstrap.servers": self.c.bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, "message.timeout.ms": 180000, "topic.metadata.refresh.interval.ms": 2000})
        i = 0
        while not self.stop.is_set():
            v = f"ck-{i}"
            h.send(name, v)
            p.produce(self.topic, v.encode(), key=str(i % 31).encode(), on_delivery=cb)
            p.poll(0)
            i += 1
            self._pace(i)
        assert p.flush(180) == 0, "confluent: records still queued"
        self.counts[name] = i

    def kafka_python(self) -> None:
        from kafka import KafkaProducer

        h, name = self.h, "kafka-python"
        p = KafkaProducer(bootstrap_servers=self.c.bootstrap.split(","), acks="all", enable_idempotence=True,
                          linger_ms=5, retries=2**31 - 1, delivery_timeout_ms=180000, request_timeout_ms=10000,
                          metadata_max_age_ms=2000, max_in_flight_requests_per_connection=5)
        i = 0
        while not self.stop.is_set():
            v = f"kp-{i}"
            h.send(name, v)
            fut = p.send(self.topic, v.encode(), key=str(i % 29).encode())
            fut.add_callback(lambda md, v=v: h.ack(name, v, md.partition, md.offset))
            fut.add_errback(lambda e, v=v: (h.fail(name, v), self.fatal.append(f"kafka-python: {e!r}")))
            i += 1
            self._pace(i)
        p.flush(180)
        p.close(30)
        self.counts[name] = i

    def aiokafka(self) -> None:
        from aiokafka import AIOKafkaProducer

        h, name = self.h, "aiokafka"

        async def run() -> None:
            p = AIOKafkaProducer(bootstrap_servers=self.c.bootstrap, acks="all", enable_idempotence=True,
                                 linger_ms=5, request_timeout_ms=180000, metadata_max_age_ms=2000,
                                 retry_backoff_ms=200)
            for _ in range(30):
                try:
                    await p.start()
                    break
                except Exception:  # noqa: BLE001 - a broker of the bootstrap list may be down
                    await asyncio.sleep(1)
            pending = set()
            i = 0
            try:
                while not self.stop.is_set():
                    v = f"ak-{i}"
                    h.send(name, v)
                    fut = await p.send(self.topic, v.encode(), key=str(i % 23).encode())

                    def done(f, v=v):
                        pending.discard(f)
                        if f.exception() is not None:
                            h.fail(name, v)
                            self.fatal.append(f"aiokafka: {f.exception()!r}")
                        else:
                            md = f.result()
                            h.ack(name, v, md.partition, md.offset)
                    pending.add(fut)
                    fut.add_done_callback(done)
                    i += 1
                    if i % 50 == 0:
                        await asyncio.sleep(0.1)
                if pending:
                    await asyncio.wait(pending, timeout=180)
            finally:
                await p.stop()
            self.counts[name] = i

        asyncio.run(run())

    def consumer(self) -> None:
        h, name = self.h, "consumer"
        c = Consumer({"bootstrap.servers": self.c.bootstrap, "group.id": f"n-{uuid.uuid4().hex[:6]}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "topic.metadata.refresh.interval.ms": 2000})
        c.assign([TopicPartition(self.topic, p, 0) for p in range(PARTITIONS)])
        try:
            while not self.stop.is_set():
                m = c.poll(0.2)
                if m is None or m.error():
                    continue
                h.poll(name, m.partition(), m.offset(), m.value().decode())
        finally:
            c.close()


def final_log(c: Cluster, topic: str) -> dict[int, list[tuple[int, str]]]:
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"f-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False})
    out: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        pos = {p: 0 for p in range(PARTITIONS)}
        deadline = time.monotonic() + 120
        while any(pos[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None or m.error():
                continue
            out[m.partition()].append((m.offset(), m.value().decode()))
            pos[m.partition()] = m.offset() + 1
        assert all(pos[p] >= ends[p] for p in ends), f"final read incomplete: {pos} of {ends}"
    finally:
        consumer.close()
    return out


def batches_upto(data_dir: Path, topic: str, p: int, hw: int) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, CRC, leader epoch) of every batch below `hw` in one replica's files."""
    out = []
    for f in sorted((data_dir / f"{topic}-{p}").glob("*.log")):
        data = f.read_bytes()
        for _pos, hd in iter_batches(data):
            last = hd.base_offset + hd.last_offset_delta
            if last < hw:
                out.append((hd.base_offset, last, hd.crc, hd.partition_leader_epoch))
    return out


def replicated_topic(c: Cluster, prefix: str) -> str:
    """A fresh topic of PARTITIONS partitions, RF 3, min ISR 2, every partition led with a full ISR."""
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(20)
    wait_for(lambda: all(len(p["isr"]) == 3 and p["leader"] > 0 for p in describe(c, topic)), 30, "a full ISR")
    return topic


def test_leader_kills_under_load_three_clients(cluster):
    c = cluster
    topic = replicated_topic(c, "nemesis")
    h = History()
    clients = Clients(c, topic, h)
    clients.start()
    rnd = random.Random(21)
    kills = 0
    t_end = time.monotonic() + SECONDS
    try:
        time.sleep(2)
        while kills < KILLS:
            gap = max(0.5, (t_end - time.monotonic()) / max(1, KILLS - kills) - 2.5)
            time.sleep(gap)
            wait_for(lambda: all(len(p["isr"]) >= 2 and p["leader"] > 0 for p in describe(c, topic)), 60,
                     "every partition led, with ISR >= 2")
            part = rnd.randrange(PARTITIONS)
            victim = leader_of(c, topic, part)
            c.brokers[victim].kill()
            kills += 1
            wait_for(lambda v=victim, part=part: leader_of(c, topic, part) not in (v, -1), 30, "a new leader")
            time.sleep(rnd.uniform(0.3, 1.5))
            c.brokers[victim].start()
        time.sleep(2)
    finally:
        clients.join()
    assert kills >= KILLS
    print(f"{kills} leader kills; acknowledged {len(h.acks)} of {sum(clients.counts.values())} sent "
          f"({clients.counts}); polled {sum(len(v) for v in h.polls.values())}")
    assert not clients.fatal, clients.fatal[:5]
    wait_for(lambda: all(len(p["isr"]) == 3 for p in describe(c, topic)), 60, "the ISR full again")
    for p, recs in final_log(c, topic).items():
        h.final(p, recs)
    found = {k: v for k, v in h.check().items() if v}
    assert not found, h.summary()
    acked = len(h.acks)
    assert acked > 1000 and len(h.acks) == sum(clients.counts.values()), (acked, clients.counts)
    # every replica holds the same batches (base offset, last offset, CRC) up to the high watermark
    parts = describe(c, topic)
    for p in range(PARTITIONS):
        with_hw = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "hw"})
        hw = with_hw.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1]
        with_hw.close()
        copies = [batches_upto(b.data_dir, topic, p, hw) for b in c.brokers.values()
                  if b.data_dir.joinpath(f"{topic}-{p}").is_dir()]
        assert len(copies) == 3 and len(parts[p]["replicas"]) == 3
        assert copies[0] and copies[0][-1][1] == hw - 1, (p, hw, copies[0][-1:])
        assert all(cp == copies[0] for cp in copies[1:]), f"partition {p}: replicas differ below the HW {hw}"
