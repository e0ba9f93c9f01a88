"""Share groups (KIP-932) on one etcd and three brokers, with real clients: librdkafka's
ShareConsumer (confluent-kafka) and Kafka 4.3.1's KafkaShareConsumer.

- Two share consumers read a queue (3 partitions, replication factor 3, min ISR 2) while, in
  turn, the broker coordinating their group, the leader of a data partition, and the share
  coordinator of the group's state (the leader of a `__share_group_state` partition) are killed
  with SIGKILL and restarted. Every record is delivered; none of the records the consumers had
  accepted before a failure is delivered again after it (a record may come again only when it
  was in flight - acquired, its acceptance not yet written - at the failure).
- Kafka's KafkaShareConsumer and the AdminClient's share calls pass the same checks on the
  cluster as on a single node (java/clients/ShareChecks.java).
- Kafka's KafkaShareConsumer, and its KafkaConsumer with group.protocol=consumer (KIP-848), read
  every record while the broker coordinating their group is killed and restarted.
- FindCoordinator names a share partition's share coordinator; kafka-share-groups.sh describes,
  rewinds and deletes a queue's offsets through the cluster.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from cluster_process import Cluster
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from test_cluster_transactions import coordinator_of
from test_coordinators import replicated_topics
from test_replication import describe, iter_live, wait_for

from tidelog.cli.client import KafkaClient
from tidelog.share.state_store import coordinator_partition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kafka_ref"))
from test_java_client import java_checks, java_classes  # noqa: F401 - fixtures (compiled once per session)
from test_kafka_tools import SHARE_GROUPS, tool  # noqa: F401 - the fixture running Kafka's tools

pytestmark = pytest.mark.timeout(600, method="thread")
CLUSTER_OVERRIDES = {
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.record.lock.duration.ms": "1000",
    "share.coordinator.state.topic.num.partitions": "3",
}
PARTITIONS = 3


def group_config(c: Cluster, group: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    entries = [
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
    ]
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([res])[res].result(30)


def share_coordinator_of(c: Cluster, group: str, topic: str, partition: int) -> int:
    """The leader of the `__share_group_state` partition that keeps this share partition."""
    with KafkaClient(next(iter_live(c)).bootstrap) as client:
        md = client.request(3, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}, version=10)
    topic_id = md.topics[0].topic_id
    p = coordinator_partition((group, topic_id, partition), 3)
    return int(describe(c, "__share_group_state")[p]["leader"])


def lags(c: Cluster, group: str, topic: str) -> list[int] | None:
    """Each partition's lag as the group's coordinator answers DescribeShareGroupOffsets."""
    try:
        coord = coordinator_of(c, group, key_type=0)
        with KafkaClient(c.brokers[coord].bootstrap) as client:
            r = client.request(
                90,
                {
                    "groups": [
                        {"group_id": group, "topics": [{"topic_name": topic, "partitions": list(range(PARTITIONS))}]}
                    ]
                },
                version=1,
            )
    except OSError:
        return None
    g = r.groups[0]
    if g.error_code.value:
        return None
    return [int(p.lag) for t in g.topics for p in t.partitions]


def test_a_queue_survives_the_failure_of_each_broker_it_depends_on(cluster):
    c = cluster
    topic, group = f"sq-{uuid.uuid4().hex[:6]}", f"sqg-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, topic, partitions=PARTITIONS)
    group_config(c, group, share_auto_offset_reset="earliest")
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True})

    def produce(start: int, n: int) -> None:
        for i in range(start, start + n):
            producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
        assert producer.flush(60) == 0

    lock = threading.Lock()
    deliveries: list[tuple[str, float]] = []  # (value, when): every delivery, in order
    stop = threading.Event()

    def consume() -> None:
        k = ShareConsumer({"bootstrap.servers": c.bootstrap, "group.id": group})
        k.subscribe([topic])
        while not stop.is_set():
            for m in k.poll(0.2):
                if not m.error():
                    with lock:
                        deliveries.append((m.value().decode(), time.monotonic()))
        k.close()

    def seen() -> set[str]:
        with lock:
            return {v for v, _ in deliveries}

    threads = [threading.Thread(target=consume, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    victims: list[tuple[str, int]] = []
    total = 0
    try:
        for kind in ("group coordinator", "data leader", "share coordinator"):
            produce(total, 150)
            total += 150
            wait_for(lambda n=total: len(seen()) >= n, 120, f"records up to {total}")
            # every record delivered so far accepted, and the acceptance written: lag 0 everywhere
            wait_for(lambda: lags(c, group, topic) == [0] * PARTITIONS, 60, "the consumers' acceptances written")
            done, at = seen(), time.monotonic()
            if kind == "group coordinator":
                victim = coordinator_of(c, group, key_type=0)
            elif kind == "data leader":
                victim = int(describe(c, topic)[0]["leader"])
            else:
                victim = share_coordinator_of(c, group, topic, 0)
            victims.append((kind, victim))
            c.brokers[victim].kill()
            produce(total, 150)
            total += 150
            wait_for(lambda n=total: len(seen()) >= n, 120, f"every record with the {kind} ({victim}) dead")
            with lock:
                again = {v for v, when in deliveries if when > at and v in done}
            assert not again, f"accepted before the {kind} failed, delivered again: {sorted(again, key=int)[:20]}"
            c.brokers[victim].start()
            wait_for(lambda: all(len(p["isr"]) == 3 for p in describe(c, topic)), 60, f"broker {victim} back in sync")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert all(v > 0 for _, v in victims) and len(victims) == 3, victims
    assert seen() == {str(i) for i in range(total)}, victims


def test_kafka_share_consumer_and_admin_on_a_cluster(cluster, java_checks):  # noqa: F811 - the fixture
    """The single node's KafkaShareConsumer checks, on the cluster (topics of replication factor 3)."""
    r = java_checks(cluster.bootstrap, "share", "3")
    assert r["explicit_first"] == 10 and r["redelivered"] == "x3" and r["redelivery_count"] == 2
    assert (r["start_offset"], r["lag"]) == (10, 0)
    assert r["held"] == 5 and r["lock_redelivered"] == 5 and r["lock_delivery_count"] == 2
    assert r["several_distinct"] == 200 and r["several_duplicates"] == 0
    assert (r["altered_start"], r["altered_lag"]) == (4, 6)
    assert r["after_rewind"] == "x4,x5,x6,x7,x8,x9" and r["after_delete"] == 0


