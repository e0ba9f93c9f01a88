"""Stream processing frameworks with Avro values against tidelog and its registry: a Quix Streams
app (a State store, exactly once, also across a SIGKILL) and a faust-streaming worker (a Table, a
codec over confluent-kafka's Avro serde). Each app runs as a subprocess with the interpreter of
`stream_apps_env` (their packages conflict with the project's); the test produces the input and
reads the output back with the project's confluent-kafka and its Avro serde against the registry.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from stream_apps_env import stream_apps_python

pytestmark = pytest.mark.interop

APPS = Path(__file__).resolve().parent / "stream_apps"
PAYMENT = json.dumps(
    {
        "type": "record",
        "name": "Payment",
        "namespace": "tidelog.tests",
        "fields": [{"name": "account", "type": "string"}, {"name": "amount", "type": "long"}],
    }
)
# the results' schema, as the apps register it (stream_apps/quix_app.py, stream_apps/faust_app.py)
TOTAL_SCHEMA = {
    "type": "record",
    "name": "AccountTotal",
    "namespace": "tidelog.tests",
    "fields": [
        {"name": "account", "type": "string"},
        {"name": "count", "type": "long"},
        {"name": "total", "type": "long"},
    ],
}
ACCOUNTS = ("alice", "bob", "carol", "dave")


@pytest.fixture(scope="module")
def apps_python() -> Path:
    return stream_apps_python()


def wait_for(check, timeout: float, what: str, app: AppProcess | None = None):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if app is not None and app.proc.poll() is not None:
            raise AssertionError(f"{what}: the app exited with {app.proc.returncode}:\n{app.log()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s" + (f"\n{app.log()}" if app else ""))
        time.sleep(0.1)


class AppProcess:
    def __init__(self, argv: list[str], log_path: Path, cwd: Path) -> None:
        self.log_path = log_path
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the app did not stop within {timeout} s of signal {sig}:\n{self.log()}") from None


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def produce_payments(bootstrap: str, registry: SchemaRegistryClient, topic: str, payments: list[tuple[str, int]]):
    serialize = AvroSerializer(registry, PAYMENT)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for account, amount in payments:
        value = serialize({"account": account, "amount": amount}, SerializationContext(topic, MessageField.VALUE))
        p.produce(topic, key=account.encode(), value=value)
    assert p.flush(30) == 0


def payments_batch(n: int, start: int) -> list[tuple[str, int]]:
    return [(ACCOUNTS[i % len(ACCOUNTS)], i) for i in range(start, start + n)]


def expected_totals(payments: list[tuple[str, int]]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    running: dict[str, tuple[int, int]] = {}
    for account, amount in payments:
        count, total = running.get(account, (0, 0))
        running[account] = (count + 1, total + amount)
        out[account].append({"account": account, "count": count + 1, "total": total + amount})
    return dict(out)


class OutputReader:
    """Reads a topic from its start with the project's confluent-kafka and Avro deserializer."""

    def __init__(self, bootstrap: str, registry: SchemaRegistryClient, topic: str, committed: bool = True) -> None:
        self.topic = topic
        self.deserialize = AvroDeserializer(registry)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": uuid.uuid4().hex,
                "enable.auto.commit": False,
                "isolation.level": "read_committed" if committed else "read_uncommitted",
            }
        )
        md = self.consumer.list_topics(topic, timeout=30).topics[topic]
        assert md.error is None, md.error
        self.partitions = [TopicPartition(topic, p, 0) for p in sorted(md.partitions)]
        self.consumer.assign(self.partitions)
        self.records: list[tuple[str, dict]] = []

    def poll(self) -> int:
        """Whatever is readable now; the number of records read so far."""
        for msg in self.consumer.consume(500, 0.2):
            assert msg.error() is None, msg.error()
            value = self.deserialize(msg.value(), SerializationContext(self.topic, MessageField.VALUE))
            self.records.append((msg.key().decode(), value))
        return len(self.records)

    def read_to_end(self, timeout: float = 30.0) -> dict[str, list[dict]]:
        """Every record up to each partition's end (read_committed: the last stable offset)."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            ends = {p.partition: self.consumer.get_watermark_offsets(p, timeout=10)[1] for p in self.partitions}
            positions = {p.partition: p.offset for p in self.consumer.position(self.partitions)}
            if all(positions[p] >= end for p, end in ends.items() if end > 0):
                break
            assert time.monotonic() < deadline, f"{self.topic}: at {positions}, ends {ends}"
        by_key: dict[str, list[dict]] = defaultdict(list)
        for key, value in self.records:
            assert value["account"] == key
            by_key[key].append(value)
        return dict(by_key)

    def close(self) -> None:
        self.consumer.close()


def registry_get(url: str, path: str):
    with urllib.request.urlopen(url + path, timeout=10) as resp:
        return json.loads(resp.read())


def check_subjects(url: str, in_topic: str, out_topic: str, out_schema: dict) -> None:
    subjects = registry_get(url, "/subjects")
    assert f"{in_topic}-value" in subjects and f"{out_topic}-value" in subjects, subjects
    assert registry_get(url, f"/subjects/{in_topic}-value/versions") == [1]
    assert registry_get(url, f"/subjects/{out_topic}-value/versions") == [1]
    latest = registry_get(url, f"/subjects/{out_topic}-value/versions/latest")
    assert latest.get("schemaType", "AVRO") == "AVRO"
    assert json.loads(latest["schema"]) == out_schema
    assert json.loads(registry_get(url, f"/subjects/{in_topic}-value/versions/1")["schema"]) == json.loads(PAYMENT)


def start_quix(apps_python: Path, rb, in_topic: str, out_topic: str, tmp_path: Path) -> AppProcess:
    argv = [str(apps_python), str(APPS / "quix_app.py"), rb.bootstrap, rb.url, in_topic, out_topic]
    argv += [f"{in_topic}-app", str(tmp_path / "quix-state")]
    return AppProcess(argv, tmp_path / "quix-app.log", tmp_path)


def test_quix_streams_avro_running_totals_exactly_once_across_sigkill(apps_python, registry_broker, tmp_path):
    rb = registry_broker
    registry = SchemaRegistryClient({"url": rb.url})
    in_topic, out_topic = "qs-payments", "qs-totals"
    create_topic(rb.bootstrap, in_topic, 2)
    create_topic(rb.bootstrap, out_topic, 2)
    first, second = payments_batch(40, 0), payments_batch(400, 40)
    produce_payments(rb.bootstrap, registry, in_topic, first)

    committed = OutputReader(rb.bootstrap, registry, out_topic)
    uncommitted = OutputReader(rb.bootstrap, registry, out_topic, committed=False)
    app = start_quix(apps_python, rb, in_topic, out_topic, tmp_path)
    try:
        wait_for(lambda: committed.poll() >= len(first), 120, "the first batch's results", app)
        assert committed.read_to_end() == expected_totals(first)

        # The second batch, and a SIGKILL as soon as some of its results are in the log: with a
        # commit every 0.5 s that is almost always inside an open transaction, which the restarted
        # app (same transactional.id) aborts; its State is restored from the changelog topic.
        produce_payments(rb.bootstrap, registry, in_topic, second)
        wait_for(lambda: uncommitted.poll() > len(first), 60, "results of the second batch", app)
        app.stop(signal.SIGKILL)
        app = start_quix(apps_python, rb, in_topic, out_topic, tmp_path)
        wait_for(lambda: committed.poll() >= len(first) + len(second), 120, "every result after the restart", app)
        assert app.stop() == 0, app.log()
        assert committed.read_to_end() == expected_totals(first + second)
    finally:
        committed.close()
        uncommitted.close()
        app.stop(signal.SIGKILL)
    check_subjects(rb.url, in_topic, out_topic, TOTAL_SCHEMA)


def read_changelog(bootstrap: str, topic: str) -> dict[str, object]:
    """A faust Table's changelog (json keys and values): the last value of each key."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False})
    md = c.list_topics(topic, timeout=30).topics[topic]
    assert md.error is None, md.error
    parts = [TopicPartition(topic, p, 0) for p in sorted(md.partitions)]
    ends = {p.partition: c.get_watermark_offsets(p, timeout=10)[1] for p in parts}
    c.assign(parts)
    last: dict[str, object] = {}
    deadline = time.monotonic() + 30
    try:
        while any(p.offset < ends[p.partition] for p in c.position(parts) if ends[p.partition] > 0):
            assert time.monotonic() < deadline, f"{topic}: not read to {ends} within 30 s"
            for msg in c.consume(500, 0.2):
                assert msg.error() is None, msg.error()
                last[json.loads(msg.key())] = json.loads(msg.value())
    finally:
        c.close()
    return last


