"""Power loss on a real broker's files: after real clients wrote data, group offsets
(`__consumer_offsets`), transactions (`__transaction_state`) and idempotent producer state
(`.snapshot`), the broker is killed and the tail of each of those files is garbled from a random
byte on. The broker must start, say in its log what it truncated, keep everything before the
damage, and serve the same clients again (produce, commit, transactions)."""

import random
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.cli.client import KafkaClient

TOPIC = "pl"


def garble_tail(path, rng, lo=0.5):
    data = path.read_bytes()
    if not data:
        return None
    pos = rng.randrange(int(len(data) * lo), len(data))
    path.write_bytes(data[:pos] + bytes(b ^ rng.randrange(1, 256) for b in data[pos:]))
    return pos


def read_values(boot, n_max):
    c = Consumer(
        {
            "bootstrap.servers": boot,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got, idle = [], 0
    while idle < 3 and len(got) < n_max:
        msgs = [m for m in c.consume(500, 1.0) if m.error() is None]
        idle = 0 if msgs else idle + 1
        got += [(m.offset(), m.value()) for m in msgs]
    c.close()
    return got


def test_garbled_internal_and_data_files_after_a_crash(broker_factory):
    rng = random.Random(5)
    b = broker_factory(
        {
            "log.flush.interval.messages": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
    )
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(20)
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all"})
    acked = []
    for i in range(300):
        p.produce(TOPIC, b"v%d" % i, partition=0, on_delivery=lambda e, m: e or acked.append((m.offset(), m.value())))
    assert p.flush(30) == 0
    tp = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "pl-txn"})
    tp.init_transactions(30)
    for i in range(5):
        tp.begin_transaction()
        tp.produce(TOPIC, b"t%d" % i, partition=0)
        tp.commit_transaction(30)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "pl-group", "enable.auto.commit": False})
    for off in range(10, 200, 10):
        c.commit(offsets=[TopicPartition(TOPIC, 0, off)], asynchronous=False)
    c.close()
    before = read_values(b.bootstrap, 10_000)
    b.kill()

    damaged = {}
    for pattern in (
        "__consumer_offsets-0/*.log",
        "__transaction_state-0/*.log",
        f"{TOPIC}-0/*.log",
        f"{TOPIC}-0/*.snapshot",
        f"{TOPIC}-0/*.index",
        "recovery-point-offset-checkpoint",
    ):
        files = sorted(b.data_dir.glob(pattern))
        files = [f for f in files if f.stat().st_size > 0]
        if files:
            damaged[files[-1].relative_to(b.data_dir)] = garble_tail(files[-1], rng)
    assert len([k for k in damaged if str(k).endswith(".log")]) == 3, damaged

    b.start()
    log = b.log()
    for name in ("__consumer_offsets-0", "__transaction_state-0", f"{TOPIC}-0"):
        assert f"{name}: truncated" in log, (name, log[-3000:])
    after = read_values(b.bootstrap, 10_000)
    assert after == before[: len(after)], "the partition is not a prefix of what it was"
    assert len(after) > 0

    # the same clients work again
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all"})
    p.produce(TOPIC, b"again", partition=0)
    assert p.flush(30) == 0
    tp = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "pl-txn"})
    tp.init_transactions(30)
    tp.begin_transaction()
    tp.produce(TOPIC, b"t-again", partition=0)
    tp.commit_transaction(30)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "pl-group", "enable.auto.commit": False})
    got = c.committed([TopicPartition(TOPIC, 0)], timeout=10)[0].offset
    assert got <= len(after) + 1  # never ahead of the data that survived
    c.commit(offsets=[TopicPartition(TOPIC, 0, 5)], asynchronous=False)
    assert c.committed([TopicPartition(TOPIC, 0)], timeout=10)[0].offset == 5
    c.close()
    final = read_values(b.bootstrap, 10_000)
    assert [v for _o, v in final[-2:]] == [b"again", b"t-again"]
    # and it is still up once every client has gone: a new connection is answered (a round trip
    # through its event loop after the clients' closes), and the process has not exited
    with KafkaClient(b.bootstrap) as client:
        assert client.request(3, {"topics": None, "allow_auto_topic_creation": False}, version=9).brokers
    assert b.proc.poll() is None, b.log()[-3000:]
