"""Idempotent and transactional producers against a real broker, with real clients.

confluent-kafka, kafka-python and aiokafka as idempotent producers and read_committed consumers;
commit/abort visibility and the LSO; fencing by a second producer with the same transactional
id; abort by timeout; a restart (kill -9) in the middle of a transaction; KIP-890 refusal of a
transactional batch for a partition outside the transaction (raw requests); admin visibility
(ListTransactions, DescribeTransactions, DescribeProducers); and an idempotent producer whose
acks are swallowed by a proxy retrying without duplicates. About 60 s in all.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
import urllib.request
import uuid

import pytest
from broker_process import free_port
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.cli.client import KafkaClient
from tidelog.log.records import Record, build_batch

METRICS_PORT = free_port()
BROKER_OVERRIDES = {
    "metrics.listener": f"127.0.0.1:{METRICS_PORT}",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "300",
}
READ_COMMITTED, READ_UNCOMMITTED = "read_committed", "read_uncommitted"


def new_topic(broker, partitions: int = 2) -> str:
    name = f"tx-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    return name


def ck_consume(
    broker, topic: str, partitions: int, isolation: str, expect: int | None = None, idle: float = 3.0
) -> list:
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, last = [], time.monotonic()
    while time.monotonic() - last < idle and (expect is None or len(out) < expect):
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        out.append(m)
        last = time.monotonic()
    c.close()
    return out


def values(msgs) -> list[bytes]:
    return sorted(m.value() for m in msgs)


def list_offsets(broker, topic: str, partition: int, isolation: int) -> int:
    with KafkaClient(broker.bootstrap) as kc:
        resp = kc.request(
            2,
            {
                "replica_id": -1,
                "isolation_level": isolation,
                "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
            },
            version=5,
        )
    return resp.topics[0].partitions[0].offset


def txn_producer(broker, txn_id: str, **extra) -> Producer:
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id, **extra})
    p.init_transactions(30)
    return p


# ---- idempotence --------------------------------------------------------------------------------


def test_idempotent_producers_of_three_clients(module_broker):
    from aiokafka import AIOKafkaProducer
    from kafka import KafkaProducer

    topic = new_topic(module_broker, 1)
    p = Producer({"bootstrap.servers": module_broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(300):
        p.produce(topic, value=b"ck-%d" % i, partition=0)
    assert p.flush(30) == 0
    kp = KafkaProducer(bootstrap_servers=module_broker.bootstrap, linger_ms=5)  # idempotent by default
    for i in range(300):
        kp.send(topic, b"kp-%d" % i, partition=0)
    kp.flush(30)
    kp.close()

    async def aio():
        ap = AIOKafkaProducer(bootstrap_servers=module_broker.bootstrap, enable_idempotence=True)
        await ap.start()
        try:
            await asyncio.gather(*[await ap.send(topic, b"aio-%d" % i, partition=0) for i in range(300)])
        finally:
            await ap.stop()

    asyncio.run(aio())
    got = ck_consume(module_broker, topic, 1, READ_UNCOMMITTED, expect=900)
    assert values(got) == sorted([b"%s-%d" % (c, i) for c in (b"ck", b"kp", b"aio") for i in range(300)])
    with KafkaClient(module_broker.bootstrap) as kc:
        resp = kc.request(61, {"topics": [{"name": topic, "partition_indexes": [0]}]})
    producers = resp.topics[0].partitions[0].active_producers
    assert len(producers) == 3
    assert sorted(pr.last_sequence for pr in producers) == [299, 299, 299]
    assert all(pr.current_txn_start_offset == -1 for pr in producers)


def _batch(pid: int, epoch: int, seq: int, n: int, transactional: bool = False) -> bytes:
    t = int(time.time() * 1000)
    return build_batch(
        [Record(b"k", b"v%d" % i, t) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=transactional,
    )


def _produce(kc: KafkaClient, topic: str, partition: int, batch: bytes, txn_id: str | None = None):
    resp = kc.request(
        0,
        {
            "transactional_id": txn_id,
            "acks": -1,
            "timeout": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
        },
        version=9,
    )
    p = resp.responses[0].partition_responses[0]
    return int(p.error_code), p.base_offset


def test_sequence_and_epoch_errors_on_raw_batches(module_broker):
    topic = new_topic(module_broker, 1)
    with KafkaClient(module_broker.bootstrap) as kc:
        init = kc.request(
            22,
            {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1},
            version=4,
        )
        assert int(init.error_code) == 0
        pid = init.producer_id
        assert _produce(kc, topic, 0, _batch(pid, 0, 0, 3)) == (0, 0)
        assert _produce(kc, topic, 0, _batch(pid, 0, 3, 2)) == (0, 3)
        assert _produce(kc, topic, 0, _batch(pid, 0, 0, 3)) == (0, 0)  # a retry: original offset
        assert _produce(kc, topic, 0, _batch(pid, 0, 9, 1))[0] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
        assert _produce(kc, topic, 0, _batch(pid, 1, 0, 1)) == (0, 5)  # new epoch from 0
        assert _produce(kc, topic, 0, _batch(pid, 0, 5, 1))[0] == 47  # INVALID_PRODUCER_EPOCH
        assert _produce(kc, topic, 0, _batch(pid + 10_000, 0, 0, 1))[0] == 59  # UNKNOWN_PRODUCER_ID
        for internal in ("__transaction_state", "__consumer_offsets"):  # INVALID_TOPIC_EXCEPTION
            assert _produce(kc, internal, 0, _batch(-1, -1, -1, 1))[0] == 17
    got = ck_consume(module_broker, topic, 1, READ_UNCOMMITTED, expect=6)
    assert [m.offset() for m in got] == [0, 1, 2, 3, 4, 5]


# ---- transactions ---------------------------------------------------------------------------------


def _consume_three_clients(broker, topic: str, partitions: int, expect: int) -> dict[str, list[bytes]]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    out = {"confluent": values(ck_consume(broker, topic, partitions, READ_COMMITTED, expect=expect))}
    kc = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        isolation_level=READ_COMMITTED,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    kc.assign([KTP(topic, p) for p in range(partitions)])
    out["kafka-python"] = sorted(m.value for m in kc)
    kc.close()

    async def aio():
        c = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            isolation_level=READ_COMMITTED,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await c.start()
        c.assign([ATP(topic, p) for p in range(partitions)])
        got = []
        try:
            while True:
                batch = await c.getmany(timeout_ms=3000)
                if not batch:
                    break
                got += [m.value for msgs in batch.values() for m in msgs]
        finally:
            await c.stop()
        return sorted(got)

    out["aiokafka"] = asyncio.run(aio())
    return out


def test_commit_and_abort_as_read_committed_consumers_see_them(module_broker):
    topic = new_topic(module_broker, 2)
    p = txn_producer(module_broker, f"ca-{uuid.uuid4().hex[:6]}")
    p.begin_transaction()
    for i in range(20):
        p.produce(topic, value=b"aborted-%d" % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(20):
        p.produce(topic, value=b"committed-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    # an open transaction holds the LSO at its first offset; read_committed ListOffsets returns it
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    p.flush(30)
    hw = list_offsets(module_broker, topic, 0, 0)
    lso = list_offsets(module_broker, topic, 0, 1)
    assert lso == hw - 1, (lso, hw)
    seen = _consume_three_clients(module_broker, topic, 2, expect=20)
    want = sorted(b"committed-%d" % i for i in range(20))
    assert seen == {"confluent": want, "kafka-python": want, "aiokafka": want}
    everything = values(ck_consume(module_broker, topic, 2, READ_UNCOMMITTED, expect=41))
    assert everything == sorted(want + [b"aborted-%d" % i for i in range(20)] + [b"open"])
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=10).read().decode()
    assert f'tidelog_last_stable_offset{{partition="0",topic="{topic}"}} {float(lso)}' in metrics
    assert float(metrics.split("\ntidelog_transactional_ids ")[1].split()[0]) >= 1
    assert float(metrics.split("\ntidelog_producer_ids ")[1].split()[0]) >= 1
    p.commit_transaction(30)
    assert list_offsets(module_broker, topic, 0, 1) == list_offsets(module_broker, topic, 0, 0)
    assert b"open" in values(ck_consume(module_broker, topic, 2, READ_COMMITTED, expect=21))


def test_second_producer_with_the_same_transactional_id_fences_the_first(module_broker):
    topic = new_topic(module_broker, 1)
    txn_id = f"fence-{uuid.uuid4().hex[:6]}"
    first = txn_producer(module_broker, txn_id)
    first.begin_transaction()
    first.produce(topic, value=b"zombie", partition=0)
    first.flush(30)
    second = txn_producer(module_broker, txn_id)  # aborts the first one's transaction
    second.begin_transaction()
    second.produce(topic, value=b"winner", partition=0)
    second.commit_transaction(30)
    with pytest.raises(KafkaException) as e:
        first.commit_transaction(30)
    assert e.value.args[0].fatal() or "fenced" in str(e.value).lower()
    assert values(ck_consume(module_broker, topic, 1, READ_COMMITTED, expect=1)) == [b"winner"]
    assert values(ck_consume(module_broker, topic, 1, READ_UNCOMMITTED, expect=2)) == [b"winner", b"zombie"]


def test_a_stalled_transaction_is_aborted_by_its_timeout_and_the_lso_moves_on(module_broker):
    topic = new_topic(module_broker, 1)
    txn_id = f"stall-{uuid.uuid4().hex[:6]}"
    p = txn_producer(module_broker, txn_id, **{"transaction.timeout.ms": 1500})
    p.begin_transaction()
    p.produce(topic, value=b"stalled", partition=0)
    p.flush(30)
    assert list_offsets(module_broker, topic, 0, 1) == 0
    deadline = time.monotonic() + 20
    while list_offsets(module_broker, topic, 0, 1) == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list_offsets(module_broker, topic, 0, 1) == list_offsets(module_broker, topic, 0, 0) == 2  # data + ABORT
    assert ck_consume(module_broker, topic, 1, READ_COMMITTED, idle=1.5) == []
    with KafkaClient(module_broker.bootstrap) as kc:
        d = kc.request(65, {"transactional_ids": [txn_id]}).transaction_states[0]
        assert d.transaction_state == "CompleteAbort" and d.producer_epoch == 1  # bumped: the producer is fenced
        listed = kc.request(
            66, {"state_filters": ["CompleteAbort"], "producer_id_filters": [], "duration_filter": -1}
        ).transaction_states
        assert txn_id in [t.transactional_id for t in listed]
    with pytest.raises(KafkaException):
        p.commit_transaction(10)


def test_clean_restart_in_the_middle_of_a_transaction(broker_factory):
    overrides = {k: v for k, v in BROKER_OVERRIDES.items() if k != "metrics.listener"}
    b = broker_factory(overrides)
    topic = new_topic(b, 1)
    p = txn_producer(b, "restarted", **{"metadata.recovery.strategy": "none"})
    idem = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True})
    idem.produce(topic, value=b"plain-0", partition=0)
    assert idem.flush(30) == 0
    p.begin_transaction()
    p.produce(topic, value=b"before", partition=0)
    p.flush(30)
    b.restart()  # SIGTERM: producer state comes back from the shutdown snapshot
    assert list_offsets(b, topic, 0, 1) == 1 and list_offsets(b, topic, 0, 0) == 2  # still open
    assert any(p.name.endswith(".snapshot") for p in (b.data_dir / f"{topic}-0").iterdir())
    p.produce(topic, value=b"after", partition=0)
    p.commit_transaction(60)
    idem.produce(topic, value=b"plain-1", partition=0)  # same producer id, next sequence
    assert idem.flush(30) == 0
    assert [m.value() for m in ck_consume(b, topic, 1, READ_COMMITTED, expect=4)] == [
        b"plain-0",
        b"before",
        b"after",
        b"plain-1",
    ]


def _init_producer(kc, txn_id: str) -> tuple[int, int]:
    """InitProducerId v4 for `txn_id`: (producer id, epoch)."""
    init = kc.request(
        22,
        {"transactional_id": txn_id, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1},
        version=4,
    )
    return init.producer_id, init.producer_epoch


def _add_partitions(kc, txn_id: str, pid: int, epoch: int, topic: str, partitions: list[int]):
    """AddPartitionsToTxn v3 (the client path, before KIP-890's v4 batching)."""
    return kc.request(
        24,
        {
            "v3_and_below_transactional_id": txn_id,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": partitions}],
        },
        version=3,
    )


def test_kip890_a_transactional_batch_outside_the_transaction_is_refused(module_broker):
    topic = new_topic(module_broker, 2)
    txn_id = f"raw-{uuid.uuid4().hex[:6]}"
    with KafkaClient(module_broker.bootstrap) as kc:
        pid, epoch = _init_producer(kc, txn_id)
        # before any AddPartitionsToTxn: nothing may be written transactionally
        assert _produce(kc, topic, 0, _batch(pid, epoch, 0, 1, True), txn_id)[0] == 48  # INVALID_TXN_STATE
        add = _add_partitions(kc, txn_id, pid, epoch, topic, [0])
        assert int(add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code) == 0
        assert _produce(kc, topic, 0, _batch(pid, epoch, 0, 2, True), txn_id) == (0, 0)
        assert _produce(kc, topic, 1, _batch(pid, epoch, 0, 1, True), txn_id)[0] == 48  # not added
        desc = kc.request(65, {"transactional_ids": [txn_id, "no-such-id"]}).transaction_states
        assert desc[0].transaction_state == "Ongoing" and [(t.topic, list(t.partitions)) for t in desc[0].topics] == [
            (topic, [0])
        ]
        assert int(desc[1].error_code) == 105  # TRANSACTIONAL_ID_NOT_FOUND
        producers = (
            kc.request(61, {"topics": [{"name": topic, "partition_indexes": [0]}]})
            .topics[0]
            .partitions[0]
            .active_producers
        )
        assert [(pr.producer_id, pr.current_txn_start_offset) for pr in producers] == [(pid, 0)]
        end = kc.request(
            26, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "committed": True}, version=3
        )
        assert int(end.error_code) == 0
        # a late batch of the finished transaction cannot join anything (the "torn transaction")
        assert _produce(kc, topic, 0, _batch(pid, epoch, 2, 1, True), txn_id)[0] == 48
        # a wrong epoch is fenced; a too long timeout is refused
        end = kc.request(
            26,
            {
                "transactional_id": txn_id,
                "producer_id": pid,
                "producer_epoch": epoch - 1 if epoch else epoch + 5,
                "committed": True,
            },
            version=3,
        )
        assert int(end.error_code) == 90  # PRODUCER_FENCED
        bad = kc.request(
            22,
            {"transactional_id": txn_id, "transaction_timeout": 10**9, "producer_id": -1, "producer_epoch": -1},
            version=4,
        )
        assert int(bad.error_code) == 50  # INVALID_TRANSACTION_TIMEOUT
    assert [m.offset() for m in ck_consume(module_broker, topic, 2, READ_COMMITTED, expect=2)] == [0, 1]


