"""Kafka's type of every config key tidelog describes (DescribeConfigs `config_type`), and the
broker keys behind each topic key (DescribeConfigs synonyms).

Types are Kafka's own definitions (TopicConfig / LogConfig / KafkaConfig and the security
configs): a client reads `retention.bytes` as a LONG and `cleanup.policy` as a LIST. PASSWORD keys
are sensitive: their values are never returned. Keys of tidelog's own (`metrics.listener`,
`log.level`, `log.format`, `cluster.id`) are STRING.
"""

from __future__ import annotations

from enum import IntEnum


class ConfigType(IntEnum):
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


B, S, INT, L, D, LI, P = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG,
                        ConfigType.DOUBLE, ConfigType.LIST, ConfigType.PASSWORD)

TOPIC_TYPES: dict[str, ConfigType] = {
    "segment.bytes": INT, "segment.ms": L, "segment.jitter.ms": L, "segment.index.bytes": INT,
    "retention.ms": L, "retention.bytes": L, "index.interval.bytes": INT, "max.message.bytes": INT,
    "message.timestamp.type": S, "message.timestamp.difference.max.ms": L,
    "message.timestamp.before.max.ms": L, "message.timestamp.after.max.ms": L,
    "cleanup.policy": LI, "delete.retention.ms": L, "min.cleanable.dirty.ratio": D,
    "min.compaction.lag.ms": L, "max.compaction.lag.ms": L, "flush.messages": L, "flush.ms": L,
    "file.delete.delay.ms": L, "preallocate": B, "compression.type": S,
    "message.downconversion.enable": B, "min.insync.replicas": INT,
    "unclean.leader.election.enable": B, "follower.replication.throttled.replicas": LI,
    "leader.replication.throttled.replicas": LI,
}

BROKER_TYPES: dict[str, ConfigType] = {
    "listeners": S, "advertised.listeners": S, "log.dirs": S, "log.dir": S, "node.id": INT,
    "broker.id": INT, "cluster.id": S, "num.partitions": INT, "default.replication.factor": INT,
    "auto.create.topics.enable": B, "delete.topic.enable": B, "log.segment.bytes": INT,
    "log.roll.ms": L, "log.roll.hours": INT, "log.retention.ms": L, "log.retention.minutes": INT,
    "log.retention.hours": INT, "log.retention.bytes": L, "log.retention.check.interval.ms": L,
    "log.flush.offset.checkpoint.interval.ms": INT, "log.segment.delete.delay.ms": L,
    "log.index.size.max.bytes": INT, "log.index.interval.bytes": INT, "index.interval.bytes": INT,
    "log.message.timestamp.type": S, "log.message.timestamp.difference.max.ms": L,
    "log.cleanup.policy": LI, "log.cleaner.enable": B, "log.cleaner.delete.retention.ms": L,
    "log.cleaner.min.cleanable.ratio": D, "log.cleaner.backoff.ms": L,
    "log.flush.interval.messages": L, "log.flush.interval.ms": L, "log.flush.scheduler.interval.ms": L,
    "message.max.bytes": INT, "max.request.partition.size.limit": INT, "socket.request.max.bytes": INT, "socket.receive.buffer.bytes": INT,
    "max.connections": INT, "queued.max.requests": INT, "num.io.threads": INT, "num.network.threads": INT,
    "group.initial.rebalance.delay.ms": INT, "group.min.session.timeout.ms": INT,
    "group.max.session.timeout.ms": INT, "offsets.topic.num.partitions": INT,
    "offsets.topic.segment.bytes": INT, "offsets.retention.minutes": INT,
    "offsets.retention.check.interval.ms": L, "offsets.commit.timeout.ms": INT,
    "transaction.state.log.num.partitions": INT, "transaction.state.log.segment.bytes": INT,
    "transaction.max.timeout.ms": INT, "transactional.id.expiration.ms": INT,
    "producer.id.expiration.ms": INT, "transaction.abort.timed.out.transaction.cleanup.interval.ms": INT,
    "transaction.remove.expired.transaction.cleanup.interval.ms": INT,
    "metrics.listener": S, "log.level": S, "log.format": S,
    # security
    "listener.security.protocol.map": S, "ssl.keystore.type": S, "ssl.keystore.location": S,
    "ssl.keystore.certificate.chain": P, "ssl.keystore.key": P, "ssl.keystore.password": P,
    "ssl.key.password": P, "ssl.truststore.type": S, "ssl.truststore.location": S,
    "ssl.truststore.certificates": P, "ssl.client.auth": S, "ssl.enabled.protocols": LI,
    "ssl.cipher.suites": LI, "ssl.endpoint.identification.algorithm": S,
    "sasl.enabled.mechanisms": LI, "sasl.jaas.config": P, "sasl.mechanism.inter.broker.protocol": S,
    "security.inter.broker.protocol": S, "connections.max.reauth.ms": L,
    "sasl.server.max.receive.size": INT, "connection.failed.authentication.delay.ms": INT,
    "authorizer.class.name": S, "allow.everyone.if.no.acl.found": B, "super.users": S,
}

# topic key -> the broker keys that set its default, most specific first (Kafka's synonyms)
TOPIC_SYNONYMS: dict[str, tuple[str, ...]] = {
    "segment.bytes": ("log.segment.bytes",),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.index.bytes": ("log.index.size.max.bytes",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "retention.bytes": ("log.retention.bytes",),
    "index.interval.bytes": ("log.index.interval.bytes",),
    "max.message.bytes": ("message.max.bytes",),
    "message.timestamp.type": ("log.message.timestamp.type",),
    "message.timestamp.difference.max.ms": ("log.message.timestamp.difference.max.ms",),
    "cleanup.policy": ("log.cleanup.policy",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "flush.messages": ("log.flush.interval.messages",),
    "flush.ms": ("log.flush.interval.ms",),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
}


def topic_type(key: str) -> ConfigType:
    return TOPIC_TYPES.get(key, ConfigType.STRING)


def broker_type(key: str) -> ConfigType:
    return BROKER_TYPES.get(key, ConfigType.STRING)
