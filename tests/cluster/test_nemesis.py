"""A nemesis under load (issues 21 and 26): one etcd and three brokers; a topic with RF 3, min ISR 2,
6 partitions, and a second one for transactions; clients:

- idempotent acks=all producers of three libraries (confluent-kafka, kafka-python, aiokafka);
- a non-idempotent confluent-kafka producer, acks=all and retries=0, whose values must never be
  written twice (failures are expected; a failed value may be in the log once, never twice);
- a confluent-kafka transactional producer (every ABORT_EVERY-th transaction aborted) writing
  TXN_SIZE records over the partitions of the second topic per transaction;
- a read_uncommitted consumer of the first topic, a read_committed one of the second.

A nemesis injects one fault every TIDELOG_NEMESIS_EVERY seconds (default 10), each kind once per
round in an order drawn from TIDELOG_NEMESIS_SEED (random when unset; printed), for
TIDELOG_NEMESIS_SECONDS (default 60); TIDELOG_NEMESIS_FAULTS=kind,kind restricts the kinds:

- leader-kill: SIGKILL the leader of a partition, restart it once another leads;
- zombie: SIGSTOP a leader until another was elected (past broker.session.timeout.ms), SIGCONT;
- two-kill: SIGKILL two of the three brokers at once, restart both;
- sigterm: SIGTERM a leader (controlled shutdown), restart it;
- disk-loss: SIGKILL a leader, delete its data directory, restart it (only once every partition
  of every topic has a full ISR, so that it stays a single failure);
- etcd-kill: SIGKILL etcd, restart it on the same data directory and ports;
- etcd-pause: SIGSTOP etcd past the session timeout, SIGCONT.

Then everything is healed, every partition must have a full ISR again, and the checks run: the
history checker (tests/history.py) over each topic's clients and final logs (read to the HW, the
transactional topic read_committed): nothing acknowledged lost, no duplicate, transactions whole
and aborted ones invisible; every client's records acknowledged (but the retries=0 producer's);
no fatal client error; replicas identical batch by batch (base offset, last offset, CRC) up to the
HW; no Traceback in a broker's log. A failure names each failed check with its values, places
anomalies among the faults, and lists the fault history and the brokers' ERROR lines; the figures
are printed either way and the report is written to <tmp>/nemesis-report.txt.

    PYTHONPATH=src:tests pytest -s tests/cluster/test_nemesis.py      # CI: ~60 s of faults
    TIDELOG_NEMESIS_SECONDS=600 TIDELOG_NEMESIS_SEED=7 pytest -s tests/cluster/test_nemesis.py
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.cli.client import KafkaClient
from tidelog.log.records import iter_batches

from cluster_process import Cluster
from history import History
from test_replication import describe, wait_for

SECONDS = float(os.environ.get("TIDELOG_NEMESIS_SECONDS", "60"))
EVERY = float(os.environ.get("TIDELOG_NEMESIS_EVERY", "10"))
SEED = int(os.environ.get("TIDELOG_NEMESIS_SEED") or random.SystemRandom().randrange(1_000_000))
KINDS = ("leader-kill", "zombie", "two-kill", "sigterm", "disk-loss", "etcd-kill", "etcd-pause")
FAULTS = tuple(k.strip() for k in os.environ.get("TIDELOG_NEMESIS_FAULTS", ",".join(KINDS)).split(",") if k.strip())
PARTITIONS = 6
TXN_SIZE = 12  # records per transaction, two per partition
ABORT_EVERY = 5  # every 5th transaction is aborted
HEAL_S = 90.0  # how long the cluster may take to lead every partition again (ISR >= 2) after a fault

pytestmark = pytest.mark.timeout(400 + int(SECONDS) * 3)


class Clients:
    """The producers and consumers, each in its own thread, recording into one History per topic.

    Without `txn_topic`: the three idempotent producers and the consumer of `topic` (the rolling
    restart and reassignment tests); with it, also the retries=0 producer, the transactional
    producer and the read_committed consumer of `txn_topic` (recording into `ht`)."""

    IDEMPOTENT = ("confluent", "kafka-python", "aiokafka")

    def __init__(self, c: Cluster, topic: str, h: History, txn_topic: str | None = None,
                 ht: History | None = None) -> None:
        self.c, self.topic, self.h = c, topic, h
        self.txn_topic, self.ht = txn_topic, ht
        self.stop = threading.Event()
        self.fatal: list[str] = []
        self.errors: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.txn_outcomes: collections.Counter = collections.Counter()
        fns = [self.confluent, self.kafka_python, self.aiokafka, self.consumer]
        if txn_topic is not None:
            assert ht is not None
            fns += [self.non_idempotent, self.transactional, self.committed_consumer]
        self.threads = [threading.Thread(target=self._guard, args=(f,), name=f.__name__) for f in fns]
        self.counts: dict[str, int] = {}
        self.finished: dict[str, float] = {}  # thread -> time.monotonic() when it ended

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
        finally:
            self.finished[f.__name__] = time.monotonic()

    def _pace(self, i: int) -> None:
        if i % 50 == 0:
            time.sleep(0.1)

    def confluent(self) -> None:
        h, name = self.h, "confluent"

        def cb(err, msg):
            v = msg.value().decode()
            if err:
                self.errors[name][err.name()] += 1
                h.fail(name, v)
                if err.fatal():
                    self.fatal.append(f"confluent: {err}")
            else:
                h.ack(name, v, msg.partition(), msg.offset())

        p = Producer({"bootstrap.servers": self.c.bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, "message.timeout.ms": 180000, "topic.metadata.refresh.interval.ms": 2000})
        i = 0
        try:
            while not self.stop.is_set():
                v = f"ck-{i}"
                h.send(name, v)
                p.produce(self.topic, v.encode(), key=str(i % 31).encode(), on_delivery=cb)
                p.poll(0)
                i += 1
                self._pace(i)
        finally:
            self.counts[name] = i
            assert p.flush(180) == 0, "confluent: records still queued"

    def non_idempotent(self) -> None:
        """acks=all, no idempotence, no retries: a failover fails its writes (counted), it never
        writes one twice."""
        h, name = self.h, "non-idempotent"

        def cb(err, msg):
            v = msg.value().decode()
            if err:
                self.errors[name][err.name()] += 1
                h.fail(name, v)
            else:
                h.ack(name, v, msg.partition(), msg.offset())

        p = Producer({"bootstrap.servers": self.c.bootstrap, "acks": "all", "enable.idempotence": False,
                      "message.send.max.retries": 0, "linger.ms": 5, "message.timeout.ms": 30000,
                      "topic.metadata.refresh.interval.ms": 2000})
        i = 0
        try:
            while not self.stop.is_set():
                v = f"nr-{i}"
                h.send(name, v)
                p.produce(self.topic, v.encode(), key=str(i % 37).encode(), on_delivery=cb)
                p.poll(0)
                i += 1
                self._pace(i)
        finally:
            self.counts[name] = i
            assert p.flush(60) == 0, "non-idempotent: records still queued"

    def kafka_python(self) -> None:
        from kafka import KafkaProducer

        h, name = self.h, "kafka-python"
        p = KafkaProducer(bootstrap_servers=self.c.bootstrap.split(","), acks="all", enable_idempotence=True,
                          linger_ms=5, retries=2**31 - 1, delivery_timeout_ms=180000, request_timeout_ms=10000,
                          metadata_max_age_ms=2000, max_in_flight_requests_per_connection=5)
        i = 0
        try:
            while not self.stop.is_set():
                v = f"kp-{i}"
                h.send(name, v)
                fut = p.send(self.topic, v.encode(), key=str(i % 29).encode())
                fut.add_callback(lambda md, v=v: h.ack(name, v, md.partition, md.offset))
                fut.add_errback(lambda e, v=v: (h.fail(name, v), self.fatal.append(f"kafka-python: {e!r}")))
                i += 1
                self._pace(i)
        finally:
            self.counts[name] = i
            p.flush(180)
            p.close(30)

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
                self.counts[name] = i
                await p.stop()

        asyncio.run(run())

    def transactional(self) -> None:
        """Transactions of TXN_SIZE records over every partition of the second topic, each
        ABORT_EVERY-th aborted; an error that leaves the outcome open ("unknown": a fatal error, a
        failed abort) replaces the producer, whose init_transactions fences the old one and settles
        its transaction. At the end a transaction left unknown is settled the same way."""
        h, name = self.ht, "txn"
        assert h is not None and self.txn_topic is not None
        txn_id = f"nemesis-{uuid.uuid4().hex[:6]}"

        def cb(err, msg):
            v = msg.value().decode()
            if err:
                self.errors[name][err.name()] += 1
                h.fail(name, v)
            else:
                h.ack(name, v, msg.partition(), msg.offset())

        def new_producer() -> Producer | None:
            while True:
                p = Producer({"bootstrap.servers": self.c.bootstrap, "transactional.id": txn_id, "acks": "all",
                              "linger.ms": 5, "transaction.timeout.ms": 60000, "message.timeout.ms": 60000,
                              "topic.metadata.refresh.interval.ms": 2000})
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    try:
                        p.init_transactions(30)
                        return p
                    except KafkaException as e:
                        err = e.args[0]
                        self.errors[name][f"init:{err.name()}"] += 1
                        if err.fatal():
                            break  # a new producer
                        if not err.retriable():
                            time.sleep(0.5)
                self.fatal.append(f"txn: init_transactions failed for 120 s ({txn_id})")
                return None

        def one(p: Producer, n: int) -> tuple[list[str], str]:
            given: list[str] = []
            try:
                p.begin_transaction()
                for k in range(TXN_SIZE):
                    v = f"tx-{n}-{k}"
                    h.send(name, v)
                    p.produce(self.txn_topic, v.encode(), partition=k % PARTITIONS, on_delivery=cb)
                    given.append(v)
                p.flush(120)
                if n % ABORT_EVERY == ABORT_EVERY - 1:
                    p.abort_transaction(60)
                    return given, "aborted"
                for _attempt in range(20):
                    try:
                        p.commit_transaction(60)
                        return given, "committed"
                    except KafkaException as e:
                        err = e.args[0]
                        if not err.retriable() or err.txn_requires_abort() or err.fatal():
                            raise
                        self.errors[name][f"commit:{err.name()}"] += 1
                return given, "unknown"
            except KafkaException as e:
                err = e.args[0]
                self.errors[name][err.name()] += 1
                if err.txn_requires_abort() and not err.fatal():
                    try:
                        p.abort_transaction(60)
                        return given, "aborted"
                    except KafkaException as e2:
                        self.errors[name][f"abort:{e2.args[0].name()}"] += 1
                return given, "unknown"

        p = new_producer()
        n = 0
        outcome = "committed"
        try:
            while p is not None and not self.stop.is_set():
                given, outcome = one(p, n)
                h.txn(name, given, outcome)
                self.txn_outcomes[outcome] += 1
                n += 1
                if outcome == "unknown":
                    p.flush(10)
                    p = new_producer()
            if outcome == "unknown" and p is not None:
                p = new_producer()  # settles the last transaction before the final read
        finally:
            self.counts[name] = sum(len(v) for v in h.sends.values())

    def consumer(self) -> None:
        self._consume(self.h, "consumer", self.topic, "read_uncommitted")

    def committed_consumer(self) -> None:
        assert self.ht is not None and self.txn_topic is not None
        self._consume(self.ht, "rc-consumer", self.txn_topic, "read_committed")

    def _consume(self, h: History, name: str, topic: str, isolation: str) -> None:
        c = Consumer({"bootstrap.servers": self.c.bootstrap, "group.id": f"n-{uuid.uuid4().hex[:6]}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "isolation.level": isolation,
                      "topic.metadata.refresh.interval.ms": 2000})
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        try:
            while not self.stop.is_set():
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    self.errors[name][m.error().name()] += 1
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


# -- the cluster's state as the brokers tell it ------------------------------------------------------

def live(c: Cluster) -> list[int]:
    return [i for i, b in c.brokers.items() if b.running and i not in c.paused]


def metadata(c: Cluster, node: int, topics: list[str] | None) -> dict[str, list[dict]]:
    """One broker's Metadata: topic -> partitions (leader, replicas, isr); None topics: all of them."""
    with KafkaClient(c.brokers[node].bootstrap, timeout=5) as client:
        md = client.request(3, {"topics": None if topics is None else [{"name": t} for t in topics],
                                "allow_auto_topic_creation": False}, version=9)
    out = {}
    for t in md.topics:
        if t.error_code.value == 0:
            out[t.name] = [{"partition": p.partition_index, "leader": p.leader_id, "replicas": list(p.replica_nodes),
                            "isr": list(p.isr_nodes)} for p in sorted(t.partitions, key=lambda p: p.partition_index)]
    return out


