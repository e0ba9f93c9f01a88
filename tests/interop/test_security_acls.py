"""ACLs against real clients over SASL_SSL: unauthorized producers, consumers, groups and
transactional ids get Kafka's error codes, Metadata hides topics, `tidelog acls` / `tidelog users`
drive the ACL and SCRAM APIs. admin (PLAIN) is a super user; bob (PLAIN) and alice (SCRAM-SHA-512)
start with no rights. About 60 s."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "security"))

from rawclient import connect, sasl_plain
from secure_broker import ADMIN, ALICE, BOB, start_secure_broker

pytestmark = pytest.mark.interop

TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = 29, 30, 31, 53


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    b = start_secure_broker(tmp_path_factory.mktemp("acls"))
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(b.confluent(ADMIN, "PLAIN"))
    for fut in admin.create_topics(
        [NewTopic(t, 1) for t in ("acl-secret", "acl-open", "acl-consume", "acl-txn")], request_timeout=20
    ).values():
        fut.result()
    yield b
    b.process.stop()


def _tidelog(secure, tmp_path, *args) -> subprocess.CompletedProcess:
    cfg = secure.command_config(tmp_path / "admin.properties")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog",
            *args,
            "--bootstrap-server",
            secure.sasl_bootstrap,
            "--command-config",
            str(cfg),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _grant(secure, tmp_path, *args) -> None:
    r = _tidelog(secure, tmp_path, "acls", "add", *args)
    assert r.returncode == 0, r.stderr


def _produce_error(conf: dict, topic: str) -> int | None:
    from confluent_kafka import Producer

    reports = []
    p = Producer({**conf, "message.timeout.ms": 8000})
    p.produce(topic, b"v", on_delivery=lambda err, msg: reports.append(err))
    p.flush(15)
    assert reports, "no delivery report"
    return None if reports[0] is None else reports[0].code()


def test_metadata_hides_unauthorized_topics(secure):
    from confluent_kafka.admin import AdminClient

    assert {"acl-secret", "acl-open"} <= set(
        AdminClient(secure.confluent(ADMIN, "PLAIN")).list_topics(timeout=10).topics
    )
    assert "acl-secret" not in AdminClient(secure.confluent(BOB, "PLAIN")).list_topics(timeout=10).topics
    bob = connect(secure.sasl_port, str(secure.pki.ca))
    sasl_plain(bob, *BOB)
    md = bob.request(3, {"topics": [{"name": "acl-secret"}], "allow_auto_topic_creation": True}, version=9)
    assert [(t.name, t.error_code.value) for t in md.topics] == [("acl-secret", TOPIC_DENIED)]
    # v0: an empty topic list means "every topic"; naming only forbidden topics must not turn into
    # that (it listed every topic, __consumer_offsets included, before the authz difference test)
    for v in (0, 1, 4):
        md = bob.request(3, {"topics": [{"name": "acl-secret"}], "allow_auto_topic_creation": False}, version=v)
        assert [(t.name, t.error_code.value) for t in md.topics] == [("acl-secret", TOPIC_DENIED)], v
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AclOperation

    admin = AdminClient(secure.confluent(ADMIN, "PLAIN"))
    described = admin.describe_topics(TopicCollection(["acl-secret"]), include_authorized_operations=True)[
        "acl-secret"
    ].result()
    assert {AclOperation.READ, AclOperation.WRITE, AclOperation.ALTER_CONFIGS} <= set(described.authorized_operations)


def test_unauthorized_producer_then_granted(secure, tmp_path):
    from confluent_kafka import KafkaError

    conf = secure.confluent(BOB, "PLAIN")
    assert _produce_error(conf, "acl-open") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(secure, tmp_path, "--allow-principal", "User:bob", "--operation", "Write", "--topic", "acl-open")
    assert _produce_error(conf, "acl-open") is None
    # kafka-python sees the same refusal on a topic it may not write
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    producer = KafkaProducer(**secure.kafka_python(BOB, "PLAIN"), max_block_ms=8000)
    with pytest.raises(TopicAuthorizationFailedError):
        producer.send("acl-secret", b"x").get(timeout=15)
    producer.close()


def test_deny_wins_over_a_prefixed_allow(secure, tmp_path):
    from confluent_kafka import KafkaError

    _grant(
        secure,
        tmp_path,
        "--allow-principal",
        "User:alice",
        "--operation",
        "All",
        "--topic",
        "deny-",
        "--resource-pattern-type",
        "prefixed",
    )
    _grant(secure, tmp_path, "--deny-principal", "User:alice", "--operation", "Write", "--topic", "deny-this")
    conf = secure.confluent(ALICE)
    assert _produce_error(conf, "deny-that") is None
    assert _produce_error(conf, "deny-this") == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_consumer_needs_read_on_topic_and_group(secure, tmp_path):
    from confluent_kafka import Consumer, KafkaError

    assert _produce_error(secure.confluent(ADMIN, "PLAIN"), "acl-consume") is None
    conf = {**secure.confluent(BOB, "PLAIN"), "group.id": "acl-group", "auto.offset.reset": "earliest"}

    def first_error_or_message():
        c = Consumer(conf)
        c.subscribe(["acl-consume"])
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                return m.error().code() if m.error() else m.value()
        finally:
            c.close()
        return None

    _grant(secure, tmp_path, "--allow-principal", "User:bob", "--operation", "Describe", "--topic", "acl-consume")
    assert first_error_or_message() == KafkaError.GROUP_AUTHORIZATION_FAILED
    _grant(secure, tmp_path, "--allow-principal", "User:bob", "--operation", "Read", "--group", "acl-group")
    assert first_error_or_message() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(
        secure,
        tmp_path,
        "--allow-principal",
        "User:bob",
        "--consumer",
        "--topic",
        "acl-consume",
        "--group",
        "acl-group",
    )
    assert first_error_or_message() == b"v"


def test_group_and_cluster_apis_refused_with_codes(secure):
    bob = connect(secure.sasl_port, str(secure.pki.ca))
    sasl_plain(bob, *BOB)
    fc = bob.request(10, {"key": "secret-group", "key_type": 0}, version=3)
    assert fc.error_code.value == GROUP_DENIED
    fc = bob.request(10, {"key": "some-txn", "key_type": 1}, version=3)
    assert fc.error_code.value == TXN_DENIED
    assert (
        bob.request(
            29, {"resource_type_filter": 1, "pattern_type_filter": 1, "operation": 1, "permission_type": 1}, version=1
        ).error_code.value
        == CLUSTER_DENIED
    )
    created = bob.request(
        30,
        {
            "creations": [
                {
                    "resource_type": 2,
                    "resource_name": "x",
                    "resource_pattern_type": 3,
                    "principal": "User:bob",
                    "host": "*",
                    "operation": 2,
                    "permission_type": 3,
                }
            ]
        },
        version=1,
    )
    assert created.results[0].error_code.value == CLUSTER_DENIED
    assert bob.request(50, {"users": None}, version=0).error_code.value == CLUSTER_DENIED
    dg = bob.request(42, {"groups_names": ["secret-group"]}, version=1)
    assert dg.results[0].error_code.value == GROUP_DENIED


def test_cluster_authorized_operations_as_kafka(secure):
    """DescribeCluster answers every principal (operations 0 without Describe on the cluster);
    Metadata v8-10 fill cluster_authorized_operations when asked (was left at INT32_MIN)."""
    all_ops = sum(1 << o for o in (5, 7, 8, 9, 10, 11, 12))
    bob = connect(secure.sasl_port, str(secure.pki.ca))
    sasl_plain(bob, *BOB)
    admin = connect(secure.sasl_port, str(secure.pki.ca))
    sasl_plain(admin, *ADMIN)
    for client, ops in ((bob, 0), (admin, all_ops)):
        dc = client.request(60, {"include_cluster_authorized_operations": True}, version=1)
        assert dc.error_code.value == 0 and len(dc.brokers) == 1
        assert dc.cluster_authorized_operations == ops
        for version in (8, 9, 10):
            md = client.request(
                3,
                {
                    "topics": [],
                    "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": True,
                    "include_topic_authorized_operations": False,
                },
                version=version,
            )
            assert md.cluster_authorized_operations == ops, version
    dc = bob.request(60, {"include_cluster_authorized_operations": False}, version=0)
    assert dc.error_code.value == 0 and dc.cluster_authorized_operations == -2147483648


def test_log_dir_and_topic_partition_apis_authorized_as_kafka(secure):
    bob = connect(secure.sasl_port, str(secure.pki.ca))
    sasl_plain(bob, *BOB)
    admin = connect(secure.sasl_port, str(secure.pki.ca))
    sasl_plain(admin, *ADMIN)
    denied = bob.request(35, {"topics": None}, version=3)
    assert denied.error_code.value == CLUSTER_DENIED and denied.results == ()
    assert admin.request(35, {"topics": None}, version=3).results[0].error_code.value == 0
    moved = bob.request(
        34, {"dirs": [{"path": "/x", "topics": [{"name": "acl-secret", "partitions": [0]}]}]}, version=2
    )
    assert moved.results[0].partitions[0].error_code.value == CLUSTER_DENIED
    # DescribeTopicPartitions: hidden from bob's listing, refused when named; admin sees it
    listing = bob.request(75, {"topics": [], "response_partition_limit": 100, "cursor": None}, version=0)
    assert "acl-secret" not in [t.name for t in listing.topics]
    named = bob.request(
        75, {"topics": [{"name": "acl-secret"}], "response_partition_limit": 100, "cursor": None}, version=0
    )
    assert named.topics[0].error_code.value == TOPIC_DENIED
    seen = admin.request(
        75, {"topics": [{"name": "acl-secret"}], "response_partition_limit": 100, "cursor": None}, version=0
    )
    assert seen.topics[0].error_code.value == 0 and len(seen.topics[0].partitions) == 1


def test_transactional_id_needs_write(secure, tmp_path):
    from confluent_kafka import KafkaException, Producer

    probe = connect(secure.sasl_port, str(secure.pki.ca))
    versions = {k.api_key for k in probe.request(18, {}, version=0).api_keys}
    assert 22 in versions, "InitProducerId must be routed"
    _grant(secure, tmp_path, "--allow-principal", "User:alice", "--operation", "All", "--topic", "acl-txn")
    conf = {**secure.confluent(ALICE), "transactional.id": "alice-txn"}
    with pytest.raises(KafkaException) as info:
        Producer(conf).init_transactions(15)
    assert info.value.args[0].code() == TXN_DENIED
    _grant(
        secure,
        tmp_path,
        "--allow-principal",
        "User:alice",
        "--producer",
        "--topic",
        "acl-txn",
        "--transactional-id",
        "alice-txn",
    )
    p = Producer(conf)
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("acl-txn", b"t")
    p.flush(15)
    # sendOffsetsToTransaction needs Read on the group
    from confluent_kafka import Consumer, TopicPartition

    group = Consumer({**secure.confluent(ALICE), "group.id": "alice-txn-group"}).consumer_group_metadata()
    with pytest.raises(KafkaException) as info:
        p.send_offsets_to_transaction([TopicPartition("acl-txn", 0, 1)], group, 15)
    assert info.value.args[0].code() == GROUP_DENIED
    p.abort_transaction(15)
    _grant(secure, tmp_path, "--allow-principal", "User:alice", "--operation", "Read", "--group", "alice-txn-group")
    p.begin_transaction()
    p.produce("acl-txn", b"t2")
    p.send_offsets_to_transaction([TopicPartition("acl-txn", 0, 1)], group, 15)
    p.commit_transaction(15)


def test_control_batches_are_never_accepted_from_clients(secure):
    from tidelog.log.records import build_control_batch

    admin = connect(secure.sasl_port, str(secure.pki.ca))
    sasl_plain(admin, *ADMIN)
    batch = build_control_batch(
        1, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=int(time.time() * 1000)
    )
    resp = admin.request(
        0,
        {
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": "acl-open", "partition_data": [{"index": 0, "records": batch}]}],
        },
        version=8,
    )
    assert resp.responses[0].partition_responses[0].error_code.value == 87  # INVALID_RECORD


def test_acls_cli_list_and_remove(secure, tmp_path):
    _grant(secure, tmp_path, "--allow-principal", "User:carol", "--operation", "Read", "--topic", "cli-topic")
    listed = _tidelog(secure, tmp_path, "acls", "list", "--topic", "cli-topic")
    assert listed.returncode == 0, listed.stderr
    assert (
        "TOPIC:LITERAL:cli-topic (principal=User:carol, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout
    )
    removed = _tidelog(secure, tmp_path, "acls", "remove", "--topic", "cli-topic")
    assert removed.returncode == 0 and "User:carol" in removed.stdout, removed
    assert "User:carol" not in _tidelog(secure, tmp_path, "acls", "list", "--topic", "cli-topic").stdout
    # (librdkafka drops DescribeAcls' top-level error, so bob's refusal is checked on `add`)
    denied = subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog",
            "acls",
            "add",
            "--allow-principal",
            "User:bob",
            "--operation",
            "All",
            "--cluster",
            "--bootstrap-server",
            secure.sasl_bootstrap,
            "--command-config",
            str(secure.command_config(tmp_path / "bob.properties", BOB)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert denied.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in denied.stderr, denied


def test_users_cli_creates_scram_credentials_online(secure, tmp_path):
    from confluent_kafka.admin import AdminClient

    r = _tidelog(
        secure,
        tmp_path,
        "users",
        "add",
        "--user",
        "dave",
        "--password",
        "dave-pw",
        "--mechanism",
        "SCRAM-SHA-256",
        "--iterations",
        "8192",
    )
    assert r.returncode == 0, r.stderr
    listed = _tidelog(secure, tmp_path, "users", "list")
    assert "dave: SCRAM-SHA-256 (iterations=8192)" in listed.stdout, listed
    assert "alice: SCRAM-SHA-512 (iterations=4096)" in listed.stdout
    AdminClient(secure.confluent(("dave", "dave-pw"), "SCRAM-SHA-256")).list_topics(timeout=10)
    assert (
        _tidelog(secure, tmp_path, "users", "add", "--user", "eve", "--password", "p", "--iterations", "100").returncode
        == 1
    )  # UNACCEPTABLE_CREDENTIAL
    assert (
        _tidelog(secure, tmp_path, "users", "delete", "--user", "dave", "--mechanism", "SCRAM-SHA-256").returncode == 0
    )
    assert "dave" not in _tidelog(secure, tmp_path, "users", "list").stdout


def test_kafka_python_group_and_transactional_id_refused(secure, tmp_path):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import GroupAuthorizationFailedError, TransactionalIdAuthorizationFailedError

    _grant(secure, tmp_path, "--allow-principal", "User:bob", "--operation", "Read", "--topic", "acl-secret")
    consumer = KafkaConsumer(
        "acl-secret", group_id="kp-denied", consumer_timeout_ms=10000, **secure.kafka_python(BOB, "PLAIN")
    )
    with pytest.raises(GroupAuthorizationFailedError):
        for _ in range(20):
            consumer.poll(timeout_ms=500)
    consumer.close()
    producer = KafkaProducer(transactional_id="bob-tx", **secure.kafka_python(BOB, "PLAIN"))
    with pytest.raises(TransactionalIdAuthorizationFailedError):
        producer.init_transactions()
    producer.close(timeout=2)


def test_acl_api_validation(secure):
    admin = connect(secure.sasl_port, str(secure.pki.ca))
    sasl_plain(admin, *ADMIN)
    created = admin.request(
        30,
        {
            "creations": [
                {
                    "resource_type": 2,
                    "resource_name": "v",
                    "resource_pattern_type": 2,
                    "principal": "User:x",
                    "host": "*",
                    "operation": 3,
                    "permission_type": 3,
                },  # MATCH is a filter, not a pattern
                {
                    "resource_type": 4,
                    "resource_name": "other",
                    "resource_pattern_type": 3,
                    "principal": "User:x",
                    "host": "*",
                    "operation": 7,
                    "permission_type": 3,
                },  # the cluster is kafka-cluster
                {
                    "resource_type": 5,
                    "resource_name": "tx",
                    "resource_pattern_type": 3,
                    "principal": "User:x",
                    "host": "*",
                    "operation": 4,
                    "permission_type": 3,
                },
            ]
        },
        version=2,
    )
    assert [r.error_code.value for r in created.results] == [42, 42, 0]  # INVALID_REQUEST
    described = admin.request(
        29, {"resource_type_filter": 0, "pattern_type_filter": 1, "operation": 1, "permission_type": 1}, version=2
    )
    assert described.error_code.value == 42
    found = admin.request(
        29,
        {
            "resource_type_filter": 5,
            "resource_name_filter": "tx",
            "pattern_type_filter": 1,
            "principal_filter": "User:x",
            "operation": 1,
            "permission_type": 1,
        },
        version=3,
    )
    assert [(r.resource_name, [a.operation for a in r.acls]) for r in found.resources] == [("tx", [4])]
    deleted = admin.request(
        31,
        {
            "filters": [
                {
                    "resource_type_filter": 5,
                    "resource_name_filter": "tx",
                    "pattern_type_filter": 1,
                    "operation": 1,
                    "permission_type": 1,
                },
                {"resource_type_filter": 1, "pattern_type_filter": 1, "operation": 0, "permission_type": 1},
            ]
        },
        version=3,
    )
    assert [len(r.matching_acls) for r in deleted.filter_results] == [1, 0]
    assert [r.error_code.value for r in deleted.filter_results] == [0, 42]
