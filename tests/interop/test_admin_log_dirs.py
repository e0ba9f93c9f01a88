"""DescribeTopicPartitions (75, with cursor paging), DescribeLogDirs (35) and AlterReplicaLogDirs
(34) with kafka-python's admin client and raw requests; the authorization answers over SASL_SSL
are in test_security_acls.py. Before these were routed, every call failed ("broker does not
support")."""

from __future__ import annotations

import uuid

import pytest
from kafka import TopicPartitionReplica
from kafka.admin import KafkaAdminClient, NewTopic

from tidelog.cli.client import KafkaClient


@pytest.fixture(scope="module")
def admin(module_broker):
    a = KafkaAdminClient(bootstrap_servers=module_broker.bootstrap, request_timeout_ms=10000)
    yield a
    a.close()


@pytest.fixture(scope="module")
def topics(admin, module_broker):
    prefix = f"dtp-{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"]
    admin.create_topics([NewTopic(n, p, 1) for n, p in zip(names, (5, 1, 3))])
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": module_broker.bootstrap})
    for i in range(30):
        p.produce(names[0], value=b"x" * 100, partition=i % 5)
    p.flush(10)
    return names


def test_describe_topic_partitions_pages_by_cursor(admin, topics):
    a, b, c = topics
    whole = admin.describe_topic_partitions([c, a, b])
    got = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in whole["topics"]]
    assert got == [(a, [0, 1, 2, 3, 4]), (b, [0]), (c, [0, 1, 2])]
    assert whole["next_cursor"] is None
    assert all(t["error_code"] == 0 and t["topic_authorized_operations"] > 0 for t in whole["topics"])
    # pages of 2 partitions: the cursor walks a (0-1, 2-3, 4 + b's 0), then c
    pages, cursor = [], None
    while True:
        page = admin.describe_topic_partitions(topics, response_partition_limit=2, cursor=cursor)
        pages.append([(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in page["topics"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == [[(a, [0, 1])], [(a, [2, 3])], [(a, [4]), (b, [0])], [(c, [0, 1])], [(c, [2])]]


def test_describe_topic_partitions_unknown_topic_and_all_topics(module_broker, topics):
    client = KafkaClient(module_broker.bootstrap)
    try:
        resp = client.request(
            75, {"topics": [{"name": "no-such-topic-x"}], "response_partition_limit": 100, "cursor": None}, version=0
        )
        assert [(t.name, t.error_code.value) for t in resp.topics] == [("no-such-topic-x", 3)]
        every = client.request(75, {"topics": [], "response_partition_limit": 2000, "cursor": None}, version=0)
        names = [t.name for t in every.topics]
        assert names == sorted(names) and set(topics) <= set(names)
        bad = client.request(
            75,
            {
                "topics": [{"name": topics[0]}],
                "response_partition_limit": 10,
                "cursor": {"topic_name": "elsewhere", "partition_index": 0},
            },
            version=0,
        )
        assert bad.topics[0].error_code.value == 42  # INVALID_REQUEST: cursor outside the named topics
    finally:
        client.close()


def test_describe_log_dirs(admin, module_broker, topics):
    a = topics[0]
    result = admin.describe_log_dirs({a: [0, 1, 2, 3, 4]})
    text = repr(result)
    assert str(module_broker.data_dir.resolve()) in text
    client = KafkaClient(module_broker.bootstrap)
    try:
        for version in (1, 2, 3, 4):
            resp = client.request(35, {"topics": [{"topic": a, "partitions": [0, 1, 2, 3, 4, 9]}]}, version=version)
            (res,) = resp.results
            assert res.error_code.value == 0 and res.log_dir == str(module_broker.data_dir.resolve())
            (topic,) = res.topics
            parts = {p.partition_index: p for p in topic.partitions}
            assert sorted(parts) == [0, 1, 2, 3, 4]  # 9 does not exist: left out
            assert sum(p.partition_size for p in parts.values()) > 30 * 100
            assert all(p.offset_lag == 0 and not p.is_future_key for p in parts.values())
            if version >= 4:
                assert res.total_bytes > 0 and 0 <= res.usable_bytes <= res.total_bytes
        everything = client.request(35, {"topics": None}, version=2)
        assert {t.name for t in everything.results[0].topics} >= set(topics)
    finally:
        client.close()


def test_alter_replica_log_dirs_on_one_log_dir(admin, module_broker, topics):
    a = topics[0]
    here = str(module_broker.data_dir.resolve())
    client = KafkaClient(module_broker.bootstrap)
    try:
        resp = client.request(
            34,
            {
                "dirs": [
                    {
                        "path": here,
                        "topics": [{"name": a, "partitions": [0, 1]}, {"name": "nope-topic", "partitions": [0]}],
                    },
                    {"path": "/not/a/log/dir", "topics": [{"name": a, "partitions": [2]}]},
                ]
            },
            version=2,
        )
        codes = {(t.topic_name, p.partition_index): p.error_code.value for t in resp.results for p in t.partitions}
        assert codes == {(a, 0): 0, (a, 1): 0, ("nope-topic", 0): 3, (a, 2): 57}  # 57 LOG_DIR_NOT_FOUND
    finally:
        client.close()
    # kafka-python's admin call reaches the broker and gets the same answer
    from kafka.errors import KafkaStorageError, LogDirNotFoundError, NoError

    out = admin.alter_replica_log_dirs({TopicPartitionReplica(a, 0, 1): here})
    assert out == {TopicPartitionReplica(a, 0, 1): NoError}
    out = admin.alter_replica_log_dirs({TopicPartitionReplica(a, 1, 1): "/not/a/log/dir"})
    assert out[TopicPartitionReplica(a, 1, 1)] in (LogDirNotFoundError, KafkaStorageError)