def every_broker_sees(c: Cluster, topics: list[str], ok, all_topics: bool = False) -> bool:
    """Every broker is live, its Metadata names each of `topics` and `ok(partition)` holds for each
    of their partitions (with `all_topics`, for each partition of every topic it lists, internal
    ones included): a broker still loading its state after a restart answers with no topic or
    leader -1, which must not pass for a healthy cluster."""
    nodes = live(c)
    if len(nodes) < len(c.brokers):
        return False
    for node in nodes:
        md = metadata(c, node, None if all_topics else topics)
        if any(t not in md or not md[t] for t in topics):
            return False
        if not all(ok(p) for parts in md.values() for p in parts):
            return False
    return True


def retrying(fn, timeout: float = 30.0):
    """fn() once it stops raising (a leader moving, a broker restarting), else its last error."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:  # retried until the deadline, then raised
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def led(p: dict) -> bool:
    return p["leader"] > 0 and len(p["isr"]) >= 2


def full(p: dict) -> bool:
    return p["leader"] > 0 and len(p["isr"]) == len(p["replicas"])


def leader(c: Cluster, topic: str, part: int) -> int:
    """The partition's leader as the first live broker that knows the topic says (-1: none)."""
    for node in live(c):
        try:
            parts = metadata(c, node, [topic]).get(topic)
        except Exception:  # noqa: BLE001 - a broker restarting: ask the next
            continue
        if parts:
            return parts[part]["leader"]
    return -1


