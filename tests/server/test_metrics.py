"""The Prometheus endpoint of a real `tidelog serve`: values checked against what was produced,
fetched and committed. Also `log.format=json` and `--env-prefix`. About 15 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest
from broker_process import free_port
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.interop


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples, name, **labels) -> float:
    return samples[(name, tuple(sorted((k, str(v)) for k, v in labels.items())))]


def test_metrics_match_what_was_produced_fetched_and_committed(broker_factory):
    mport = free_port()
    b = broker_factory({"metrics.listener": f"127.0.0.1:{mport}", "log.segment.bytes": "2000"})
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("metered", num_partitions=2, replication_factor=1)])["metered"].result(10)

    # 3 produce calls per partition, batches of known size: p0 gets 3x10 records, p1 3x5.
    p = Producer(
        {"bootstrap.servers": b.bootstrap, "linger.ms": 50, "compression.type": "none", "batch.num.messages": 1000}
    )
    sent = {0: 0, 1: 0}
    errors = []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)

    for _ in range(3):
        for part, n in ((0, 10), (1, 5)):
            for i in range(n):
                p.produce("metered", key=b"k%d" % i, value=b"v" * 100, partition=part, on_delivery=delivered)
                sent[part] += 1
            p.flush(10)

    assert not errors
    before = scrape(mport)
    assert value(before, "tidelog_topic_messages_in_total", topic="metered") == 45
    size = value(before, "tidelog_log_size_bytes", topic="metered", partition=0) + value(
        before, "tidelog_log_size_bytes", topic="metered", partition=1
    )
    assert value(before, "tidelog_topic_bytes_in_total", topic="metered") == size
    assert size > 45 * 100
    for part in (0, 1):
        assert value(before, "tidelog_high_watermark", topic="metered", partition=part) == sent[part]
        assert value(before, "tidelog_last_stable_offset", topic="metered", partition=part) == sent[part]
        assert value(before, "tidelog_log_end_offset", topic="metered", partition=part) == sent[part]
    # segment.bytes=2000 and batches of 10 x ~110 bytes: every batch rolls a new segment on p0
    assert value(before, "tidelog_log_segments", topic="metered", partition=0) == 3
    assert value(before, "tidelog_request_latency_seconds_count", api="Produce") >= 6
    assert value(before, "tidelog_request_latency_seconds_bucket", api="Produce", le="+Inf") == value(
        before, "tidelog_request_latency_seconds_count", api="Produce"
    )
    assert value(before, "tidelog_producer_ids") >= 0  # present even before transactions exist

    # A group reads partition 0 entirely and commits offset 7 on partition 1: lag 0 and 8.
    c = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": "meter-group",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.assign([TopicPartition("metered", 0, 0)])
    got, deadline = 0, time.monotonic() + 30
    while got < sent[0] and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got += 1
    assert got == sent[0]
    c.commit(offsets=[TopicPartition("metered", 0, sent[0]), TopicPartition("metered", 1, 7)], asynchronous=False)
    after = scrape(mport)
    assert value(after, "tidelog_topic_bytes_out_total", topic="metered") >= value(
        after, "tidelog_log_size_bytes", topic="metered", partition=0
    )
    assert value(after, "tidelog_group_lag", group="meter-group", topic="metered", partition=0) == 0
    assert value(after, "tidelog_group_lag", group="meter-group", topic="metered", partition=1) == sent[1] - 7
    assert value(after, "tidelog_group_state", group="meter-group", state="Empty") == 1
    assert value(after, "tidelog_connections") >= 1
    assert value(after, "tidelog_request_latency_seconds_count", api="OffsetCommit") >= 1
    c.close()


def test_json_log_lines_and_env_prefix(tmp_path):
    port, mport = free_port(), free_port()
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
        "KAFKA_LOG_DIRS": str(tmp_path / "data"),
        "KAFKA_METRICS_LISTENER": f"127.0.0.1:{mport}",
        "KAFKA_LOG_FORMAT": "json",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidelog", "serve", "--env-prefix", "KAFKA_"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        lines = []
        for line in proc.stderr:
            lines.append(json.loads(line))
            if "started (cluster" in lines[-1]["msg"]:
                break
        assert any(x["msg"].startswith(f"listening on PLAINTEXT://127.0.0.1:{port}") for x in lines), lines
        assert all({"ts", "level", "logger", "msg"} <= set(x) for x in lines)
        assert value(scrape(mport), "tidelog_connections") == 0
    finally:
        proc.terminate()
        proc.wait(20)


def test_env_names_map_to_properties():
    from tidelog.core.envconfig import env_overrides, env_to_property

    assert env_to_property("LOG_DIRS") == "log.dirs"
    assert env_to_property("CONFLUENT__SUPPORT___X") == "confluent_support-x"
    assert env_overrides({"KAFKA_NUM_PARTITIONS": "3", "OTHER": "1", "KAFKA_": "x"}, "KAFKA_") == ["num.partitions=3"]


def test_producer_ids_transactional_ids_and_lso(broker_factory):
    from tidelog.cli.client import KafkaClient

    mport = free_port()
    b = broker_factory({"metrics.listener": f"127.0.0.1:{mport}"})
    with KafkaClient(b.bootstrap) as c:
        assert {22, 24, 26} <= set(c.versions), "InitProducerId, AddPartitionsToTxn and EndTxn must be routed"
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("txmeter", num_partitions=1, replication_factor=1)])["txmeter"].result(10)
    assert value(scrape(mport), "tidelog_producer_ids") == 0

    idem = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True})
    idem.produce("txmeter", b"plain")
    assert idem.flush(10) == 0
    tx = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "meter-tx"})
    tx.init_transactions(30)
    tx.begin_transaction()
    for i in range(3):
        tx.produce("txmeter", b"in-txn-%d" % i)
    assert tx.flush(10) == 0

    open_txn = scrape(mport)
    assert value(open_txn, "tidelog_producer_ids") == 2
    assert value(open_txn, "tidelog_transactional_ids") == 1
    assert value(open_txn, "tidelog_high_watermark", topic="txmeter", partition=0) == 4
    assert value(open_txn, "tidelog_last_stable_offset", topic="txmeter", partition=0) == 1  # the open txn starts at 1

    tx.commit_transaction(30)
    done = scrape(mport)
    assert value(done, "tidelog_transactional_ids") == 0
    assert value(done, "tidelog_high_watermark", topic="txmeter", partition=0) == 5  # + the COMMIT marker
    assert value(done, "tidelog_last_stable_offset", topic="txmeter", partition=0) == 5
    assert value(done, "tidelog_topic_messages_in_total", topic="txmeter") == 4  # markers are not produced