def test_write_txn_markers_aborts_an_open_transaction(module_broker):
    topic = new_topic(module_broker, 1)
    txn_id = f"wtm-{uuid.uuid4().hex[:6]}"
    with KafkaClient(module_broker.bootstrap) as kc:
        pid, epoch = _init_producer(kc, txn_id)
        _add_partitions(kc, txn_id, pid, epoch, topic, [0])
        assert _produce(kc, topic, 0, _batch(pid, epoch, 0, 3, True), txn_id) == (0, 0)
        assert list_offsets(module_broker, topic, 0, 1) == 0
        # the second finds nothing open and is written all the same, as Kafka does: a retried marker
        # may be the only one (the first went to a deposed leader), and it records the coordinator epoch
        for version in (0, 1):
            resp = kc.request(
                27,
                {
                    "markers": [
                        {
                            "producer_id": pid,
                            "producer_epoch": epoch,
                            "transaction_result": False,
                            "topics": [{"name": topic, "partition_indexes": [0]}],
                            "coordinator_epoch": 0,
                        }
                    ]
                },
                version=version,
            )
            assert int(resp.markers[0].topics[0].partitions[0].error_code) == 0
    assert list_offsets(module_broker, topic, 0, 1) == list_offsets(module_broker, topic, 0, 0) == 5
    assert ck_consume(module_broker, topic, 1, READ_COMMITTED, idle=1.5) == []
    assert len(ck_consume(module_broker, topic, 1, READ_UNCOMMITTED, expect=3)) == 3