def list_offsets(c: Cluster, topic: str, part: int, isolation: int) -> int:
    """The end offset from the partition's leader: the HW (isolation 0) or the LSO (1)."""
    node = leader(c, topic, part)
    with KafkaClient(c.brokers[node].bootstrap, timeout=10) as client:
        r = client.request(2, {"replica_id": -1, "isolation_level": isolation, "topics": [
            {"name": topic, "partitions": [{"partition_index": part, "current_leader_epoch": -1, "timestamp": -1}]}]},
            version=5)
    pr = r.topics[0].partitions[0]
    assert pr.error_code.value == 0, pr
    return int(pr.offset)


def read_log(c: Cluster, topic: str, isolation: str) -> tuple[dict[int, list[tuple[int, str]]], dict[int, int]]:
    """Every record of every partition up to its end (HW, or LSO under read_committed): (records,
    ends). The read ends at each partition's EOF at or past the end, so that trailing control
    batches (transaction markers, never delivered) do not keep it waiting."""
    ends = {p: retrying(lambda p=p: list_offsets(c, topic, p, 1 if isolation == "read_committed" else 0))
            for p in range(PARTITIONS)}
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"f-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True})
    out: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    eof: dict[int, int] = {}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 180
        while any(eof.get(p, -1) < ends[p] for p in ends) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof[m.partition()] = m.offset()
                continue
            out[m.partition()].append((m.offset(), m.value().decode()))
        assert all(eof.get(p, -1) >= ends[p] for p in ends), f"final read of {topic} incomplete: {eof} of {ends}"
    finally:
        consumer.close()
    return out, ends


