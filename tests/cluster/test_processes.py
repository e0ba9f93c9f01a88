"""`tidelog serve --processes 3` (issue 30): one command, three broker processes and their etcd,
as real processes, driven by real clients. Each process leads its share of a topic's partitions
and clients reach it directly (Metadata lists three brokers); a transaction and a consumer group
span processes; a SIGKILLed broker is restarted by the supervisor and no acknowledged acks=all
record is lost; SIGTERM stops every process and the command exits 0; a second start over the same
directory keeps the data. No fixed sleeps: every wait is for a condition, with a deadline."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.cli.client import KafkaClient

pytestmark = pytest.mark.timeout(300)
SRC = Path(__file__).resolve().parents[2] / "src"
PARTS = 6


def wait_for(cond, timeout: float, what: str, log=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{log()}")
        time.sleep(0.1)  # the poll interval of this wait


def free_ports(n: int) -> int:
    """A base port with the n ports from it free on loopback."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        try:
            for p in range(base, base + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise RuntimeError("no free port range")


class Served:
    """`tidelog serve --processes N` as a subprocess, its output in a file."""

    def __init__(self, data: Path, n: int = 3, *extra: str) -> None:
        self.data, self.n, self.extra = data, n, extra
        self.port = free_ports(n)
        self.log_path = data.parent / f"{data.name}-serve.log"
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.port + i}" for i in range(self.n))

    def command(self) -> list[str]:
        overrides = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data),
            "group.initial.rebalance.delay.ms": "0",
            "broker.session.timeout.ms": "3000",  # a killed broker's registration lapses sooner
        }
        argv = [sys.executable, "-m", "tidelog", "serve", "--processes", str(self.n)]
        return argv + [a for k, v in overrides.items() for a in ("--override", f"{k}={v}")] + list(self.extra)

    def start(self, ready: bool = True) -> Served:
        env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, env=env)
        if ready:
            wait_for(self.ready, 90, "three registered brokers and a controller", self.log)
        return self

    def ready(self) -> bool:
        assert self.proc is not None
        assert self.proc.poll() is None, f"serve exited with {self.proc.returncode}\n{self.log()}"
        try:
            for i in range(self.n):
                with KafkaClient(f"127.0.0.1:{self.port + i}", timeout=5) as client:
                    md = client.request(3, {"topics": [], "allow_auto_topic_creation": False}, version=9)
                if len(md.brokers) < self.n or md.controller_id < 0:
                    return False
            return True
        except (OSError, ConnectionError):
            return False

    def pid(self, name: str) -> int:
        return int((self.data / "run" / f"{name}.pid").read_text())

    def stop(self, timeout: float = 90) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"serve still running {timeout} s after SIGTERM\n{self.log()}") from None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if shutil.which("etcd") is None and not Path("/usr/bin/etcd").exists():
        pytest.fail("etcd is not installed (make test installs Debian's etcd-server)")
    s = Served(tmp_path_factory.mktemp("processes") / "data").start()
    try:
        yield s
    finally:
        s.stop()


def create_topic(s: Served, name: str, partitions: int = PARTS) -> str:
    admin = AdminClient({"bootstrap.servers": s.bootstrap})
    admin.create_topics([NewTopic(name, partitions)])[name].result(30)  # replication: the default, 1
    wait_for(lambda: len(leaders(s, name)) == partitions, 30, f"leaders of {name}")
    return name


def leaders(s: Served, topic: str) -> dict[int, int]:
    """partition -> leader, those with one, from the first process's Metadata."""
    with KafkaClient(f"127.0.0.1:{s.port}") as client:
        md = client.request(3, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}, version=9)
    return {p.partition_index: p.leader_id for t in md.topics for p in t.partitions if p.leader_id >= 0}


def coordinator(s: Served, key: str, key_type: int) -> int:
    found: list[int] = []

    def ask() -> bool:
        with KafkaClient(f"127.0.0.1:{s.port}") as client:
            r = client.request(10, {"key": key, "key_type": key_type}, version=1)
        if r.error_code.value == 0:
            found.append(int(r.node_id))
        return bool(found)

    wait_for(ask, 30, f"the coordinator of {key}")
    return found[0]


