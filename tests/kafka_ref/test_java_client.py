"""Kafka's own Java client (kafka-clients 4.3.1) against tidelog: an idempotent producer, a
transactional consume-transform-produce copy with aborts and read_committed readers, a consumer
group with cooperative-sticky rebalancing and static members, a consumer group of Kafka 4's
consumer protocol (KIP-848: static members, a regex subscription), share groups with
KafkaShareConsumer (KIP-932: explicit and implicit acknowledgement, RELEASE then redelivery with its
delivery count, REJECT, a lock timing out, three consumers on one partition, the share-offsets
admin calls), and the AdminClient (topics,
configs, list offsets by time and max timestamp, group offsets, delete records, describe
producers and transactions).

`java/clients/ClientChecks.java` is compiled once per session with javac against Kafka's
classpath (`make kafka-jars`); each check prints one JSON line asserted on here. About 60 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from broker_process import BrokerProcess, free_port  # noqa: E402
from kafka_process import classpath  # noqa: E402
from request_versions import used_since, versions_of, versions_used  # noqa: E402

pytestmark = pytest.mark.interop

METRICS_PORT = free_port()
BROKER_OVERRIDES = {
    "metrics.listener": f"127.0.0.1:{METRICS_PORT}",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.record.lock.duration.ms": "1000",  # the share check uses a 2 s lock
}


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory) -> list[str]:
    """The command that runs `ClientChecks` (java/clients compiled once per session)."""
    cp = classpath()
    out = tmp_path_factory.mktemp("java-classes")
    subprocess.run(
        ["javac", "-cp", cp, "-d", str(out), *map(str, sorted((ROOT / "java" / "clients").glob("*.java")))],
        check=True,
        capture_output=True,
        text=True,
        timeout=180,
    )
    log4j = out / "log4j2.properties"
    log4j.write_text(
        "status = warn\nappender.c.type = Console\nappender.c.name = E\nappender.c.target = SYSTEM_ERR\n"
        "appender.c.layout.type = PatternLayout\nappender.c.layout.pattern = %p %m%n\n"
        "rootLogger.level = WARN\nrootLogger.appenderRef.e.ref = E\n"
    )
    return ["java", "-Xmx256m", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{out}:{cp}", "ClientChecks"]


@pytest.fixture(scope="session")
def java_checks(java_classes):
    def run(bootstrap: str, check: str, *extra: str) -> dict:
        r = subprocess.run(
            [*java_classes, bootstrap, check, f"j{uuid.uuid4().hex[:6]}", *extra],
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert r.returncode == 0, f"{check}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
        return json.loads([line for line in r.stdout.splitlines() if line.startswith("{")][-1])

    return run


def test_idempotent_producer(module_broker, java_checks):
    r = java_checks(module_broker.bootstrap, "idempotent")
    assert r == {"sent": 3000, "read": 3000, "distinct": 3000, "ordered": True}


def _eos_copy_correct(r: dict) -> None:
    assert r["aborted"] >= 1 and r["transactions"] > r["aborted"]
    assert r["all_present"] and r["duplicates"] == 0 and r["read_committed"] == r["inputs"]
    assert r["read_uncommitted"] > r["read_committed"]  # the aborted copies are in the log, hidden


def test_transactional_copy_with_aborts(module_broker, java_checks):
    """The Java producer runs transaction version 2 (KIP-890 part 2), which tidelog finalizes:
    Produce v12+ with no AddPartitionsToTxn, TxnOffsetCommit v5 with no AddOffsetsToTxn, EndTxn v5
    (an epoch bump per transaction)."""
    before = versions_used(METRICS_PORT)
    r = java_checks(module_broker.bootstrap, "eos")
    _eos_copy_correct(r)
    used = used_since(before, versions_used(METRICS_PORT))
    assert versions_of(used, "EndTxn") == {5} and used[("EndTxn", 5)] >= r["transactions"]
    assert versions_of(used, "TxnOffsetCommit") == {5}
    assert min(versions_of(used, "Produce")) >= 12
    assert not versions_of(used, "AddPartitionsToTxn") and not versions_of(used, "AddOffsetsToTxn")
    assert versions_of(used, "InitProducerId") == {5}


def test_transactional_copy_with_transaction_version_1(tmp_path, java_checks):
    """`transaction.version=1` keeps clients on transaction version 1, as a Kafka cluster whose
    feature is finalized at 1: the Java producer adds its partitions and offsets itself, caps
    Produce at v11 and ends with EndTxn v4 (and InitProducerId v5, as against Kafka)."""
    port = free_port()
    overrides = {**BROKER_OVERRIDES, "metrics.listener": f"127.0.0.1:{port}", "transaction.version": "1"}
    broker = BrokerProcess(tmp_path / "data", overrides).start()
    try:
        r = java_checks(broker.bootstrap, "eos")
        _eos_copy_correct(r)
        used = versions_used(port)
    finally:
        broker.stop()
    assert versions_of(used, "EndTxn") == {4}
    assert versions_of(used, "TxnOffsetCommit") == {4}
    assert versions_of(used, "AddPartitionsToTxn") == {3} and versions_of(used, "AddOffsetsToTxn") == {4}
    # the transactional producer's Produce stays at v11; the plain input producer uses v13 (ids)
    assert 11 in versions_of(used, "Produce") and 12 not in versions_of(used, "Produce")


def test_cooperative_sticky_static_group(module_broker, java_checks):
    r = java_checks(module_broker.bootstrap, "groups")
    assert r["seen"] == r["records"] == 400
    assert r["first"] >= 1 and r["second"] >= 1 and r["first"] + r["second"] == 4 and r["overlap"] == 0
    assert r["committed_total"] == 400


def test_consumer_protocol_group(module_broker, java_checks):
    """KIP-848 with KafkaConsumer's group.protocol=consumer."""
    r = java_checks(module_broker.bootstrap, "consumer-protocol")
    assert r["seen"] >= r["records"] == 600 and r["committed_total"] == 600
    assert r["max_overlap"] == 0  # no partition owned by both members at once
    assert r["first_after_leave"] == 3 and r["back_same"] is True  # the static member's partitions waited
    assert r["regex_partitions"] == 3 and r["type"] == "Consumer"