# -- the nemesis --------------------------------------------------------------------------------------

@dataclass
class Fault:
    n: int
    kind: str
    start: float  # seconds since the run began
    wall: str  # local time of the start, as in the brokers' logs
    end: float = 0.0
    victims: list[int] = field(default_factory=list)
    partition: int | None = None
    note: str = ""

    def __str__(self) -> str:
        where = f" leader of p{self.partition}" if self.partition is not None and self.victims else ""
        who = f" broker {','.join(map(str, self.victims))}{where}" if self.victims else ""
        return (f"#{self.n} {self.kind}{who} at {self.start:.1f}-{self.end:.1f} s ({self.wall})"
                + (f": {self.note}" if self.note else ""))


class Nemesis:
    def __init__(self, c: Cluster, topics: list[str], seed: int, kinds: tuple[str, ...], t0: float) -> None:
        self.c, self.topics, self.t0 = c, topics, t0
        self.rnd = random.Random(seed)
        self.kinds = kinds
        self.deck: list[str] = []
        self.faults: list[Fault] = []
        self.stalls: list[str] = []  # the cluster not back to health (liveness), with the fault before
        self.session_s = int(c.broker_overrides(1)["broker.session.timeout.ms"]) / 1000
        self.etcd_paused = False
        self._by_offset: dict[int, dict[tuple[int, int], list[float]]] = {}  # culprit(): History -> acks by offset

    def now(self) -> float:
        return time.monotonic() - self.t0

    def pick(self) -> str:
        if not self.deck:
            self.deck = list(self.kinds)
            self.rnd.shuffle(self.deck)
        return self.deck.pop()

    def wait_healthy(self, cond, timeout: float, what: str) -> bool:
        try:
            wait_for(lambda: every_broker_sees(self.c, self.topics, cond, all_topics=cond is full), timeout, what)
            return True
        except AssertionError:
            last = self.faults[-1] if self.faults else None
            self.stalls.append(f"at {self.now():.1f} s, not {what} within {timeout:.0f} s (after {last})")
            return False

    def run(self, seconds: float, every: float, stop: threading.Event) -> None:
        k = 0
        while not stop.is_set():
            at = 2.0 + k * every
            if at >= seconds or self.now() >= seconds:  # slow heals do not stretch the run
                break
            if stop.wait(max(0.0, at - self.now())):
                break
            self.wait_healthy(led, HEAL_S, "every partition led with ISR >= 2 on every broker")
            self.inject(self.pick())
            k += 1

    def inject(self, kind: str) -> None:
        c, rnd = self.c, self.rnd
        part = rnd.randrange(PARTITIONS)
        pause = rnd.uniform(0.3, 1.5)
        if kind == "disk-loss" and not self.wait_healthy(full, HEAL_S, "every partition of every topic in full ISR"):
            kind = "leader-kill"  # a second failure otherwise: a plain kill instead
        f = Fault(len(self.faults) + 1, kind, self.now(), time.strftime("%H:%M:%S"), partition=part)
        self.faults.append(f)
        victim = leader(c, self.topics[0], part)
        if victim <= 0:
            victim = rnd.choice(sorted(c.brokers))
            f.note = "no leader known: a random broker; "
        b = c.brokers[victim]
        if kind == "leader-kill":
            f.victims = [victim]
            b.kill()
            t = time.monotonic()
            try:
                wait_for(lambda: leader(c, self.topics[0], part) not in (victim, -1), 30, "a new leader")
                f.note += f"new leader after {time.monotonic() - t:.1f} s; "
            except AssertionError:
                f.note += "no new leader within 30 s; "
            time.sleep(pause)
            b.start()
        elif kind == "zombie":
            f.victims = [victim]
            c.pause(victim)
            t = time.monotonic()
            try:  # paused until the others elected a new leader: past its session
                wait_for(lambda: leader(c, self.topics[0], part) not in (victim, -1), 60, "a new leader")
                time.sleep(pause)
            except AssertionError:
                f.note += "no new leader within 60 s; "
            f.note += f"paused {time.monotonic() - t:.1f} s (session {self.session_s:.0f} s); "
            c.resume(victim)
        elif kind == "two-kill":
            pair = rnd.sample(sorted(c.brokers), 2)
            f.victims = pair
            f.partition = None
            for v in pair:
                c.brokers[v].kill()
            time.sleep(rnd.uniform(0.5, 3.0))
            for v in pair:
                c.brokers[v].start()
        elif kind == "sigterm":
            f.victims = [victim]
            t = time.monotonic()
            rc = b.stop()  # SIGTERM, SIGKILL after 20 s
            f.note += f"exit {rc} after {time.monotonic() - t:.1f} s; "
            time.sleep(pause)
            b.start()
        elif kind == "disk-loss":
            f.victims = [victim]
            b.kill()
            b.wipe()
            time.sleep(pause)
            b.start()
            f.note += f"restarted empty after {pause:.1f} s; "
        elif kind == "etcd-kill":
            f.victims, f.partition = [], None
            c.etcd.kill()
            time.sleep(rnd.uniform(0.5, 3.0))
            c.etcd.start(30)
        elif kind == "etcd-pause":
            f.victims, f.partition = [], None
            c.etcd.pause()
            self.etcd_paused = True
            time.sleep(self.session_s + rnd.uniform(0.5, 2.0))  # the fault is the pause: past every session
            c.etcd.resume()
            self.etcd_paused = False
        else:
            raise ValueError(kind)
        f.end = self.now()
        print(f"nemesis: {f}", flush=True)

    def heal(self) -> None:
        if self.etcd_paused:
            self.c.etcd.resume()
        if not self.c.etcd.running:
            self.c.etcd.start(30)
        for node in list(self.c.paused):
            self.c.resume(node)
        for b in self.c.brokers.values():
            if not b.running:
                b.start()

    def culprit(self, h: History, v: object) -> str:
        """The faults that may have undone the acknowledged write `v`: those under way between its
        acknowledgement and the first acknowledgement of another value at its offset (the
        overwrite), else every fault after its acknowledgement (its record vanished without being
        overwritten)."""
        if v not in h.acks or v not in h.ack_times:
            return "not acknowledged"
        if id(h) not in self._by_offset:
            index: dict[tuple[int, int], list[float]] = collections.defaultdict(list)
            for w, at in h.acks.items():
                index[at].append(h.ack_times[w])
            self._by_offset[id(h)] = index
        t = h.ack_times[v] - self.t0
        over = [u - self.t0 for u in self._by_offset[id(h)][h.acks[v]] if u - self.t0 > t]
        t_c = min(over) if over else float("inf")
        window = [f for f in self.faults if f.end >= t and f.start <= t_c]
        names = ", ".join(f"#{f.n} {f.kind}" for f in window) or "no fault"
        return f"{names} (overwritten)" if over else f"{names} (not overwritten)"

    def place(self, t: float | None) -> str:
        """Where a moment of the run lies among the faults."""
        if t is None:
            return "not acknowledged"
        t -= self.t0
        before = [f for f in self.faults if f.start <= t]
        if not before:
            return f"acked at {t:.1f} s, before any fault"
        f = before[-1]
        if t <= f.end:
            return f"acked at {t:.1f} s, during #{f.n} {f.kind}"
        return f"acked at {t:.1f} s, {t - f.end:.1f} s after #{f.n} {f.kind}"


