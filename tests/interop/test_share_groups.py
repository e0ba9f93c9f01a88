"""Share groups (KIP-932, queues) with librdkafka's ShareConsumer (confluent-kafka 2.16): several
consumers share one partition and every record is delivered to one of them; explicit RELEASE
brings a record back with its delivery count, REJECT never; a consumer that dies holding records
loses them to another after the acquisition lock; accepted records stay accepted across a broker
restart; the group's configs are set with the AdminClient (GROUP resources) and the group is listed
as a share group."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from tidelog.cli.client import KafkaClient

pytestmark = pytest.mark.interop

BROKER_OVERRIDES = {
    "group.share.heartbeat.interval.ms": "300",
    "group.share.min.record.lock.duration.ms": "1000",  # tests use 2 s locks
    "offsets.topic.num.partitions": "3",
    "share.coordinator.state.topic.num.partitions": "3",
}


@pytest.fixture
def broker(broker_factory):
    return broker_factory(BROKER_OVERRIDES)


def setup(broker, records: int, partitions: int = 1, lock_ms: int | None = None) -> tuple[str, str]:
    topic, group = f"q-{uuid.uuid4().hex[:6]}", f"sg-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)
    entries = [ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)]
    if lock_ms is not None:
        entries.append(
            ConfigEntry("share.record.lock.duration.ms", str(lock_ms), incremental_operation=AlterConfigOpType.SET)
        )
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([res])[res].result(20)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(records):
        p.produce(topic, str(i).encode(), partition=i % partitions)
    assert p.flush(20) == 0
    return topic, group


def share_consumer(broker, group: str, **extra) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, **extra})


def test_consumers_share_one_partition_and_each_record_is_delivered_once(broker):
    topic, group = setup(broker, 300)
    consumers = [share_consumer(broker, group) for _ in range(3)]
    for c in consumers:
        c.subscribe([topic])
    got: dict[int, list[str]] = {i: [] for i in range(3)}
    deadline = time.monotonic() + 60
    while sum(len(v) for v in got.values()) < 300:
        assert time.monotonic() < deadline, {i: len(v) for i, v in got.items()}
        for i, c in enumerate(consumers):
            for m in c.poll(0.2):
                if not m.error():
                    got[i].append(m.value().decode())
    for c in consumers:
        c.close()
    everything = [v for vs in got.values() for v in vs]
    assert sorted(everything, key=int) == [str(i) for i in range(300)]  # each once (implicitly accepted)
    with KafkaClient(broker.bootstrap) as client:  # confluent-kafka's AdminClient has no share type yet
        listed = client.request(16, {"states_filter": [], "types_filter": ["share"]}, version=5)
    assert group in {g.group_id for g in listed.groups}


def test_release_redelivers_with_its_count_and_reject_never(broker):
    topic, group = setup(broker, 4)
    c = share_consumer(broker, group, **{"share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    deliveries: list[tuple[str, int]] = []
    deadline = time.monotonic() + 30
    while len(deliveries) < 5:
        assert time.monotonic() < deadline, deliveries
        for m in c.poll(0.5):
            if m.error():
                continue
            v = m.value().decode()
            deliveries.append((v, m.delivery_count()))
            first_time = sum(1 for d in deliveries if d[0] == v) == 1
            if v == "1" and first_time:
                c.acknowledge(m, AcknowledgeType.RELEASE)
            elif v == "2":
                c.acknowledge(m, AcknowledgeType.REJECT)
            else:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync()
    # nothing more comes: 2 was rejected, everything else accepted
    for _ in range(4):
        assert [m for m in c.poll(0.5) if not m.error()] == []
    c.close()
    assert sorted(deliveries) == [("0", 1), ("1", 1), ("1", 2), ("2", 1), ("3", 1)]


HOLDER = textwrap.dedent(
    """
    import sys, time
    from confluent_kafka import ShareConsumer
    bootstrap, group, topic = sys.argv[1:4]
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    while True:
        got = [m for m in c.poll(0.5) if not m.error()]
        if got:
            print(len(got), flush=True)
            time.sleep(3600)  # holds them, never acknowledges; killed
    """
)


def test_records_of_a_consumer_that_dies_go_to_another_after_the_lock(broker, tmp_path):
    topic, group = setup(broker, 3, lock_ms=2000)
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    holder = subprocess.Popen(
        [sys.executable, str(script), broker.bootstrap, group, topic], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert int(holder.stdout.readline()) >= 1  # it holds records now
    finally:
        holder.kill()
        holder.wait(10)
    c = share_consumer(broker, group)
    c.subscribe([topic])
    seen: dict[str, int] = {}
    deadline = time.monotonic() + 30
    while len(seen) < 3:
        assert time.monotonic() < deadline, seen
        for m in c.poll(0.5):
            if not m.error():
                seen[m.value().decode()] = m.delivery_count()
    c.close()
    assert set(seen) == {"0", "1", "2"} and max(seen.values()) == 2  # the held ones: a second delivery


def test_accepted_records_stay_accepted_across_a_restart(broker):
    topic, group = setup(broker, 10)
    c = share_consumer(broker, group, **{"share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    accepted: list[str] = []
    deadline = time.monotonic() + 30
    while len(accepted) < 10:
        assert time.monotonic() < deadline, accepted
        for m in c.poll(0.5):
            if not m.error():
                c.acknowledge(m, AcknowledgeType.ACCEPT)
                accepted.append(m.value().decode())
        c.commit_sync()
    c.close()
    broker.restart()
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce(topic, b"after")
    assert p.flush(20) == 0
    again = share_consumer(broker, group)
    again.subscribe([topic])
    later: list[str] = []
    deadline = time.monotonic() + 30
    while "after" not in later:
        assert time.monotonic() < deadline, later
        later += [m.value().decode() for m in again.poll(0.5) if not m.error()]
    again.close()
    assert later == ["after"]  # none of the accepted records came again