# ---- dropped acks ----------------------------------------------------------------------------------


class AckDroppingProxy:
    """Forwards a Kafka connection; swallows the responses to the first `drop` Produce requests
    and then closes the client's connection, so the client must retry batches that were written."""

    def __init__(self, port: int, target_port: int, drop: int) -> None:
        self.target_port = target_port
        self.drop = drop
        self.dropped = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            produce_ids: set[int] = set()
            threading.Thread(target=self._up, args=(client, upstream, produce_ids), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client, produce_ids), daemon=True).start()

    @staticmethod
    def _frames(sock):
        buf = b""
        while True:
            data = sock.recv(65536)
            if not data:
                return
            buf += data
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                n = 4 + struct.unpack(">i", buf[:4])[0]
                yield buf[:n]
                buf = buf[n:]

    def _up(self, client, upstream, produce_ids) -> None:
        try:
            for frame in self._frames(client):
                api_key, _v, corr = struct.unpack(">hhi", frame[4:12])
                if api_key == 0:
                    produce_ids.add(corr)
                upstream.sendall(frame)
        except OSError:
            pass
        finally:
            upstream.close()

    def _down(self, upstream, client, produce_ids) -> None:
        try:
            for frame in self._frames(upstream):
                corr = struct.unpack(">i", frame[4:8])[0]
                if corr in produce_ids:
                    with self.lock:
                        drop = self.dropped < self.drop
                        self.dropped += drop
                    if drop:
                        client.shutdown(socket.SHUT_RDWR)
                        client.close()
                        return
                client.sendall(frame)
        except OSError:
            pass
        finally:
            client.close()

    def close(self) -> None:
        self.sock.close()


def test_idempotent_producer_whose_acks_are_dropped_retries_without_duplicates(broker_factory):
    from broker_process import free_port

    proxy_port = free_port()  # clients learn the proxy's address from Metadata
    overrides = {k: v for k, v in BROKER_OVERRIDES.items() if k != "metrics.listener"}  # the module broker's
    b = broker_factory({**overrides, "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}"})
    proxy = AckDroppingProxy(proxy_port, b.port, drop=3)
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("acks", 1, 1)]).values():
            f.result(30)
        p = Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{proxy_port}",
                "enable.idempotence": True,
                "linger.ms": 20,
                "retry.backoff.ms": 50,
            }
        )
        for i in range(2000):
            p.produce("acks", value=b"%d" % i, partition=0)
            if i % 200 == 199:
                p.poll(0)
                time.sleep(0.05)
        assert p.flush(60) == 0
        assert proxy.dropped == 3
        got = ck_consume(b, "acks", 1, READ_UNCOMMITTED, expect=2000)
        assert [m.value() for m in got] == [b"%d" % i for i in range(2000)]
        assert [m.offset() for m in got] == list(range(2000))
    finally:
        proxy.close()