def test_find_coordinator_names_the_share_coordinator(cluster):
    """FindCoordinator v6, key type 2 ("<group>:<topic id>:<partition>", asked by brokers): the
    leader of the key's `__share_group_state` partition (created on first use)."""
    from tidelog.share.state_store import kafka_uuid

    c = cluster
    topic = f"fc-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, topic, partitions=1)
    with KafkaClient(next(iter_live(c)).bootstrap) as client:
        md = client.request(3, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}, version=10)
        topic_id = md.topics[0].topic_id
        key = f"g:{kafka_uuid(topic_id)}:0"
        found: list[int] = []

        def ask() -> bool:
            r = client.request(10, {"key_type": 2, "coordinator_keys": [key]}, version=6)
            if r.coordinators[0].error_code.value == 0:
                found.append(int(r.coordinators[0].node_id))
            return bool(found)

        wait_for(ask, 30, "a share coordinator")
    p = coordinator_partition(("g", topic_id, 0), 3)
    assert found[0] == int(describe(c, "__share_group_state")[p]["leader"])


@pytest.mark.parametrize("kind", ["share", "consumer"])
def test_java_consumers_carry_on_when_the_group_coordinator_is_killed(cluster, java_classes, kind):  # noqa: F811
    """Kafka's KafkaShareConsumer, and KafkaConsumer with group.protocol=consumer (KIP-848), read
    a topic while the broker coordinating their group is killed (SIGKILL) and later restarted:
    every record is read (the share group: each once at least; nothing is lost)."""
    import subprocess

    c = cluster
    topic, group = f"jq-{uuid.uuid4().hex[:6]}", f"jqg-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, topic, partitions=PARTITIONS)
    if kind == "share":
        group_config(c, group, share_auto_offset_reset="earliest")
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True})

    def produce(start: int, n: int) -> None:
        for i in range(start, start + n):
            producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
        assert producer.flush(60) == 0

    produce(0, 300)
    proc = subprocess.Popen(
        [*java_classes, c.bootstrap, f"{kind}-run", "x", topic, group, "600"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    progress: list[int] = []
    lines: list[str] = []

    def follow() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("seen "):
                progress.append(int(line.split()[1]))

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    try:
        wait_for(lambda: progress and progress[-1] >= 250, 120, "the first records read")
        victim = coordinator_of(c, group, key_type=0)
        c.brokers[victim].kill()
        produce(300, 150)
        wait_for(lambda: progress and progress[-1] >= 400, 120, f"records read with the coordinator {victim} dead")
        c.brokers[victim].start()
        produce(450, 150)
        assert proc.wait(240) == 0, proc.stderr.read()[-4000:] if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    result = [line for line in lines if line.startswith("{")]
    assert result, "".join(lines)[-2000:]
    assert '"distinct": 600' in result[-1], result[-1]


def test_kafka_share_groups_tool_on_a_cluster(cluster, tool):  # noqa: F811 - the fixture
    """kafka-share-groups.sh against three brokers (its AdminClient finds the coordinator): a
    queue read by the console share consumer, described, rewound to the earliest offset, read
    again, its offsets deleted."""
    c = cluster
    b = c.bootstrap
    topic, group = f"tq-{uuid.uuid4().hex[:6]}", f"tqg-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, topic, partitions=1)
    group_config(c, group, share_auto_offset_reset="earliest")
    producer = Producer({"bootstrap.servers": b, "acks": "all"})
    for v in "abc":
        producer.produce(topic, v.encode())
    assert producer.flush(30) == 0

    def ok(r) -> str:
        assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        return r.stdout

    def read(n: int) -> list[str]:
        out = ok(tool("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", b,
                      "--topic", topic, "--group", group, "--max-messages", str(n)))  # fmt: skip
        return sorted(out.split())

    def described() -> list[list[str]]:
        out = ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--describe", "--group", group))
        return [line.split() for line in out.splitlines() if line.startswith(f"{group} ")]

    assert read(3) == ["a", "b", "c"]
    assert [r[1:] for r in described()] == [[topic, "0", "3", "0"]]
    ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--reset-offsets", "--group", group, "--topic", topic,
            "--to-earliest", "--execute"))  # fmt: skip
    assert [r[1:] for r in described()] == [[topic, "0", "0", "3"]]
    assert read(3) == ["a", "b", "c"]
    ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--delete-offsets", "--group", group, "--topic", topic))
    assert described() == []
