"""DescribeConfigs answers Kafka's config type for every topic and broker key (was STRING for
all, e.g. retention.bytes where Kafka says LONG), hides PASSWORD values, and lists synonyms in
Kafka's order (topic override, broker key set in the configuration, default). Table-driven over
every key the broker describes, with confluent-kafka's AdminClient and a raw v4 request."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tidelog.cli.client import KafkaClient

BROKER_OVERRIDES = {
    "log.retention.hours": "100",
    "ssl.key.password": "do-not-show",
}

# Kafka's types (TopicConfig / LogConfig / KafkaConfig), written out here independently of the
# broker's own table so that a change there must agree with this one
KAFKA_TOPIC_TYPES = {
    "cleanup.policy": "LIST",
    "compression.type": "STRING",
    "delete.retention.ms": "LONG",
    "file.delete.delay.ms": "LONG",
    "flush.messages": "LONG",
    "flush.ms": "LONG",
    "follower.replication.throttled.replicas": "LIST",
    "index.interval.bytes": "INT",
    "leader.replication.throttled.replicas": "LIST",
    "max.compaction.lag.ms": "LONG",
    "max.message.bytes": "INT",
    "message.downconversion.enable": "BOOLEAN",
    "message.timestamp.after.max.ms": "LONG",
    "message.timestamp.before.max.ms": "LONG",
    "message.timestamp.difference.max.ms": "LONG",
    "message.timestamp.type": "STRING",
    "min.cleanable.dirty.ratio": "DOUBLE",
    "min.compaction.lag.ms": "LONG",
    "min.insync.replicas": "INT",
    "preallocate": "BOOLEAN",
    "retention.bytes": "LONG",
    "retention.ms": "LONG",
    "segment.bytes": "INT",
    "segment.index.bytes": "INT",
    "segment.jitter.ms": "LONG",
    "segment.ms": "LONG",
    "unclean.leader.election.enable": "BOOLEAN",
}
KAFKA_BROKER_TYPES = {
    "advertised.listeners": "STRING",
    "allow.everyone.if.no.acl.found": "BOOLEAN",
    "authorizer.class.name": "STRING",
    "auto.create.topics.enable": "BOOLEAN",
    "broker.id": "INT",
    "connection.failed.authentication.delay.ms": "INT",
    "connections.max.reauth.ms": "LONG",
    "default.replication.factor": "INT",
    "delete.topic.enable": "BOOLEAN",
    "group.consumer.assignors": "LIST",
    "group.consumer.heartbeat.interval.ms": "INT",
    "group.consumer.max.heartbeat.interval.ms": "INT",
    "group.consumer.max.session.timeout.ms": "INT",
    "group.consumer.max.size": "INT",
    "group.consumer.migration.policy": "STRING",
    "group.consumer.min.heartbeat.interval.ms": "INT",
    "group.consumer.min.session.timeout.ms": "INT",
    "group.consumer.session.timeout.ms": "INT",
    "group.share.delivery.count.limit": "INT",
    "group.share.heartbeat.interval.ms": "INT",
    "group.share.max.delivery.count.limit": "INT",
    "group.share.max.partition.max.record.locks": "INT",
    "group.share.max.heartbeat.interval.ms": "INT",
    "group.share.max.record.lock.duration.ms": "INT",
    "group.share.max.session.timeout.ms": "INT",
    "group.share.max.size": "INT",
    "group.share.min.delivery.count.limit": "INT",
    "group.share.min.partition.max.record.locks": "INT",
    "group.share.min.heartbeat.interval.ms": "INT",
    "group.share.min.record.lock.duration.ms": "INT",
    "group.share.min.session.timeout.ms": "INT",
    "group.share.partition.max.record.locks": "INT",
    "group.share.record.lock.duration.ms": "INT",
    "group.share.session.timeout.ms": "INT",
    "group.streams.assignment.interval.ms": "INT",
    "group.streams.heartbeat.interval.ms": "INT",
    "group.streams.initial.rebalance.delay.ms": "INT",
    "group.streams.max.assignment.interval.ms": "INT",
    "group.streams.max.heartbeat.interval.ms": "INT",
    "group.streams.max.session.timeout.ms": "INT",
    "group.streams.max.size": "INT",
    "group.streams.max.standby.replicas": "INT",
    "group.streams.min.assignment.interval.ms": "INT",
    "group.streams.min.heartbeat.interval.ms": "INT",
    "group.streams.min.session.timeout.ms": "INT",
    "group.streams.num.standby.replicas": "INT",
    "group.streams.session.timeout.ms": "INT",
    "group.initial.rebalance.delay.ms": "INT",
    "group.max.session.timeout.ms": "INT",
    "group.min.session.timeout.ms": "INT",
    "listener.security.protocol.map": "STRING",
    "listeners": "STRING",
    "log.cleaner.backoff.ms": "LONG",
    "log.cleaner.delete.retention.ms": "LONG",
    "log.cleaner.enable": "BOOLEAN",
    "log.cleaner.min.cleanable.ratio": "DOUBLE",
    "log.cleanup.policy": "LIST",
    "log.dir": "STRING",
    "log.dirs": "STRING",
    "log.flush.interval.messages": "LONG",
    "log.flush.interval.ms": "LONG",
    "log.flush.offset.checkpoint.interval.ms": "INT",
    "log.flush.scheduler.interval.ms": "LONG",
    "log.index.interval.bytes": "INT",
    "log.index.size.max.bytes": "INT",
    "log.message.timestamp.difference.max.ms": "LONG",
    "log.message.timestamp.type": "STRING",
    "log.retention.bytes": "LONG",
    "log.retention.check.interval.ms": "LONG",
    "log.retention.hours": "INT",
    "log.retention.minutes": "INT",
    "log.retention.ms": "LONG",
    "log.roll.hours": "INT",
    "log.roll.ms": "LONG",
    "log.segment.bytes": "INT",
    "log.segment.delete.delay.ms": "LONG",
    "max.connections": "INT",
    "message.max.bytes": "INT",
    "max.request.partition.size.limit": "INT",
    "node.id": "INT",
    "num.io.threads": "INT",
    "num.network.threads": "INT",
    "num.partitions": "INT",
    "offsets.commit.timeout.ms": "INT",
    "offsets.retention.check.interval.ms": "LONG",
    "offsets.retention.minutes": "INT",
    "offsets.topic.num.partitions": "INT",
    "offsets.topic.segment.bytes": "INT",
    "producer.id.expiration.ms": "INT",
    "queued.max.requests": "INT",
    "sasl.enabled.mechanisms": "LIST",
    "sasl.jaas.config": "PASSWORD",
    "sasl.server.max.receive.size": "INT",
    "socket.receive.buffer.bytes": "INT",
    "socket.request.max.bytes": "INT",
    "ssl.cipher.suites": "LIST",
    "ssl.client.auth": "STRING",
    "ssl.enabled.protocols": "LIST",
    "ssl.endpoint.identification.algorithm": "STRING",
    "ssl.key.password": "PASSWORD",
    "ssl.keystore.certificate.chain": "PASSWORD",
    "ssl.keystore.key": "PASSWORD",
    "ssl.keystore.location": "STRING",
    "ssl.keystore.password": "PASSWORD",
    "ssl.keystore.type": "STRING",
    "ssl.truststore.certificates": "PASSWORD",
    "ssl.truststore.location": "STRING",
    "ssl.truststore.type": "STRING",
    "super.users": "STRING",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "INT",
    "transaction.max.timeout.ms": "INT",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "INT",
    "transaction.state.log.num.partitions": "INT",
    "transaction.state.log.segment.bytes": "INT",
    "offsets.topic.replication.factor": "SHORT",
    "transaction.state.log.replication.factor": "SHORT",
    "transaction.state.log.min.isr": "INT",
    "auto.leader.rebalance.enable": "BOOLEAN",
    "leader.imbalance.check.interval.seconds": "LONG",
    "leader.imbalance.per.broker.percentage": "INT",
    "transactional.id.expiration.ms": "INT",
    "index.interval.bytes": "INT",
    # tidelog's own keys
    "broker.session.timeout.ms": "INT",
    "broker.rack": "STRING",
    "inter.broker.listener.name": "STRING",
    "replica.lag.time.max.ms": "LONG",
    "replica.fetch.wait.max.ms": "INT",
    "replica.fetch.max.bytes": "INT",
    "replica.fetch.response.max.bytes": "INT",
    "unclean.leader.election.enable": "BOOLEAN",
    "min.insync.replicas": "INT",
    "etcd.connect": "STRING",
    "transaction.version": "INT",  # tidelog's own: Kafka sets the feature level with kafka-storage
    "etcd.connection.timeout.ms": "INT",
    "cluster.id": "STRING",
    "metrics.listener": "STRING",
    "schema.registry.listeners": "STRING",
    "schema.registry.topic": "STRING",
    "schema.registry.topic.replication.factor": "SHORT",
    "schema.registry.max.request.bytes": "INT",
    "schema.registry.authentication": "STRING",
    "process.count": "INT",  # tidelog's own (serve --processes), as the next three
    "process.etcd.path": "STRING",
    "process.etcd.client.port": "INT",
    "process.etcd.peer.port": "INT",
    "log.level": "STRING",
    "log.format": "STRING",
    "security.inter.broker.protocol": "STRING",
    "sasl.mechanism.inter.broker.protocol": "STRING",
    "share.coordinator.state.topic.min.isr": "SHORT",
    "share.coordinator.state.topic.num.partitions": "INT",
    "share.coordinator.state.topic.replication.factor": "SHORT",
    "share.coordinator.state.topic.segment.bytes": "INT",
    "share.coordinator.write.timeout.ms": "INT",
}
# the broker's own resource (node.id's default); "" (the cluster-wide default) lists only the
# dynamic defaults, as Kafka, and none is set here
BROKER_ID = "1"
TYPE_NAMES = ["UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"]


def _describe(broker, resource_type: int, name: str, docs: bool = True):
    client = KafkaClient(broker.bootstrap)
    try:
        resp = client.request(
            32,
            {
                "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": None}],
                "include_synonyms": True,
                "include_documentation": docs,
            },
            version=4,
        )
    finally:
        client.close()
    assert resp.results[0].error_code.value == 0
    return {c.name: c for c in resp.results[0].configs}


@pytest.fixture(scope="module")
def topic(module_broker):
    name = f"types-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": module_broker.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config={"retention.bytes": "12345"})])[name].result(20)
    return name


def test_every_topic_key_has_kafkas_type(module_broker, topic):
    configs = _describe(module_broker, 2, topic)
    assert set(configs) == set(KAFKA_TOPIC_TYPES)
    for name, c in configs.items():
        assert TYPE_NAMES[c.config_type] == KAFKA_TOPIC_TYPES[name], name
    # confluent-kafka reads the same
    admin = AdminClient({"bootstrap.servers": module_broker.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["retention.bytes"].value == "12345"


def test_topic_synonyms_in_kafkas_order(module_broker, topic):
    configs = _describe(module_broker, 2, topic)
    rb = configs["retention.bytes"]
    assert rb.config_source == 1
    assert [(s.name, s.value, s.source) for s in rb.synonyms] == [
        ("retention.bytes", "12345", 1),
        ("log.retention.bytes", "-1", 5),
    ]
    rm = configs["retention.ms"]
    assert rm.config_source == 4 and rm.value == str(100 * 3600_000)
    assert [(s.name, s.value, s.source) for s in rm.synonyms] == [
        ("log.retention.hours", "100", 4),
        ("log.retention.hours", "168", 5),
    ]
    assert configs["segment.jitter.ms"].config_source == 5


def test_every_broker_key_has_kafkas_type_and_passwords_are_hidden(module_broker):
    configs = _describe(module_broker, 4, BROKER_ID)
    assert configs, "no broker config described"
    for name, c in configs.items():
        assert name in KAFKA_BROKER_TYPES, f"{name}: no Kafka type in this test's table"
        assert TYPE_NAMES[c.config_type] == KAFKA_BROKER_TYPES[name], name
    key_password = configs["ssl.key.password"]
    assert key_password.is_sensitive and key_password.value is None
    assert all(s.value is None for s in key_password.synonyms)
    assert configs["auto.create.topics.enable"].value == "true"


def test_documentation_when_asked(module_broker, topic):
    for resource_type, name in ((2, topic), (4, BROKER_ID)):
        with_docs = _describe(module_broker, resource_type, name)
        assert with_docs, name
        assert all(c.documentation for c in with_docs.values()), [
            k for k, c in with_docs.items() if not c.documentation
        ]
        without = _describe(module_broker, resource_type, name, docs=False)
        assert all(c.documentation is None for c in without.values())
