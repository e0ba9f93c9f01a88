"""Online migration between the classic and the consumer group protocol (KIP-848), with
librdkafka: a consumer of `group.protocol=classic` reading a topic, a consumer of
`group.protocol=consumer` joining its group (the classic group becomes a consumer group that serves
the classic member), the broker restarted with the group mixed, the consumer-protocol member
leaving (the group becomes a classic group again), every record read and committed exactly once
throughout."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.interop

PARTITIONS = 4
BROKER_OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "10000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
}


@pytest.fixture
def broker(broker_factory):
    return broker_factory(BROKER_OVERRIDES)


class Reader:
    """One consumer and what it read; each record is committed right after it is read."""

    def __init__(self, broker, group: str, protocol: str, topic: str, seen: list[tuple[str, str]]) -> None:
        extra = {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 300} if protocol == "classic" else {}
        self.name = protocol
        self.seen = seen
        self.c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                **extra,
            }
        )
        # a rebalance callback: librdkafka revokes only inside poll(), after the last commit
        self.c.subscribe([topic], on_assign=lambda c, ps: None, on_revoke=lambda c, ps: None)

    def poll(self) -> None:
        m = self.c.poll(0.05)
        if m is None or m.error():
            return
        self.seen.append((self.name, m.value().decode()))
        deadline = time.monotonic() + 30
        while True:
            try:
                self.c.commit(message=m, asynchronous=False)
                return
            except KafkaException as e:  # the coordinator moving or loading (a restart): retried
                if not e.args[0].retriable() or time.monotonic() > deadline:
                    raise

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.c.assignment()}


def polling(readers: list[Reader], until: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "timed out"
        for r in readers:
            r.poll()


def group_type(broker, group: str) -> ConsumerGroupType:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (desc,) = admin.describe_consumer_groups([group]).values()
    return desc.result(20).type


def test_a_group_migrates_both_ways_while_its_consumers_read_every_record_once(broker):
    topic = f"mig-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(20)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    produced: list[str] = []

    def produce(n: int) -> None:
        for _ in range(n):
            v = str(len(produced))
            producer.produce(topic, v.encode(), partition=len(produced) % PARTITIONS)
            produced.append(v)
        assert producer.flush(20) == 0

    seen: list[tuple[str, str]] = []

    def read_all() -> bool:
        return len(seen) >= len(produced)

    produce(200)
    classic = Reader(broker, group, "classic", topic, seen)
    polling([classic], lambda: len(seen) >= 50 and classic.owned() == set(range(PARTITIONS)))
    assert group_type(broker, group) == ConsumerGroupType.CLASSIC

    # upgrade: a member of the consumer protocol joins the classic group with a member
    modern = Reader(broker, group, "consumer", topic, seen)
    polling(
        [classic, modern],
        lambda: classic.owned() and modern.owned() and classic.owned() | modern.owned() == set(range(PARTITIONS)),
    )
    assert group_type(broker, group) == ConsumerGroupType.CONSUMER
    produce(200)
    polling([classic, modern], lambda: len(seen) >= 300)

    # the broker restarts with the group mixed; both members go on from their committed offsets
    broker.restart()
    produce(200)
    polling([classic, modern], read_all)
    assert group_type(broker, group) == ConsumerGroupType.CONSUMER
    assert {who for who, _ in seen} == {"classic", "consumer"}

    # downgrade: the last member of the consumer protocol leaves
    modern.c.close()
    polling([classic], lambda: classic.owned() == set(range(PARTITIONS)))
    assert group_type(broker, group) == ConsumerGroupType.CLASSIC
    produce(100)
    polling([classic], read_all)
    classic.c.close()

    values = [v for _, v in seen]
    assert sorted(values, key=int) == produced  # every record exactly once
