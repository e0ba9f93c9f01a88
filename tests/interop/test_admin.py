"""Topic administration through four real clients against a real `tidelog serve` process."""

import asyncio
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

pytestmark = pytest.mark.interop


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def ck_admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})


def test_confluent_admin_create_describe_alter_delete(broker):
    admin = ck_admin(broker)
    name = unique("ck")
    fs = admin.create_topics(
        [
            NewTopic(
                name,
                num_partitions=3,
                replication_factor=1,
                config={"retention.ms": "3600000", "cleanup.policy": "compact"},
            )
        ]
    )
    fs[name].result(10)
    md = admin.list_topics(timeout=10)
    assert name in md.topics
    assert sorted(md.topics[name].partitions) == [0, 1, 2]
    assert md.controller_id == 1
    # Describe configs: overrides and defaults.
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["retention.ms"].value == "3600000"
    assert cfg["cleanup.policy"].value == "compact"
    assert cfg["segment.bytes"].is_default
    # Incremental alter.
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    res2 = ConfigResource(
        ConfigResource.Type.TOPIC,
        name,
        incremental_configs=[ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)],
    )
    admin.incremental_alter_configs([res2])[res2].result(10)
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["retention.ms"].value == "7200000"
    assert cfg["cleanup.policy"].value == "compact"
    # Partitions grow, never shrink.
    admin.create_partitions([NewPartitions(name, 5)])[name].result(10)
    assert sorted(admin.list_topics(timeout=10).topics[name].partitions) == [0, 1, 2, 3, 4]
    with pytest.raises(KafkaException) as e:
        admin.create_partitions([NewPartitions(name, 2)])[name].result(10)
    assert e.value.args[0].name() == "INVALID_PARTITIONS"
    # Errors a client expects.
    with pytest.raises(KafkaException) as e:
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)
    assert e.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    bad = unique("rf")
    with pytest.raises(KafkaException) as e:
        admin.create_topics([NewTopic(bad, 1, 3)])[bad].result(10)
    assert e.value.args[0].name() == "INVALID_REPLICATION_FACTOR"
    with pytest.raises(KafkaException) as e:
        admin.create_topics([NewTopic(bad, 1, 1, config={"no.such.key": "1"})])[bad].result(10)
    assert e.value.args[0].name() == "INVALID_CONFIG"
    with pytest.raises(KafkaException) as e:
        admin.create_topics([NewTopic(bad, 1, 1, config={"retention.ms": "soon"})])[bad].result(10)
    assert e.value.args[0].name() == "INVALID_CONFIG"
    admin.delete_topics([name])[name].result(10)
    assert name not in admin.list_topics(timeout=10).topics


def test_validate_only_creates_nothing(broker):
    admin = ck_admin(broker)
    name = unique("vo")
    admin.create_topics([NewTopic(name, 2, 1)], validate_only=True)[name].result(10)
    assert name not in admin.list_topics(timeout=10).topics


def test_kafka_python_admin(broker):
    from kafka.admin import ConfigResource as KPRes
    from kafka.admin import ConfigResourceType, KafkaAdminClient
    from kafka.admin import NewTopic as KPNewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        name = unique("kp")
        admin.create_topics([KPNewTopic(name, 2, 1, topic_configs={"retention.bytes": "1000000"})])
        assert name in admin.list_topics()
        desc = admin.describe_topics([name])
        assert len(desc[0]["partitions"]) == 2
        cfgs = admin.describe_configs([KPRes(ConfigResourceType.TOPIC, name)])
        assert cfgs["topic"][name]["retention.bytes"]["value"] == "1000000"
        assert cfgs["topic"][name]["retention.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        admin.alter_configs([KPRes(ConfigResourceType.TOPIC, name, configs={"retention.ms": "60000"})])
        cfgs = admin.describe_configs([KPRes(ConfigResourceType.TOPIC, name)])
        assert cfgs["topic"][name]["retention.ms"]["value"] == "60000"
        admin.delete_topics([name])
        assert name not in admin.list_topics()
    finally:
        admin.close()


def test_aiokafka_admin(broker):
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewTopic as AIONewTopic

    async def run():
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            name = unique("aio")
            await admin.create_topics([AIONewTopic(name, 4, 1)])
            assert name in await admin.list_topics()
            desc = await admin.describe_topics([name])
            assert len(desc[0]["partitions"]) == 4
            await admin.delete_topics([name])
            assert name not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())


def test_kcat_metadata_and_cli(broker, kcat):
    name = unique("cli")
    cli = [sys.executable, "-m", "tidelog", "topics"]
    out = subprocess.run(
        cli
        + [
            "create",
            "--topic",
            name,
            "--partitions",
            "2",
            "--config",
            "segment.bytes=1048576",
            "--bootstrap-server",
            broker.bootstrap,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"Created topic {name}" in out.stdout
    out = subprocess.run([kcat, "-L", "-b", broker.bootstrap, "-t", name], capture_output=True, text=True, check=True)
    assert f'topic "{name}" with 2 partitions' in out.stdout
    assert "(controller)" in out.stdout
    out = subprocess.run(
        cli + ["describe", "--topic", name, "--bootstrap-server", broker.bootstrap],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "segment.bytes=1048576" in out.stdout and "PartitionCount: 2" in out.stdout
    out = subprocess.run(
        cli
        + [
            "alter-config",
            "--topic",
            name,
            "--add-config",
            "retention.ms=5000",
            "--bootstrap-server",
            broker.bootstrap,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    out = subprocess.run(
        cli + ["describe", "--topic", name, "--bootstrap-server", broker.bootstrap],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "retention.ms=5000" in out.stdout
    out = subprocess.run(
        cli + ["create", "--topic", name, "--bootstrap-server", broker.bootstrap], capture_output=True, text=True
    )
    assert out.returncode == 1 and "TOPIC_ALREADY_EXISTS" in out.stderr
    out = subprocess.run(
        cli + ["delete", "--topic", name, "--bootstrap-server", broker.bootstrap],
        capture_output=True,
        text=True,
        check=True,
    )
    out = subprocess.run(
        cli + ["list", "--bootstrap-server", broker.bootstrap], capture_output=True, text=True, check=True
    )
    assert name not in out.stdout.split()


def test_topics_and_configs_survive_restart(broker):
    admin = ck_admin(broker)
    name = unique("persist")
    admin.create_topics([NewTopic(name, 3, 1, config={"message.timestamp.type": "LogAppendTime"})])[name].result(10)
    md_before = admin.list_topics(timeout=10)
    broker.restart()
    admin = ck_admin(broker)
    md = admin.list_topics(timeout=10)
    assert sorted(md.topics[name].partitions) == [0, 1, 2]
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["message.timestamp.type"].value == "LogAppendTime"
    assert md.cluster_id == md_before.cluster_id


def test_metadata_auto_create_follows_config(broker_factory):

    b = broker_factory({"auto.create.topics.enable": "false", "num.partitions": "2"})
    admin = ck_admin(b)
    name = unique("auto")
    md = admin.list_topics(topic=name, timeout=10)
    assert md.topics[name].error is not None and md.topics[name].error.name() == "UNKNOWN_TOPIC_OR_PART"
    b2 = broker_factory({"num.partitions": "2"}, name="data2")
    md = ck_admin(b2).list_topics(topic=name, timeout=10)
    deadline = time.monotonic() + 5
    while md.topics[name].error is not None and time.monotonic() < deadline:
        md = ck_admin(b2).list_topics(topic=name, timeout=10)
    assert sorted(md.topics[name].partitions) == [0, 1]