def anomaly_values(h: History, cls: str, e: tuple) -> list:
    """The values an anomaly of the history checker is about (its example's shape per class)."""
    if cls in ("lost-write", "duplicate"):
        return [e[0]]
    if cls == "aborted-read":
        return [e[3]]
    if cls.startswith("txn-"):
        return list(e[3])
    if cls == "inconsistent-offsets":
        named = [v for v in e[2] if v in h.sent_by]
        return sorted(named, key=lambda v: h.ack_times.get(v, float("inf")))
    if cls == "nonmonotonic-send":
        return [e[2][1], e[3][1]]
    return []


# -- reports ------------------------------------------------------------------------------------------

STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def broker_log_findings(c: Cluster) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """Per broker: its tracebacks (each with the log line before it) and its ERROR lines."""
    tracebacks: dict[int, list[str]] = {}
    errors: dict[int, list[str]] = {}
    for node, b in c.brokers.items():
        try:
            lines = b.log_path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        tbs, errs = [], []
        i = 0
        while i < len(lines):
            ln = lines[i]
            if " ERROR " in ln:
                errs.append(ln[:400])
            if ln.startswith("Traceback"):
                j = i + 1
                while j < len(lines) and not STAMP.match(lines[j]):
                    j += 1
                head = lines[i - 1][:300] if i else ""
                tbs.append("\n".join([head, *lines[i:j][-14:]]))
                i = j
                continue
            i += 1
        tracebacks[node], errors[node] = tbs, errs
    return tracebacks, errors


