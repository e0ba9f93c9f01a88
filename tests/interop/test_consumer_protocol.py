"""Kafka 4's consumer group protocol (KIP-848) with librdkafka's `group.protocol=consumer`: members
share a topic's partitions and move them incrementally as members come and go (no partition owned
by two members at once), committed offsets and the group survive a broker restart, a static member
gets its partitions back, a regex subscription follows topics created later, and the AdminClient
lists and describes the group as a consumer group."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.interop

BROKER_OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "10000",
    "offsets.topic.num.partitions": "3",
}


@pytest.fixture
def broker(broker_factory):
    return broker_factory(BROKER_OVERRIDES)


def topic_with(broker, partitions: int, records: int, name: str | None = None) -> str:
    name = name or f"kip848-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(records):
        p.produce(name, f"{i}".encode(), partition=i % partitions)
    assert p.flush(20) == 0
    return name


def consumer(broker, group: str, **extra) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **extra,
        }
    )


def polling(consumers: list[Consumer], until: Callable[[], bool], timeout: float = 60, seen=None) -> None:
    """Poll every consumer in turn until `until()` holds (a heartbeat happens inside poll)."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "timed out"
        for c in consumers:
            m = c.poll(0.05)
            if m is not None and not m.error() and seen is not None:
                seen.append((c, m.partition(), m.offset()))


def owned(c: Consumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def test_members_share_the_partitions_and_move_them_incrementally(broker):
    topic = topic_with(broker, 6, 60)
    group = f"g-{uuid.uuid4().hex[:6]}"
    a = consumer(broker, group)
    a.subscribe([topic])
    polling([a], lambda: owned(a) == set(range(6)))
    b = consumer(broker, group)
    b.subscribe([topic])
    overlaps = []

    def shared() -> bool:
        if owned(a) & owned(b):
            overlaps.append((owned(a), owned(b)))
        return owned(a) | owned(b) == set(range(6)) and len(owned(a)) == len(owned(b)) == 3

    polling([a, b], shared)
    assert not overlaps, overlaps  # a partition is never owned by two members at once
    a.close()
    polling([b], lambda: owned(b) == set(range(6)))
    b.close()


def test_committed_offsets_and_the_group_survive_a_restart(broker):
    topic = topic_with(broker, 2, 40)
    group = f"g-{uuid.uuid4().hex[:6]}"
    c = consumer(broker, group)
    c.subscribe([topic])
    seen: list = []
    polling([c], lambda: len(seen) >= 20, seen=seen)
    c.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)])}
    c.close()
    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (desc,) = admin.describe_consumer_groups([group]).values()
    assert desc.result(20).type == ConsumerGroupType.CONSUMER
    again = consumer(broker, group)
    again.subscribe([topic])
    after: list = []
    start = {p: max(o, 0) for p, o in committed.items()}
    polling([again], lambda: len(after) >= 40 - sum(start.values()), seen=after)
    assert all(o >= start[p] for _c, p, o in after)  # nothing before the committed offsets again
    assert {(p, o) for _c, p, o in after} == {(p, o) for p in (0, 1) for o in range(start[p], 20)}
    again.close()


def test_a_static_member_gets_its_partitions_back(broker):
    topic = topic_with(broker, 4, 0)
    group = f"g-{uuid.uuid4().hex[:6]}"
    s1 = consumer(broker, group, **{"group.instance.id": "i1"})
    s2 = consumer(broker, group, **{"group.instance.id": "i2"})
    s1.subscribe([topic])
    s2.subscribe([topic])
    polling([s1, s2], lambda: len(owned(s1)) == 2 and len(owned(s2)) == 2)
    mine = owned(s1)
    s1.close()  # a static member leaves for now (epoch -2): its partitions wait for it
    back = consumer(broker, group, **{"group.instance.id": "i1"})
    back.subscribe([topic])
    polling([back, s2], lambda: owned(back) == mine)
    assert len(owned(s2)) == 2
    back.close()
    s2.close()


def test_a_regex_subscription_follows_topics_created_later(broker):
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    topic_with(broker, 1, 3, name=f"{prefix}-a")
    group = f"g-{uuid.uuid4().hex[:6]}"
    c = consumer(broker, group)
    c.subscribe([f"^{prefix}-.*"])
    polling([c], lambda: {tp.topic for tp in c.assignment()} == {f"{prefix}-a"})
    topic_with(broker, 2, 3, name=f"{prefix}-b")
    polling(
        [c], lambda: {(tp.topic, tp.partition) for tp in c.assignment()} >= {(f"{prefix}-b", 0), (f"{prefix}-b", 1)}
    )
    c.close()


def test_the_admin_client_lists_and_describes_consumer_groups(broker):
    topic = topic_with(broker, 3, 0)
    group = f"g-{uuid.uuid4().hex[:6]}"
    c = consumer(broker, group, **{"client.id": "kip848-client"})
    c.subscribe([topic])
    polling([c], lambda: owned(c) == {0, 1, 2})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(20)
    assert group in {g.group_id for g in listed.valid}
    assert all(g.type == ConsumerGroupType.CONSUMER for g in listed.valid)
    classic = admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(20)
    assert group not in {g.group_id for g in classic.valid}
    (future,) = admin.describe_consumer_groups([group]).values()
    d = future.result(20)
    assert d.type == ConsumerGroupType.CONSUMER and str(d.state).endswith("STABLE")
    (member,) = d.members
    assert member.client_id == "kip848-client"
    assert {tp.partition for tp in member.assignment.topic_partitions} == {0, 1, 2}
    c.close()