def test_share_consumer(module_broker, java_checks):
    """KIP-932 with KafkaShareConsumer and the AdminClient's share-group calls."""
    r = java_checks(module_broker.bootstrap, "share")
    assert r["explicit_first"] == 10 and r["acquisition_lock_ms"] == 30000
    assert r["redelivered"] == "x3" and r["redelivery_count"] == 2  # released: again, counted; x5 rejected
    assert (r["start_offset"], r["lag"]) == (10, 0)
    assert r["held"] == 5 and r["lock_redelivered"] == 5 and r["lock_delivery_count"] == 2
    assert r["several_distinct"] == 200 and r["several_duplicates"] == 0
    assert r["several_consumers_with_records"] >= 2
    assert (r["altered_start"], r["altered_lag"]) == (4, 6)
    assert r["after_rewind"] == "x4,x5,x6,x7,x8,x9" and r["after_delete"] == 0
    assert r["described_state"] == "Empty"


def test_admin_client(module_broker, java_checks):
    r = java_checks(module_broker.bootstrap, "admin")
    assert r["described_partitions"] == 2
    assert r["retention_ms"] == "3600000" and r["retention_bytes_type"] == "LONG"
    assert (r["earliest"], r["latest"], r["for_timestamp"]) == (0, 10, 4)
    assert (r["max_timestamp_offset"], r["max_timestamp"]) == (9, 1_767_225_609_000)
    assert (r["earliest_local"], r["latest_tiered"], r["earliest_pending_upload"]) == (0, -1, -1)  # ListOffsets 8-11
    assert (r["cluster_nodes"], r["fenced_nodes"]) == (1, 0)  # DescribeCluster 2
    assert (r["listed_by_pattern"], r["listed_by_other_pattern"]) == (1, 0)  # ListTransactions 2
    assert r["group_offset"] == 4 and r["group_offset_after_delete"] is True
    assert r["earliest_after_delete"] == 3
    assert r["producers_on_partition"] == 1 and r["listed_transactions"] == 1
    assert r["transaction_state"] == "Ongoing"
    assert r["deleted"] is True


def _java_sasl_properties(path: Path, ca: Path, user: tuple[str, str]) -> Path:
    path.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user[0]}" password="{user[1]}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={ca}\n"
    )
    return path


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "tests" / "security"))
    from secure_broker import start_secure_broker

    b = start_secure_broker(tmp_path_factory.mktemp("java-acls"))
    try:
        yield b
    finally:
        b.process.stop()


def test_admin_client_acls_with_an_authorizer(secure_broker, java_checks, tmp_path):
    """The Java AdminClient (as a super user over SASL_SSL) creates, lists and deletes ACLs; the
    user's writes follow them: denied, then allowed by a PREFIXED grant, denied again once it is
    deleted."""
    from secure_broker import ADMIN, BOB

    ca = secure_broker.pki.ca
    admin = _java_sasl_properties(tmp_path / "admin.properties", ca, ADMIN)
    bob = _java_sasl_properties(tmp_path / "bob.properties", ca, BOB)
    r = java_checks(secure_broker.sasl_bootstrap, "acls", str(admin), str(bob))
    assert r["before_grant"] == "TopicAuthorizationException"
    assert r["listed"] == 2 and r["listed_prefixed"] is True
    assert r["after_grant"] == "ok"
    assert r["other_topic"] == "TopicAuthorizationException"  # the prefix does not cover it
    # with no WRITE left anywhere, the idempotent Java producer's InitProducerId is refused first:
    # CLUSTER_AUTHORIZATION_FAILED, as Kafka (KIP-679: IDEMPOTENT_WRITE is implied by WRITE on a topic)
    assert r["deleted"] == 1 and r["after_delete"] == "ClusterAuthorizationException"
    assert r["listed_after_delete"] == 1


def test_kafka_acls_tool(secure_broker, tmp_path):
    """kafka-acls (org.apache.kafka.tools.AclCommand) adds, lists and removes ACLs on tidelog."""
    from secure_broker import ADMIN

    cp = classpath()
    admin = _java_sasl_properties(tmp_path / "admin.properties", secure_broker.pki.ca, ADMIN)
    topic = f"acl-tool-{uuid.uuid4().hex[:6]}"

    def acls(*args: str) -> str:
        r = subprocess.run(
            [
                "java",
                "-Xmx256m",
                "-cp",
                cp,
                "org.apache.kafka.tools.AclCommand",
                "--bootstrap-server",
                secure_broker.sasl_bootstrap,
                "--command-config",
                str(admin),
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
        return r.stdout

    acls(
        "--add",
        "--allow-principal",
        "User:carol",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        topic,
        "--group",
        "carols",
    )
    listed = acls("--list", "--topic", topic)
    assert "principal=User:carol" in listed and "operation=READ" in listed and "operation=DESCRIBE" in listed
    assert "User:carol" in acls("--list", "--group", "carols")
    acls("--remove", "--allow-principal", "User:carol", "--operation", "Read", "--topic", topic, "--force")
    listed = acls("--list", "--topic", topic)
    assert "operation=READ" not in listed and "operation=DESCRIBE" in listed
    acls("--remove", "--topic", topic, "--group", "carols", "--force")
    assert "principal=User:carol" not in acls("--list", "--principal", "User:carol")