def distinct(blocks: list[str], limit: int) -> list[str]:
    """The first block of each kind (by its last line), at most `limit`, with their counts."""
    seen: dict[str, list] = {}
    for blk in blocks:
        key = blk.strip().splitlines()[-1] if blk.strip() else ""
        key = re.sub(r"\d+", "N", key)[:200]
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [blk, 1]
    return [f"({n}x) {blk}" for blk, n in list(seen.values())[:limit]]


def compare_replicas(c: Cluster, topic: str, settle: float) -> list[str]:
    """Differences between the replicas' batches below the HW, per partition ([] when identical),
    after waiting up to `settle` seconds for them to agree."""
    problems = []
    for p in range(PARTITIONS):
        hw = retrying(lambda p=p: list_offsets(c, topic, p, 0))

        def copies(p=p, hw=hw) -> dict[int, list[tuple[int, int, int, int]]]:
            return {n: [x[:3] for x in batches_upto(b.data_dir, topic, p, hw)] for n, b in c.brokers.items()
                    if b.data_dir.joinpath(f"{topic}-{p}").is_dir()}

        try:
            wait_for(lambda: len(set(map(tuple, copies().values()))) == 1 and len(copies()) == 3, settle,
                     f"{topic}-{p}: identical replicas")
        except AssertionError:
            pass
        got = copies()
        if len(got) != 3:
            problems.append(f"{topic}-{p}: {len(got)} replicas on disk ({sorted(got)})")
            continue
        first, ref = next(iter(got.items()))
        if hw > 0 and (not ref or ref[-1][1] != hw - 1):
            problems.append(f"{topic}-{p}: broker {first}'s batches end at {ref[-1:]} below the HW {hw}")
        for node, cp in got.items():
            if cp != ref:
                i = next((k for k, (a, b) in enumerate(zip(ref, cp)) if a != b), min(len(ref), len(cp)))
                problems.append(f"{topic}-{p} (HW {hw}): broker {node} differs from broker {first} at batch {i}: "
                                f"{cp[i:i + 2]} vs {ref[i:i + 2]} ({len(cp)} vs {len(ref)} batches)")
    return problems