def end_offset(consumer: Consumer, topic: str, p: int) -> int:
    """The partition's end offset; asked again while its leader is still being chosen (right
    after a restart a broker may answer NOT_LEADER_FOR_PARTITION, which librdkafka does not retry
    for a watermark query)."""
    from confluent_kafka import KafkaError, KafkaException

    moving = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE}
    got: list[int] = []

    def ask() -> bool:
        try:
            got.append(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1])
        except KafkaException as e:
            if e.args[0].code() not in moving:
                raise
            return False
        return True

    wait_for(ask, 60, f"the end offset of {topic}-{p} from its leader")
    return got[0]


def read_all(s: Served, topic: str) -> list[bytes]:
    """Every record of the topic's partitions (up to their end offsets), confluent-kafka."""
    consumer = Consumer(
        {"bootstrap.servers": s.bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
    )
    try:
        ends = {p: end_offset(consumer, topic, p) for p in range(PARTS)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTS)])
        out: list[bytes] = []
        pos = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + 60
        while any(pos[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None or m.error():
                continue
            pos[m.partition()] = m.offset() + 1
            out.append(m.value())
        return out
    finally:
        consumer.close()


def test_three_processes_each_lead_a_share_of_the_partitions(served):
    with KafkaClient(f"127.0.0.1:{served.port + 1}") as client:  # any process answers for all
        md = client.request(3, {"topics": [], "allow_auto_topic_creation": False}, version=9)
    assert sorted((b.node_id, b.port) for b in md.brokers) == [(i + 1, served.port + i) for i in range(3)]
    topic = create_topic(served, "spread")
    assert set(leaders(served, topic).values()) == {1, 2, 3}
    assert sorted(p.name for p in served.data.iterdir()) == ["etcd", "node-1", "node-2", "node-3", "run"]
    for partition, leader in leaders(served, topic).items():  # each log in its leader's directory only
        assert [n for n in (1, 2, 3) if (served.data / f"node-{n}" / f"{topic}-{partition}").is_dir()] == [leader]


def _confluent(s: Served, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": s.bootstrap, "acks": "all"})
    for i, v in enumerate(values):
        p.produce(topic, v, key=f"k{i}".encode())
    assert p.flush(60) == 0


def _kafka_python(s: Served, topic: str, values: list[bytes]) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=s.bootstrap.split(","), acks="all")
    for i, v in enumerate(values):
        p.send(topic, v, key=f"k{i}".encode())
    p.flush(60)
    p.close()


def _aiokafka(s: Served, topic: str, values: list[bytes]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=s.bootstrap, acks="all")
        await p.start()
        try:
            for i, v in enumerate(values):
                await p.send_and_wait(topic, v, key=f"k{i}".encode())
        finally:
            await p.stop()

    asyncio.run(run())


def test_four_clients_produce_and_consume_across_processes(served, tmp_path):
    topic = create_topic(served, "clients")
    sent: dict[str, list[bytes]] = {}
    for name, produce in (("confluent", _confluent), ("kafka-python", _kafka_python), ("aiokafka", _aiokafka)):
        sent[name] = [f"{name}-{i}".encode() for i in range(30)]
        produce(served, topic, sent[name])
    kcat = shutil.which("kcat") or "/usr/bin/kcat"
    if os.access(kcat, os.X_OK):
        sent["kcat"] = [f"kcat-{i}".encode() for i in range(30)]
        lines = b"".join(b"k%d:%s\n" % (i, v) for i, v in enumerate(sent["kcat"]))
        subprocess.run([kcat, "-b", served.bootstrap, "-t", topic, "-P", "-K:"], input=lines, check=True, timeout=60)
    want = sorted(v for vs in sent.values() for v in vs)
    assert sorted(read_all(served, topic)) == want  # confluent-kafka reads every one

    from kafka import KafkaConsumer

    kc = KafkaConsumer(topic, bootstrap_servers=served.bootstrap.split(","), auto_offset_reset="earliest")
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(want) and time.monotonic() < deadline:
        for records in kc.poll(timeout_ms=500).values():
            got += [r.value for r in records]
    kc.close()
    assert sorted(got) == want

    from aiokafka import AIOKafkaConsumer

    async def aio_read() -> list[bytes]:
        c = AIOKafkaConsumer(topic, bootstrap_servers=served.bootstrap, auto_offset_reset="earliest")
        await c.start()
        out: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for m in c:
                    out.append(m.value)
                    if len(out) == len(want):
                        return out
        finally:
            await c.stop()
        return out

    assert sorted(asyncio.run(aio_read())) == want
    if "kcat" in sent:
        r = subprocess.run(
            [kcat, "-b", served.bootstrap, "-t", topic, "-C", "-o", "beginning", "-e", "-f", "%s\n"],
            capture_output=True,
            check=True,
            timeout=60,
        )
        assert sorted(r.stdout.splitlines()) == want


def test_a_transaction_and_a_group_span_processes(served):
    topic = create_topic(served, "txn")
    txn_id = "tx-processes"
    p = Producer({"bootstrap.servers": served.bootstrap, "transactional.id": txn_id})
    p.init_transactions(30)
    tx_coordinator = coordinator(served, txn_id, 1)
    assert set(leaders(served, topic).values()) - {tx_coordinator}, "every partition on the coordinator"
    p.begin_transaction()
    for i in range(60):
        p.produce(topic, f"committed-{i}".encode(), partition=i % PARTS)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(12):
        p.produce(topic, f"aborted-{i}".encode(), partition=i % PARTS)
    p.abort_transaction(30)
    assert p.flush(10) == 0

    group = "g-processes"
    consumer = Consumer(
        {
            "bootstrap.servers": served.bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 90
        while len(got) < 60 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, i) for i in range(PARTS)], timeout=30)
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"committed-{i}".encode() for i in range(60))
    group_coordinator = coordinator(served, group, 0)
    assert set(leaders(served, topic).values()) - {group_coordinator}
    assert all(tp.offset >= 10 for tp in committed), committed  # past each partition's 10 records


