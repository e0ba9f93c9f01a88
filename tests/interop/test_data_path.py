"""Produce, Fetch and ListOffsets end to end: four real clients, every codec, across segment rolls."""

import asyncio
import hashlib
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.interop

# Small segments so that 10,000 messages span many of them. A record set larger than a segment is
# refused (RECORD_LIST_TOO_LARGE, as in Kafka), so producers here keep batches under 64 KiB.
BROKER_OVERRIDES = {"log.segment.bytes": "131072", "log.index.interval.bytes": "1024"}
BATCH = 65536
N = 10_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000


def new_topic(broker, partitions=1, config=None) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(10)
    return name


def expected(i: int):
    # Incompressible tails, so that compressed topics span several segments too.
    noise = hashlib.sha256(str(i).encode()).digest() * (1 + i % 3)
    return (f"key-{i}".encode(), f"value-{i}-".encode() + noise, [("h1", f"x{i}".encode()), ("h2", b"")], T0 + i)


def check(got):
    assert len(got) == N, f"got {len(got)} of {N}"
    for i, (key, value, headers, ts) in enumerate(got):
        ek, ev, eh, ets = expected(i)
        assert (key, value, headers, ts) == (ek, ev, eh, ets), f"message {i} differs"


def ck_consume(broker, topic, n, isolation="read_uncommitted", extra=None):
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            **(extra or {}),
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + 60
    while len(out) < n and time.monotonic() < deadline:
        for m in c.consume(1000, 1.0):
            if m.error():
                raise KafkaException(m.error())
            out.append(m)
    c.close()
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_round_trip(module_broker, codec):
    topic = new_topic(module_broker)
    p = Producer(
        {"bootstrap.servers": module_broker.bootstrap, "compression.type": codec, "linger.ms": 5, "batch.size": BATCH}
    )
    for i in range(N):
        k, v, h, ts = expected(i)
        p.produce(topic, key=k, value=v, headers=h, timestamp=ts)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    msgs = ck_consume(module_broker, topic, N)
    check([(m.key(), m.value(), [(a, b or b"") for a, b in m.headers()], m.timestamp()[1]) for m in msgs])
    assert {m.timestamp()[0] for m in msgs} == {1}  # TIMESTAMP_CREATE_TIME
    assert [m.offset() for m in msgs] == list(range(N))
    segments = list((module_broker.data_dir / f"{topic}-0").glob("*.log"))
    assert len(segments) > 3, "the topic should span several segments"


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_round_trip(module_broker, codec):
    from kafka import KafkaConsumer, KafkaProducer

    topic = new_topic(module_broker)
    p = KafkaProducer(
        bootstrap_servers=module_broker.bootstrap, compression_type=None if codec == "none" else codec, linger_ms=5
    )  # kafka-python 3.x is idempotent by default (InitProducerId)
    for i in range(N):
        k, v, h, ts = expected(i)
        p.send(topic, key=k, value=v, headers=h, timestamp_ms=ts, partition=0)
    p.flush(30)
    p.close()
    c = KafkaConsumer(
        bootstrap_servers=module_broker.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10000,
    )
    c.assign([__import__("kafka").TopicPartition(topic, 0)])
    c.seek_to_beginning()
    got = []
    for m in c:
        got.append(m)
        if len(got) == N:
            break
    c.close()
    check([(m.key, m.value, [(a, b or b"") for a, b in m.headers], m.timestamp) for m in got])
    assert {m.timestamp_type for m in got} == {0}


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_round_trip(module_broker, codec):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as ATP

    topic = new_topic(module_broker)

    async def run():
        p = AIOKafkaProducer(
            bootstrap_servers=module_broker.bootstrap, compression_type=None if codec == "none" else codec, linger_ms=5
        )
        await p.start()
        try:
            batch = []
            for i in range(N):
                k, v, h, ts = expected(i)
                batch.append(await p.send(topic, key=k, value=v, headers=h, timestamp_ms=ts, partition=0))
            await asyncio.gather(*batch)
        finally:
            await p.stop()
        c = AIOKafkaConsumer(
            bootstrap_servers=module_broker.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await c.start()
        got = []
        try:
            c.assign([ATP(topic, 0)])
            await c.seek_to_beginning(ATP(topic, 0))
            deadline = time.monotonic() + 60
            while len(got) < N and time.monotonic() < deadline:
                res = await c.getmany(timeout_ms=1000)
                for msgs in res.values():
                    got.extend(msgs)
        finally:
            await c.stop()
        return got

    got = asyncio.run(run())
    check([(m.key, m.value, [(a, b or b"") for a, b in m.headers], m.timestamp) for m in got])
    assert {m.timestamp_type for m in got} == {0}


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_round_trip(module_broker, kcat, codec, tmp_path):
    topic = new_topic(module_broker)
    lines = "".join(f"key-{i}\tvalue-{i}\n" for i in range(N))
    subprocess.run(
        [
            kcat,
            "-P",
            "-b",
            module_broker.bootstrap,
            "-t",
            topic,
            "-p",
            "0",
            "-K",
            "\t",
            "-z",
            codec,
            "-H",
            "source=kcat",
            "-X",
            "linger.ms=5",
            "-X",
            f"batch.size={BATCH}",
        ],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [
            kcat,
            "-C",
            "-b",
            module_broker.bootstrap,
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%k\t%s\t%h\t%o\n",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) == N
    for i, (k, v, h, o) in enumerate(rows):
        assert (k, v, h, int(o)) == (f"key-{i}", f"value-{i}", "source=kcat", i)


def test_log_append_time_topic(module_broker):
    topic = new_topic(module_broker, config={"message.timestamp.type": "LogAppendTime"})
    p = Producer({"bootstrap.servers": module_broker.bootstrap})
    before = int(time.time() * 1000)
    for i in range(10):
        p.produce(topic, value=b"x", timestamp=T0 + i)
    assert p.flush(10) == 0
    after = int(time.time() * 1000)
    msgs = ck_consume(module_broker, topic, 10)
    for m in msgs:
        ts_type, ts = m.timestamp()
        assert ts_type == 2  # TIMESTAMP_LOG_APPEND_TIME
        assert before - 1000 <= ts <= after + 1000


def test_timestamp_outside_difference_is_refused(module_broker):
    topic = new_topic(module_broker, config={"message.timestamp.difference.max.ms": "3600000"})
    p = Producer({"bootstrap.servers": module_broker.bootstrap, "retries": 0})
    errors = []
    p.produce(
        topic,
        value=b"too-old",
        timestamp=int(time.time() * 1000) - 2 * 3600_000,
        on_delivery=lambda err, msg: errors.append(err),
    )
    p.flush(10)
    assert errors and errors[0] is not None and errors[0].name() == "INVALID_TIMESTAMP"
    p.produce(topic, value=b"fresh", on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert errors[1] is None
    msgs = ck_consume(module_broker, topic, 1)
    assert [m.value() for m in msgs] == [b"fresh"] and msgs[0].offset() == 0


def test_offsets_for_times_over_48_hours(module_broker):
    import random

    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    topic = new_topic(module_broker, config={"segment.bytes": "4096"})
    rng = random.Random(7)
    hour = 3600_000
    base = T0
    stamps = []
    p = Producer({"bootstrap.servers": module_broker.bootstrap, "linger.ms": 20, "batch.size": 1024})
    for i in range(3000):
        # Mostly increasing over 48 hours, with out-of-order jitter inside batches.
        ts = base + int(i * 48 * hour / 3000) + rng.randint(-2 * hour, 2 * hour)
        stamps.append(ts)
        p.produce(topic, value=f"{i}".encode(), timestamp=ts, partition=0)
    assert p.flush(30) == 0
    assert len(list((module_broker.data_dir / f"{topic}-0").glob("*.log"))) > 5

    def scan(target):
        for off, ts in enumerate(stamps):
            if ts >= target:
                return off
        return None

    targets = [base - hour] + [base + rng.randint(0, 48 * hour) for _ in range(40)] + [max(stamps), max(stamps) + 1]
    c = Consumer({"bootstrap.servers": module_broker.bootstrap, "group.id": "lookup"})
    # One target per call: librdkafka merges repeated partitions within one request.
    res = [c.offsets_for_times([TopicPartition(topic, 0, t)], timeout=10)[0] for t in targets]
    c.close()
    for t, r in zip(targets, res):
        want = scan(t)
        assert r.offset == (want if want is not None else -1), f"confluent-kafka target {t}"
    kc = KafkaConsumer(bootstrap_servers=module_broker.bootstrap)
    for t in targets:
        got = kc.offsets_for_times({KTP(topic, 0): t})[KTP(topic, 0)]
        want = scan(t)
        if want is None:
            assert got is None
        else:
            assert got.offset == want and got.timestamp == stamps[want]
    kc.close()


@pytest.mark.parametrize("api_version", [(0, 10, 0), (0, 9)])
def test_old_kafka_python_clients(module_broker, api_version):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP

    topic = new_topic(module_broker)
    p = KafkaProducer(bootstrap_servers=module_broker.bootstrap, api_version=api_version)
    for i in range(200):
        p.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    p.flush(10)
    p.close()
    c = KafkaConsumer(
        bootstrap_servers=module_broker.bootstrap,
        api_version=api_version,
        consumer_timeout_ms=5000,
        enable_auto_commit=False,
    )
    c.assign([KTP(topic, 0)])
    c.seek_to_beginning()
    got = [(m.key, m.value) for _, m in zip(range(200), c)]
    c.close()
    assert got == [(f"k{i}".encode(), f"v{i}".encode()) for i in range(200)]
    # Everyone else reads what the old producer wrote.
    msgs = ck_consume(module_broker, topic, 200)
    assert [m.value() for m in msgs] == [f"v{i}".encode() for i in range(200)]


def test_long_poll_wakes_on_append(module_broker):
    topic = new_topic(module_broker)
    # fetch.wait.max.ms is far longer than the poll below: only a wake-up on append delivers in time.
    c = Consumer(
        {
            "bootstrap.servers": module_broker.bootstrap,
            "group.id": "lp",
            "fetch.wait.max.ms": 60000,
            "fetch.min.bytes": 1,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    assert c.poll(2) is None
    p = Producer({"bootstrap.servers": module_broker.bootstrap})
    p.produce(topic, value=b"wake")
    p.flush(10)
    m = None
    deadline = time.monotonic() + 20
    while m is None and time.monotonic() < deadline:
        m = c.poll(1)
    c.close()
    assert m is not None and m.value() == b"wake"


def test_unknown_partition_and_out_of_range(module_broker):
    topic = new_topic(module_broker)
    p = Producer({"bootstrap.servers": module_broker.bootstrap})
    p.produce(topic, value=b"x")
    p.flush(10)
    c = Consumer({"bootstrap.servers": module_broker.bootstrap, "group.id": "oor", "auto.offset.reset": "error"})
    c.assign([TopicPartition(topic, 0, 50)])
    err = None
    deadline = time.monotonic() + 20
    while err is None and time.monotonic() < deadline:
        m = c.poll(1)
        if m is not None and m.error():
            err = m.error()
    c.close()
    assert err is not None and "out of range" in err.str().lower() or err.code() == 1