def test_nemesis(cluster):
    c = cluster
    topic = replicated_topic(c, "nemesis")
    txn_topic = replicated_topic(c, "nemesis-txn")
    h, ht = History(), History()
    clients = Clients(c, topic, h, txn_topic, ht)
    t0 = time.monotonic()
    nemesis = Nemesis(c, [topic, txn_topic], SEED, FAULTS, t0)
    print(f"\nnemesis: seed {SEED}, {SECONDS:.0f} s, a fault every {EVERY:.0f} s of {', '.join(FAULTS)}; "
          f"data in {c.base}", flush=True)
    failed: list[str] = []  # each failed check, with its values
    clients.start()
    try:
        nemesis.run(SECONDS, EVERY, threading.Event())
    except Exception as e:  # noqa: BLE001 - a fault that could not be injected (a broker not restarting)
        failed.append(f"nemesis stopped at {nemesis.now():.1f} s: {e!r}"[:3000])
    finally:
        try:
            nemesis.heal()
        except Exception as e:  # noqa: BLE001 - the report says so; the checks below still run
            failed.append(f"healing: {e!r}"[:3000])
        try:
            wait_for(lambda: every_broker_sees(c, [topic, txn_topic], full, all_topics=True), 120,
                     "every partition of every topic in full ISR")
        except AssertionError as e:
            try:
                state = {n: [f"{t}-{p['partition']} leader {p['leader']} isr {p['isr']} of {p['replicas']}"
                             for t, parts in metadata(c, n, None).items() for p in parts if not full(p)]
                         for n in live(c)}
            except Exception as e2:  # noqa: BLE001 - the report says so
                state = repr(e2)
            failed.append(f"after healing: {e}; partitions not in full ISR per broker: {state}")
        healed = time.monotonic()
        try:
            clients.join()
        except AssertionError as e:
            failed.append(f"clients: {e}")
        stopped = {n: round(t - healed, 1) for n, t in clients.finished.items()}
    run_s = time.monotonic() - t0
    try:  # the transactional topic's last stable offset up to the HW: no transaction left open
        wait_for(lambda: all(list_offsets(c, txn_topic, p, 1) == list_offsets(c, txn_topic, p, 0)
                             for p in range(PARTITIONS)), 90, "LSO = HW on the transactional topic")
    except AssertionError as e:
        failed.append(str(e))
    for t, hist, isolation in ((topic, h, "read_uncommitted"), (txn_topic, ht, "read_committed")):
        try:  # also when healing failed: what the leaders serve now is what a consumer gets
            logs, _ends = read_log(c, t, isolation)
        except Exception as e:  # noqa: BLE001 - the report says so
            failed.append(f"final read of {t} ({isolation}): {e!r}")
            continue
        for p, recs in logs.items():
            hist.final(p, recs, read_committed=isolation == "read_committed", complete=True)
    found = {name: {k: v for k, v in hist.check().items() if v} for name, hist in (("data", h), ("txn", ht))}

    # -- the checks ------------------------------------------------------------------------------
    places: list[str] = []
    suspects: collections.Counter = collections.Counter()
    for name, hist in (("data", h), ("txn", ht)):
        for cls, examples in found[name].items():
            failed.append(f"{name} topic: {cls}: {len(examples)}, e.g. {examples[:5]}")
            for i, e in enumerate(examples):
                vals = anomaly_values(hist, cls, e)
                if cls in ("lost-write", "inconsistent-offsets", "txn-lost"):
                    suspects[(nemesis.culprit(hist, vals[0]) if vals else "?", f"{name} {cls}")] += 1
                if i < 5 and vals:
                    places.append(f"  {name} {cls} {vals[:3]}: "
                                  + "; ".join(f"{v} ({hist.producer_of(v)}) {nemesis.place(hist.ack_times.get(v))}"
                                              for v in vals[:3]))
    for name in Clients.IDEMPOTENT:
        acked = sum(1 for v in h.ack_producer.values() if v == name)
        if acked != len(h.sends[name]):
            failed.append(f"{name}: {acked} of {len(h.sends[name])} records acknowledged "
                          f"(errors {dict(clients.errors[name])})")
    if clients.fatal:
        failed.append(f"client errors: {clients.fatal[:8]}")
    if len(h.acks) < 1000 or clients.txn_outcomes["committed"] < 5:
        failed.append(f"too little load to judge: {len(h.acks)} records acknowledged, "
                      f"{clients.txn_outcomes['committed']} transactions committed")
    failed += [f"liveness: {s}" for s in nemesis.stalls]
    unhealed = any(f.startswith("after healing") for f in failed)
    for t in (topic, txn_topic):
        try:
            failed += [f"replicas: {d}" for d in compare_replicas(c, t, 0 if unhealed else 30)]
        except Exception as e:  # noqa: BLE001 - the report says so
            failed.append(f"replicas of {t} not compared: {e!r}")
    tracebacks, errors = broker_log_findings(c)
    for node, tbs in tracebacks.items():
        if tbs:
            failed.append(f"broker {node}: {len(tbs)} tracebacks in {c.brokers[node].log_path}")

    # -- the figures -----------------------------------------------------------------------------
    kinds = collections.Counter(f.kind for f in nemesis.faults)
    lines = [f"nemesis figures: seed {SEED}, {run_s:.0f} s, {len(nemesis.faults)} faults "
             f"({', '.join(f'{k} {kinds[k]}' for k in KINDS if kinds[k])})"]
    for hist, names in ((h, (*Clients.IDEMPOTENT, "non-idempotent")), (ht, ("txn",))):
        for name in names:
            acked = sum(1 for v in hist.ack_producer.values() if v == name)
            errs = dict(clients.errors.get(name, {}))
            lines.append(f"  {name}: {acked} acknowledged of {len(hist.sends[name])} sent"
                         + (f"; errors {errs}" if errs else ""))
    lines.append(f"  clients finished, seconds after the heal: {stopped}")
    lines.append(f"  transactions: {clients.txn_outcomes['committed']} committed, "
                 f"{clients.txn_outcomes['aborted']} aborted, {clients.txn_outcomes['unknown']} unknown")
    for name, hist in (("consumer", h), ("rc-consumer", ht)):
        lines.append(f"  {name}: {len(hist.polls[name])} polled"
                     + (f"; errors {dict(clients.errors[name])}" if clients.errors.get(name) else ""))
    for name, hist in (("data", h), ("txn", ht)):
        by = hist.by_client(found[name])
        lines.append(f"  anomalies ({name} topic): " + (", ".join(f"{k} {len(v)} {by.get(k, {})}"
                                                                   for k, v in found[name].items()) or "none"))
    lines.append(f"  broker logs: tracebacks {({n: len(v) for n, v in tracebacks.items()})}, "
                 f"ERROR lines {({n: len(v) for n, v in errors.items()})}")
    lines.append("fault history:")
    lines += [f"  {f}" for f in nemesis.faults]
    figures = "\n".join(lines)
    print(figures, flush=True)
    report = [figures]
    if failed:
        report += ["FAILED CHECKS:", *(f"- {f}" for f in failed)]
        if suspects:
            report.append("lost or overwritten acknowledged writes by the faults under way between their "
                          "acknowledgement and the first acknowledgement of another value at their offset:")
            report += [f"  {fault}: {cls} {n}" for (fault, cls), n in sorted(suspects.items())]
        if places:
            report += ["examples among the faults:", *places]
        for node in c.brokers:
            if tracebacks.get(node):
                report.append(f"==== broker {node} tracebacks (distinct):")
                report += distinct(tracebacks[node], 6)
            if errors.get(node):
                report.append(f"==== broker {node} ERROR lines ({len(errors[node])}, distinct):")
                report += distinct(errors[node], 12)
    text = "\n".join(report)
    out = Path(c.base) / "nemesis-report.txt"
    out.write_text(text + "\n")
    assert not failed, f"replay with TIDELOG_NEMESIS_SEED={SEED} (report: {out})\n{text}"
