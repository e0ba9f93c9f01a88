"""ACLs and SCRAM credentials shared by the cluster (issue 22 done-when 4): a user added and ACLs
created through one broker are enforced by the others within seconds, survive a restart of every
broker, and their removal through a third broker is enforced everywhere. PLAINTEXT is the
inter-broker listener and the operator's (User:ANONYMOUS is the super user there); clients
authenticate with SCRAM-SHA-256 on each broker's SASL_PLAINTEXT listener."""

from __future__ import annotations

import uuid

import pytest
from broker_process import free_port
from cluster_process import Cluster
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from test_replication import describe, wait_for

pytestmark = pytest.mark.timeout(300)

USER, PASSWORD = "alice", "alice-secret"


def allowed(sasl_port: int, topic: str) -> str:
    """What `alice` gets for `topic` from the broker behind `sasl_port`: "ok", "denied" (topic
    authorization failed) or "unauthenticated"."""
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{sasl_port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": USER,
            "sasl.password": PASSWORD,
            "broker.address.family": "v4",
        }
    )
    try:
        md = admin.list_topics(topic=topic, timeout=5)
    except KafkaException as e:
        err = e.args[0]
        return (
            "unauthenticated"
            if err.code() in (KafkaError._AUTHENTICATION, KafkaError._TRANSPORT, KafkaError._TIMED_OUT)
            else f"error {err}"
        )
    t = md.topics.get(topic)
    if t is not None and t.error is not None and t.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        return "denied"
    return "ok" if t is not None and t.error is None else f"other {t.error if t else None}"


def test_acls_and_credentials_reach_every_broker_and_survive_a_full_restart(tmp_path):
    sasl: dict[int, int] = {}

    def extra(node: int, port: int) -> dict[str, str]:
        sasl[node] = sasl.get(node) or free_port()
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl[node]}",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
        }

    c = Cluster(tmp_path, 3, extra=extra).start()
    try:
        topic = f"sec-{uuid.uuid4().hex[:6]}"
        ops = AdminClient({"bootstrap.servers": c.brokers[1].bootstrap})
        ops.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
        wait_for(lambda: len(describe(c, topic)[0]["isr"]) == 3, 30, "the topic replicated")

        def everywhere(want: str, what: str) -> None:
            for node in c.brokers:
                wait_for(lambda node=node: allowed(sasl[node], topic) == want, 20, f"{what} on broker {node}")

        everywhere("unauthenticated", "no user yet")
        via1 = AdminClient({"bootstrap.servers": c.brokers[1].bootstrap})
        for f in via1.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), PASSWORD.encode()
                )
            ]
        ).values():
            f.result(30)
        everywhere("denied", "the user known, no ACL")  # a credential made through broker 1

        acl = AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            f"User:{USER}",
            "*",
            AclOperation.DESCRIBE,
            AclPermissionType.ALLOW,
        )
        via2 = AdminClient({"bootstrap.servers": c.brokers[2].bootstrap})
        for f in via2.create_acls([acl]).values():
            f.result(30)
        everywhere("ok", "the ACL created through broker 2")

        for b in c.brokers.values():  # every broker down, then up again
            b.stop()
        for b in c.brokers.values():
            b.start()
        c.wait_ready()
        everywhere("ok", "the ACL and the credential after a full restart")

        via3 = AdminClient({"bootstrap.servers": c.brokers[3].bootstrap})
        flt = AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None, AclOperation.ANY, AclPermissionType.ANY
        )
        for f in via3.delete_acls([flt]).values():
            assert len(f.result(30)) == 1
        everywhere("denied", "the ACL deleted through broker 3")
        listed = via1.describe_acls(
            AclBindingFilter(
                ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
            )
        ).result(30)
        assert listed == []

        # a broker down while a credential is deleted does not bring it back when it returns
        c.brokers[2].stop()
        for f in via1.alter_user_scram_credentials(
            [UserScramCredentialDeletion(USER, ScramMechanism.SCRAM_SHA_256)]
        ).values():
            f.result(30)
        c.brokers[2].start()
        c.wait_ready()
        everywhere("unauthenticated", "the user deleted through broker 1")
    finally:
        c.stop()


def test_dynamic_broker_configs_reach_every_broker_and_survive_a_full_restart(cluster):
    """kafka-configs --entity-type brokers --entity-default through one broker: every broker's
    topics follow the new default, and it is still there after every broker restarted."""
    from confluent_kafka.admin import ConfigResource

    from tidelog.cli.client import KafkaClient

    c = cluster
    topic = f"dyn-{uuid.uuid4().hex[:6]}"
    creator = AdminClient({"bootstrap.servers": c.bootstrap})  # kept alive until the result arrives
    creator.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    with KafkaClient(c.brokers[1].bootstrap) as client:
        r = client.request(
            44,
            {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": "",
                        "configs": [{"name": "log.retention.ms", "config_operation": 0, "value": "5400000"}],
                    }
                ],
                "validate_only": False,
            },
            version=1,
        )
    assert r.responses[0].error_code.value == 0, r

    def retention_on(node: int) -> str:
        admin = AdminClient({"bootstrap.servers": c.brokers[node].bootstrap})
        res = ConfigResource("TOPIC", topic)
        return admin.describe_configs([res])[res].result(20)["retention.ms"].value

    for node in c.brokers:
        wait_for(lambda node=node: retention_on(node) == "5400000", 20, f"the default on broker {node}")
    for b in c.brokers.values():
        b.stop()
    for b in c.brokers.values():
        b.start()
    c.wait_ready()
    for node in c.brokers:
        wait_for(lambda node=node: retention_on(node) == "5400000", 20, f"the default on broker {node} after restart")