def test_faust_agent_with_avro_codec_and_table(apps_python, registry_broker, tmp_path):
    rb = registry_broker
    registry = SchemaRegistryClient({"url": rb.url})
    in_topic, out_topic, app_id = "faust-payments", "faust-totals", "faust-totals-app"
    create_topic(rb.bootstrap, in_topic, 2)
    create_topic(rb.bootstrap, out_topic, 2)
    payments = payments_batch(200, 0)
    produce_payments(rb.bootstrap, registry, in_topic, payments)

    out = OutputReader(rb.bootstrap, registry, out_topic)
    argv = [str(apps_python), str(APPS / "faust_app.py"), rb.bootstrap, rb.url, in_topic, out_topic, app_id]
    app = AppProcess(argv, tmp_path / "faust-app.log", tmp_path)
    try:
        wait_for(lambda: out.poll() >= len(payments), 120, "every result", app)
        assert app.stop() == 0, app.log()
        assert out.read_to_end() == expected_totals(payments)
    finally:
        out.close()
        app.stop(signal.SIGKILL)
    want = {account: [rows[-1]["count"], rows[-1]["total"]] for account, rows in expected_totals(payments).items()}
    assert read_changelog(rb.bootstrap, f"{app_id}-running-changelog") == want
    check_subjects(rb.url, in_topic, out_topic, TOTAL_SCHEMA)
