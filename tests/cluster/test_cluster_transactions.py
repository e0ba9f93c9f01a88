"""Transactions on replicated partitions (issue 21: the data path must be right; the coordinator
itself stays on one broker until issue 22): a confluent-kafka transactional producer writes to
partitions led by all three brokers; markers reach each partition's leader (WriteTxnMarkers when
it is another broker) and are replicated; read_committed consumers see committed transactions
whole and aborted ones never, also after a data partition's leader was killed mid-transaction."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest
from cluster_process import Cluster
from confluent_kafka import Consumer, Producer, TopicPartition
from test_nemesis import batches_upto
from test_replication import create_topic, describe, iter_live, leader_of, wait_for

from tidelog.cli.client import KafkaClient

pytestmark = pytest.mark.timeout(300)
PARTS = 3

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kafka_ref"))
from test_java_client import java_checks, java_classes  # noqa: E402,F401 - fixtures (compiled once per session)


def coordinator_of(c: Cluster, txn_id: str, key_type: int = 1) -> int:
    """The broker FindCoordinator names (retried while it answers COORDINATOR_NOT_AVAILABLE)."""
    found: list[int] = []

    def ask() -> bool:
        with KafkaClient(next(iter_live(c)).bootstrap) as client:
            r = client.request(10, {"key": txn_id, "key_type": key_type}, version=1)
        if r.error_code.value == 0:
            found.append(int(r.node_id))
        return bool(found)

    wait_for(ask, 30, f"the coordinator of {txn_id}")
    return found[0]


def read(c: Cluster, topic: str, isolation: str) -> dict[int, list[str]]:
    consumer = Consumer(
        {
            "bootstrap.servers": c.bootstrap,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    out: dict[int, list[str]] = {p: [] for p in range(PARTS)}
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTS)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTS)])
        pos = {p: 0 for p in range(PARTS)}
        deadline = time.monotonic() + 30
        while any(pos[p] < ends[p] - 1 for p in ends) and time.monotonic() < deadline:
            m = consumer.poll(0.3)
            if m is None or m.error():
                continue
            out[m.partition()].append(m.value().decode())
            pos[m.partition()] = m.offset() + 1
        while (m := consumer.poll(1.0)) is not None:  # anything past the last position seen
            if not m.error():
                out[m.partition()].append(m.value().decode())
    finally:
        consumer.close()
    return out


def test_transactions_across_brokers_and_a_leader_failover(cluster):
    c = cluster
    topic = create_topic(c, partitions=PARTS)
    assert {p["leader"] for p in describe(c, topic)} == {1, 2, 3}
    txn_id = f"tx-{uuid.uuid4().hex[:6]}"
    coordinator = coordinator_of(c, txn_id)
    p = Producer(
        {
            "bootstrap.servers": c.bootstrap,
            "transactional.id": txn_id,
            "acks": "all",
            "linger.ms": 5,
            "transaction.timeout.ms": 60000,
        }
    )
    p.init_transactions(30)

    def txn(tag: str, n: int, commit: bool) -> dict[int, list[str]]:
        p.begin_transaction()
        vals = {q: [f"{tag}-{q}-{i}" for i in range(n)] for q in range(PARTS)}
        for q, vs in vals.items():
            for v in vs:
                p.produce(topic, v.encode(), partition=q)
        p.flush(30)
        (p.commit_transaction if commit else p.abort_transaction)(30)
        return vals

    committed = txn("c1", 30, True)
    txn("a1", 30, False)
    # kill the leader of a partition the coordinator does not lead, in the middle of a transaction
    victim_part = next(q for q in range(PARTS) if leader_of(c, topic, q) != coordinator)
    victim = leader_of(c, topic, victim_part)
    p.begin_transaction()
    mid = {q: [f"c2-{q}-{i}" for i in range(20)] for q in range(PARTS)}
    for q, vs in mid.items():
        for v in vs:
            p.produce(topic, v.encode(), partition=q)
    p.flush(30)
    c.brokers[victim].kill()
    wait_for(lambda: leader_of(c, topic, victim_part) not in (victim, -1), 30, "a new leader")
    p.commit_transaction(60)  # the marker goes to the new leader, which replayed the open transaction
    c.brokers[victim].start()
    wait_for(lambda: all(len(x["isr"]) == 3 for x in describe(c, topic)), 40, "the ISR full again")
    after = txn("c3", 10, True)
    txn("a2", 10, False)
    tail = txn("c4", 5, True)  # a committed transaction after the aborted one: the LSO moves past it

    rc = read(c, topic, "read_committed")
    for q in range(PARTS):
        assert rc[q] == committed[q] + mid[q] + after[q] + tail[q], q
    ru = read(c, topic, "read_uncommitted")
    assert all(any(v.startswith("a1-") for v in ru[q]) for q in range(PARTS))  # aborted data is replicated too
    # every replica holds the same batches, control batches included
    for q in range(PARTS):
        ends = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "hw"})
        hw = ends.get_watermark_offsets(TopicPartition(topic, q), timeout=10)[1]
        ends.close()
        copies = [batches_upto(b.data_dir, topic, q, hw) for b in c.brokers.values()]
        wait_for(
            lambda q=q, hw=hw: len({tuple(batches_upto(b.data_dir, topic, q, hw)) for b in c.brokers.values()}) == 1,
            20,
            f"partition {q}: identical replicas",
        )
        assert copies[0][-1][1] == hw - 1


def test_java_producer_runs_transaction_version_2_across_brokers(cluster, java_checks):  # noqa: F811 - the fixture
    """Kafka 4.3.1's Java producer against three brokers, which finalize transaction.version 2:
    a consume-transform-produce copy (java/clients/ClientChecks.java `eos`, partitions spread over
    the brokers) whose Produce v12+ and TxnOffsetCommit v5 have their partitions added by the
    coordinator on another broker (AddPartitionsToTxn v5), and whose EndTxn v5 markers go out as
    WriteTxnMarkers v2 with the bumped epoch. read_committed sees every input once, aborted
    copies hidden."""
    out = java_checks(cluster.bootstrap, "eos")
    assert out["aborted"] >= 1 and out["transactions"] > out["aborted"]
    assert out["all_present"] and out["duplicates"] == 0 and out["read_committed"] == out["inputs"]
    assert out["read_uncommitted"] > out["read_committed"]
