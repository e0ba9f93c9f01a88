"""Peer tests: confluent-kafka-python's own integration tests (tests/integration of its pinned
commit, fetched at test time by `confluent_suite.py`, never committed here) against one tidelog
broker, with the KIP-848 consumer protocol (`TEST_CONSUMER_GROUP_PROTOCOL=consumer`) and the
KIP-932 share consumer.

The broker is set up as the suite's trivup cluster is: an authorizer that lets everyone in while
a resource has no ACL (the admin tests create, describe and delete ACLs), a SASL_PLAINTEXT
listener with PLAIN user `sasl_user` (the suite's `sasl_cluster`), 1 s share acquisition locks
(the suite's `group.share.record.lock.duration.ms`), and a cluster-wide dynamic
`min.insync.replicas`, which Kafka 4's KRaft format writes and the admin tests expect to see on
every topic.

`pytest tests/peers` runs a part (`confluent_suite.SUBSET`, a few minutes); `make peer-tests`
(TIDELOG_PEERS=full) runs all of it (`confluent_suite.FULL`), and the share consumer's part of
SUBSET once more against a three-broker cluster (etcd, share state replicated), where the share
coordinator, the group coordinator and the partitions' leaders are different brokers. What is
deselected, and why, is in `confluent_suite.DESELECTED` (and in the README's Compatibility section).
`make test` leaves this file out: the suite comes from GitHub, which a clean CI machine may not reach.
"""

from __future__ import annotations

import os

import confluent_suite as suite
import pytest
from broker_process import BrokerProcess, free_port
from cluster_process import Cluster

from tidelog.cli.client import KafkaClient

pytestmark = [pytest.mark.interop, pytest.mark.timeout(3600)]

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="sasl_user" password="sasl_user" user_sasl_user="sasl_user";'
)
FULL = os.environ.get("TIDELOG_PEERS") == "full"
SHARE_LOCKS = {  # the suite's broker_conf: 1 s acquisition locks for its redelivery tests
    "group.share.record.lock.duration.ms": "1000",
    "group.share.min.record.lock.duration.ms": "1000",
}

# Skips the suite decides itself whatever the broker (its own skip marks): any other skip is a
# test that found the broker wanting (e.g. "broker does not allow ...") and fails the peer test.
SUITE_SKIPS = {
    # "session.timeout.ms is not supported on client side for consumer protocol"
    "tests/integration/consumer/test_consumer_error.py::test_consume_error_commit",
    "tests/integration/consumer/test_consumer_error.py::test_consume_error_store_offsets",
    # "TODO KIP-932: flaky - rotates a live consumer to invalid SASL creds ..."
    "tests/integration/share_consumer_sasl/test_share_consumer_sasl.py::"
    "test_set_sasl_credentials_during_active_consumption[sasl_cluster0]",
}


@pytest.fixture(scope="module")
def tidelog(tmp_path_factory):
    port, sasl_port = free_port(), free_port()
    broker = BrokerProcess(
        tmp_path_factory.mktemp("peers") / "data",
        {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
            **SHARE_LOCKS,
            "offsets.topic.num.partitions": "3",
            "share.coordinator.state.topic.num.partitions": "3",
        },
        port=port,
    ).start()
    with KafkaClient(broker.bootstrap) as c:  # the cluster-wide default Kafka 4's format writes
        resp = c.request(
            44,
            {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": "",
                        "configs": [{"name": "min.insync.replicas", "config_operation": 0, "value": "1"}],
                    }
                ],
                "validate_only": False,
            },
        )
        assert resp.responses[0].error_code == 0
    yield broker, f"127.0.0.1:{sasl_port}"
    broker.stop()


@pytest.fixture(scope="module")
def tidelog_cluster(tmp_path_factory):
    overrides = {
        **SHARE_LOCKS,
        "offsets.topic.num.partitions": "3",
        "share.coordinator.state.topic.num.partitions": "3",
    }
    cluster = Cluster(tmp_path_factory.mktemp("peers-cluster"), 3, overrides, name="peers").start()
    yield cluster
    cluster.stop()


@pytest.mark.parametrize("part", ["clients", "share", *(["share-cluster"] if FULL else [])])
def test_confluent_kafka_python_integration_suite(request, part):
    if part == "share-cluster":
        cluster = request.getfixturevalue("tidelog_cluster")
        out = suite.run_suite(cluster.bootstrap, "", suite.SUBSET["share"])
        logs = cluster.logs()
    else:
        broker, sasl_bootstrap = request.getfixturevalue("tidelog")
        out = suite.run_suite(broker.bootstrap, sasl_bootstrap, (suite.FULL if FULL else suite.SUBSET)[part])
        logs = broker.log()
    print(out.summary())
    report = f"{out.summary()}\n--- suite output ---\n{out.output}\n--- broker log ---\n{logs}"
    assert out.passed, report  # something ran
    assert not out.failed and out.returncode == 0, report
    unexpected = {t: why for t, why in out.skipped.items() if t not in SUITE_SKIPS}
    assert not unexpected, report