def test_a_killed_broker_is_restarted_and_no_acked_record_is_lost(served):
    topic = create_topic(served, "durable")
    acked: list[bytes] = []

    def delivered(err, msg) -> None:
        if err is None:
            acked.append(msg.value())

    p = Producer({"bootstrap.servers": served.bootstrap, "acks": "all", "message.timeout.ms": 120000})
    for i in range(300):
        p.produce(topic, f"before-{i}".encode(), key=f"k{i}".encode(), on_delivery=delivered)
    assert p.flush(60) == 0 and len(acked) == 300
    victim = served.pid("node-2")
    os.kill(victim, signal.SIGKILL)
    for i in range(300):  # those to node 2's partitions wait for its return
        p.produce(topic, f"after-{i}".encode(), key=f"k{i}".encode(), on_delivery=delivered)
        p.poll(0)
    wait_for(lambda: f"node 2 (pid {victim}) exited" in served.log(), 30, "the supervisor to see the kill", served.log)
    wait_for(lambda: served.pid("node-2") != victim, 30, "node 2 restarted", served.log)
    assert p.flush(150) == 0
    assert len(acked) == 600
    wait_for(served.ready, 60, "three brokers again", served.log)
    assert sorted(read_all(served, topic)) == sorted(acked)


def test_sigterm_stops_every_process_and_a_restart_keeps_the_data(served):
    before = sorted(read_all(served, "durable"))
    pids = [served.pid(n) for n in ("node-1", "node-2", "node-3", "etcd")]
    ports = (served.data / "etcd" / "ports").read_text()
    assert served.stop() == 0, served.log()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not list((served.data / "run").glob("*.pid"))
    served.start()  # the same command over the same directory
    assert (served.data / "etcd" / "ports").read_text() == ports
    assert sorted(read_all(served, "durable")) == before
    assert set(leaders(served, "durable").values()) == {1, 2, 3}


def test_without_etcd_the_command_exits_non_zero(tmp_path):
    s = Served(tmp_path / "data", 2, "--override", "process.etcd.path=/bin/false")
    s.start(ready=False)
    assert s.proc is not None
    assert s.proc.wait(60) == 1, s.log()
    assert "etcd exited with 1 at start" in s.log()
