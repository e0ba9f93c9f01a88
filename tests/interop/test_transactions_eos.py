"""Exactly once, end to end: consume-transform-produce loops with `send_offsets_to_transaction`
copy topic A to topic B while every 7th transaction is aborted and the broker is killed with
SIGKILL (in the middle of a transaction: after its records were written, before its offsets
and commit) and restarted. A read_committed consumer of B must see every record of A exactly
once, in order per partition, and nothing aborted; a read_uncommitted consumer sees the aborted
copies too.

Each client copies 100,000 records through three kill -9s (early, middle, late). About 35 s per
client here (2 cores); TIDELOG_EOS_PY_RECORDS lowers the count for the two Python clients.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
COORDINATOR_MOVING = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
)
ABORT_EVERY = 7
# records the kafka-python and aiokafka loops copy (TIDELOG_EOS_PY_RECORDS=10000 for a quicker run)
PY_RECORDS = int(os.environ.get("TIDELOG_EOS_PY_RECORDS", "100000"))
OVERRIDES = {
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "log.segment.bytes": str(1 << 20),  # several segments: producer snapshots at roll
}


def make_topics(broker, *names: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names]).values():
        f.result(30)


def fill(broker, topic: str, total: int) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 20})
    for i in range(total):
        while True:
            try:
                p.produce(topic, key=b"%d" % i, value=b"%d" % i, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(120) == 0


def read_all(broker, topic: str, isolation: str, expect: int | None, idle: float = 5.0) -> dict[int, list[int]]:
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    n, last = 0, time.monotonic()
    while time.monotonic() - last < idle and (expect is None or n < expect):
        for m in c.consume(1000, 0.5):
            if m.error():
                continue
            out[m.partition()].append(int(m.value()))
            n += 1
            last = time.monotonic()
    c.close()
    return out


def check_exactly_once(broker, dst: str, total: int) -> None:
    committed = read_all(broker, dst, "read_committed", total)
    for p, vals in committed.items():
        assert vals == sorted(vals), f"partition {p} out of order"
        assert all(v % PARTITIONS == p for v in vals)
    every = sorted(v for vals in committed.values() for v in vals)
    assert len(every) == total and every == list(range(total)), (
        f"{len(every)} records, {len(set(every))} distinct, expected {total}"
    )
    uncommitted = read_all(broker, dst, "read_uncommitted", None, idle=3.0)
    assert sum(len(v) for v in uncommitted.values()) > total  # the aborted copies are there


def kill_points(total: int, per_txn: int) -> set[int]:
    """Three transaction numbers spread over the copy (early, middle, late); never an aborted one."""
    n = max(total // per_txn, 12)
    points = {max(2, n * k // 5) for k in (1, 2, 4)}
    return {p + 1 if p % ABORT_EVERY == 0 else p for p in points}


class Killer:
    """kill -9 and restart the broker at chosen transaction numbers."""

    def __init__(self, broker, at: set[int]) -> None:
        self.broker = broker
        self.at = at
        self.kills = 0

    def maybe(self, txn_no: int) -> None:
        if txn_no in self.at:
            self.at.discard(txn_no)
            self.broker.kill()
            self.broker.start()
            self.kills += 1


# ---- confluent-kafka ---------------------------------------------------------------------------------


def copy_confluent(broker, src: str, dst: str, total: int, per_txn: int, killer: Killer) -> int:
    group, txn_id = f"copier-{uuid.uuid4().hex[:6]}", f"copier-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    # no re-bootstrap when the only broker is down: librdkafka 2.x then decommissions the broker its
    # group coordinator cache points at, and send_offsets_to_transaction waits for it forever
    conf = {
        "bootstrap.servers": broker.bootstrap,
        "transactional.id": txn_id,
        "linger.ms": 10,
        "metadata.recovery.strategy": "none",
    }
    producer = Producer(conf)
    producer.init_transactions(60)
    positions: dict[int, int] = {}

    def rewind() -> None:
        # librdkafka retries OffsetFetch on the broker it asked; when the group coordinator moved
        # it gives up with NOT_COORDINATOR (a retriable error): an application asks again
        deadline = time.monotonic() + 60
        while True:
            try:
                tps = consumer.committed([TopicPartition(src, p) for p in range(PARTITIONS)], timeout=60)
                break
            except KafkaException as e:
                if (
                    not e.args[0].retriable()
                    and e.args[0].code() not in COORDINATOR_MOVING
                    or time.monotonic() > deadline
                ):
                    raise
                time.sleep(0.2)
        positions.clear()
        positions.update({tp.partition: max(tp.offset, 0) for tp in tps})
        consumer.assign([TopicPartition(src, p, o) for p, o in positions.items()])

    rewind()
    txn_no = 0
    deadline = time.monotonic() + 60 + total / 200
    while sum(positions.values()) < total or txn_no == 0:
        assert time.monotonic() < deadline, f"copy stalled at {positions}"
        msgs = [m for m in consumer.consume(per_txn, 1.0) if not m.error()]
        if not msgs:
            continue
        txn_no += 1
        try:
            producer.begin_transaction()
            for m in msgs:
                producer.produce(dst, key=m.key(), value=m.value(), partition=m.partition())
                positions[m.partition()] = m.offset() + 1
            producer.flush(60)
            killer.maybe(txn_no)
            producer.send_offsets_to_transaction(
                [TopicPartition(src, p, o) for p, o in positions.items()], consumer.consumer_group_metadata(), 60
            )
            if txn_no % ABORT_EVERY == 0:
                producer.abort_transaction(60)
                rewind()
                continue
            producer.commit_transaction(60)
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                producer.abort_transaction(60)
            elif not err.retriable():  # fatal: a new instance fences this one and aborts its transaction
                producer = Producer(conf)
                producer.init_transactions(60)
            rewind()
    consumer.close()
    return txn_no


def copy_through_three_kills(broker_factory, total: int, copy) -> int:
    """Fill a source topic with `total` records, run `copy(broker, src, dst, total, 500, killer)`
    while the broker is killed three times, then check the destination; returns the txn count."""
    broker = broker_factory(OVERRIDES)
    src, dst = f"eos-a-{uuid.uuid4().hex[:6]}", f"eos-b-{uuid.uuid4().hex[:6]}"
    make_topics(broker, src, dst)
    fill(broker, src, total)
    killer = Killer(broker, kill_points(total, 500))
    txns = copy(broker, src, dst, total, 500, killer)
    assert killer.kills == 3
    check_exactly_once(broker, dst, total)
    return txns


def test_confluent_consume_transform_produce_exactly_once_through_three_kills(broker_factory):
    assert copy_through_three_kills(broker_factory, 100_000, copy_confluent) > 200


# ---- kafka-python ------------------------------------------------------------------------------------


def copy_kafka_python(broker, src: str, dst: str, total: int, per_txn: int, killer: Killer) -> int:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    group, txn_id = f"kp-{uuid.uuid4().hex[:6]}", f"kp-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    tps = [KTP(src, p) for p in range(PARTITIONS)]
    consumer.assign(tps)

    def new_producer():
        p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=txn_id, linger_ms=10)
        p.init_transactions()
        return p

    producer = new_producer()
    positions: dict[int, int] = {}

    def rewind() -> None:
        positions.clear()
        for tp in tps:
            off = consumer.committed(tp) or 0
            positions[tp.partition] = off
            consumer.seek(tp, off)

    rewind()
    txn_no = 0
    deadline = time.monotonic() + 60 + total / 200
    while sum(positions.values()) < total:
        assert time.monotonic() < deadline, f"copy stalled at {positions}"
        polled = consumer.poll(timeout_ms=1000, max_records=per_txn)
        msgs = [m for batch in polled.values() for m in batch]
        if not msgs:
            continue
        txn_no += 1
        try:
            producer.begin_transaction()
            for m in msgs:
                producer.send(dst, key=m.key, value=m.value, partition=m.partition)
                positions[m.partition] = m.offset + 1
            producer.flush(60)
            killer.maybe(txn_no)
            producer.send_offsets_to_transaction(
                {KTP(src, p): OffsetAndMetadata(o, "", -1) for p, o in positions.items()}, group
            )
            if txn_no % ABORT_EVERY == 0:
                producer.abort_transaction()
                rewind()
                continue
            producer.commit_transaction()
        except KafkaError:
            try:
                producer.abort_transaction()
            except Exception:  # noqa: BLE001 - fenced or fatal: start a new instance
                producer.close(5)
                producer = new_producer()
            rewind()
    consumer.close()
    producer.close(10)
    return txn_no


def test_kafka_python_consume_transform_produce_exactly_once_through_three_kills(broker_factory):
    copy_through_three_kills(broker_factory, PY_RECORDS, copy_kafka_python)


# ---- aiokafka -----------------------------------------------------------------------------------------


async def copy_aiokafka(broker, src: str, dst: str, total: int, per_txn: int, killer: Killer) -> int:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as ATP
    from aiokafka.errors import KafkaError

    group, txn_id = f"aio-{uuid.uuid4().hex[:6]}", f"aio-{uuid.uuid4().hex[:6]}"
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    tps = [ATP(src, p) for p in range(PARTITIONS)]
    consumer.assign(tps)

    async def new_producer():
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=txn_id, linger_ms=10)
        await p.start()
        return p

    producer = await new_producer()
    positions: dict[int, int] = {}

    async def rewind() -> None:
        positions.clear()
        for tp in tps:
            off = await consumer.committed(tp) or 0
            positions[tp.partition] = off
            consumer.seek(tp, off)

    await rewind()
    txn_no = 0
    deadline = time.monotonic() + 60 + total / 200
    while sum(positions.values()) < total:
        assert time.monotonic() < deadline, f"copy stalled at {positions}"
        polled = await consumer.getmany(timeout_ms=1000, max_records=per_txn)
        msgs = [m for batch in polled.values() for m in batch]
        if not msgs:
            continue
        txn_no += 1
        try:
            await producer.begin_transaction()
            futs = []
            for m in msgs:
                futs.append(await producer.send(dst, key=m.key, value=m.value, partition=m.partition))
                positions[m.partition] = m.offset + 1
            await asyncio.gather(*futs)
            if txn_no in killer.at:
                await asyncio.get_running_loop().run_in_executor(None, killer.maybe, txn_no)
            await producer.send_offsets_to_transaction({ATP(src, p): o for p, o in positions.items()}, group)
            if txn_no % ABORT_EVERY == 0:
                await producer.abort_transaction()
                await rewind()
                continue
            await producer.commit_transaction()
        except KafkaError:
            try:
                await producer.abort_transaction()
            except Exception:  # noqa: BLE001
                await producer.stop()
                producer = await new_producer()
            await rewind()
    await consumer.stop()
    await producer.stop()
    return txn_no


def test_aiokafka_consume_transform_produce_exactly_once_through_three_kills(broker_factory):
    copy_through_three_kills(broker_factory, PY_RECORDS, lambda *args: asyncio.run(copy_aiokafka(*args)))
