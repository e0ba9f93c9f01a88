"""Dynamic broker configs on a single node (kafka-configs --entity-type brokers): set through
IncrementalAlterConfigs / AlterConfigs with confluent-kafka's AdminClient, shown by DescribeConfigs
with Kafka's sources, applied to topics without their own override at once, kept across a
restart; static-only keys and bad values refused."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)


def describe(admin: AdminClient, rtype, name: str) -> dict:
    res = ConfigResource(rtype, name)
    return admin.describe_configs([res])[res].result(20)


def alter(admin: AdminClient, name: str, *entries: tuple[str, str | None], bootstrap: str = "") -> None:
    """IncrementalAlterConfigs on a BROKER resource: confluent-kafka for a broker id; the
    cluster-wide default ("", which confluent-kafka refuses to name) with a raw request."""
    if name:
        ops = [
            ConfigEntry(
                k, v, incremental_operation=AlterConfigOpType.SET if v is not None else AlterConfigOpType.DELETE
            )
            for k, v in entries
        ]
        res = ConfigResource(ResourceType.BROKER, name, incremental_configs=ops)
        admin.incremental_alter_configs([res])[res].result(20)
        return
    from tidelog.cli.client import KafkaClient

    with KafkaClient(bootstrap) as client:
        r = client.request(
            44,
            {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": "",
                        "configs": [
                            {"name": k, "config_operation": 0 if v is not None else 1, "value": v} for k, v in entries
                        ],
                    }
                ],
                "validate_only": False,
            },
            version=1,
        )
    code = r.responses[0].error_code.value
    if code:
        raise RuntimeError(f"error {code}: {r.responses[0].error_message}")


def test_cluster_default_and_per_broker_values_apply_to_topics_and_survive_a_restart(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("dyn", 1, 1), NewTopic("own", 1, 1, config={"retention.ms": "1000"})])["dyn"].result(
        20
    )
    assert describe(admin, ResourceType.TOPIC, "dyn")["retention.ms"].value == str(7 * 24 * 3600 * 1000)
    alter(admin, "", ("log.retention.ms", "3600000"), bootstrap=broker.bootstrap)  # every broker's default
    topic = describe(admin, ResourceType.TOPIC, "dyn")["retention.ms"]
    assert topic.value == "3600000" and topic.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert describe(admin, ResourceType.TOPIC, "own")["retention.ms"].value == "1000"  # its override wins
    alter(admin, "1", ("log.retention.ms", "7200000"))  # this broker's own value wins over the default
    entry = describe(admin, ResourceType.BROKER, "1")["log.retention.ms"]
    assert entry.value == "7200000" and entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert describe(admin, ResourceType.TOPIC, "dyn")["retention.ms"].value == "7200000"
    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert describe(admin, ResourceType.TOPIC, "dyn")["retention.ms"].value == "7200000"
    alter(admin, "1", ("log.retention.ms", None))
    assert describe(admin, ResourceType.TOPIC, "dyn")["retention.ms"].value == "3600000"


def test_static_keys_and_bad_values_are_refused(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    with pytest.raises(Exception, match="dynamically"):
        alter(admin, "", ("listeners", "PLAINTEXT://127.0.0.1:1"), bootstrap=broker.bootstrap)
    with pytest.raises(Exception, match="Invalid value"):
        alter(admin, "1", ("log.retention.ms", "soon"))
