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


B, S, I, L, D, LI, P = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG,
                        ConfigType.DOUBLE, ConfigType.LIST, ConfigType.PASSWORD)

TOPIC_TYPES: dict[str, ConfigType] = {
    "segment.bytes": I, "segment.ms": L, "segment.jitter.ms": L, "segment.index.bytes": I,
    "retention.ms": L, "retention.bytes": L, "index.interval.bytes": I, "max.message.bytes": I,
    "message.timestamp.type": S, "message.timestamp.difference.max.ms": L,
    "message.timestamp.before.max.ms": L, "message.timestamp.after.max.ms": L,
    "cleanup.policy": LI, "delete.retention.ms": L, "min.cleanable.dirty.ratio": D,
    "min.compaction.lag.ms": L, "max.compaction.lag.ms": L, "flush.messages": L, "flush.ms": L,
    "file.delete.delay.ms": L, "preallocate": B, "compression.type": S,
    "message.downconversion.enable": B, "min.insync.replicas": I,
    "unclean.leader.election.enable": B, "follower.replication.throttled.replicas": LI,
    "leader.replication.throttled.replicas": LI,
}

BROKER_TYPES: dict[str, ConfigType] = {
    "listeners": S, "advertised.listeners": S, "log.dirs": S, "log.dir": S, "node.id": I,
    "broker.id": I, "cluster.id": S, "num.partitions": I, "default.replication.factor": I,
    "auto.create.topics.enable": B, "delete.topic.enable": B, "log.segment.bytes": I,
    "log.roll.ms": L, "log.roll.hours": I, "log.retention.ms": L, "log.retention.minutes": I,
    "log.retention.hours": I, "log.retention.bytes": L, "log.retention.check.interval.ms": L,
    "log.flush.offset.checkpoint.interval.ms": I, "log.segment.delete.delay.ms": L,
    "log.index.size.max.bytes": I, "log.index.interval.bytes": I, "index.interval.bytes": I,
    "log.message.timestamp.type": S, "log.message.timestamp.difference.max.ms": L,
    "log.cleanup.policy": LI, "log.cleaner.enable": B, "log.cleaner.delete.retention.ms": L,
    "log.cleaner.min.cleanable.ratio": D, "log.cleaner.backoff.ms": L,
    "log.flush.interval.messages": L, "log.flush.interval.ms": L, "log.flush.scheduler.interval.ms": L,
    "message.max.bytes": I, "max.request.partition.size.limit": I, "socket.request.max.bytes": I, "socket.receive.buffer.bytes": I,
    "max.connections": I, "queued.max.requests": I, "num.io.threads": I, "num.network.threads": I,
    "group.initial.rebalance.delay.ms": I, "group.min.session.timeout.ms": I,
    "group.max.session.timeout.ms": I, "offsets.topic.num.partitions": I,
    "offsets.topic.segment.bytes": I, "offsets.retention.minutes": I,
    "offsets.retention.check.interval.ms": L, "offsets.commit.timeout.ms": I,
    "transaction.state.log.num.partitions": I, "transaction.state.log.segment.bytes": I,
    "transaction.max.timeout.ms": I, "transactional.id.expiration.ms": I,
    "producer.id.expiration.ms": I, "transaction.abort.timed.out.transaction.cleanup.interval.ms": I,
    "transaction.remove.expired.transaction.cleanup.interval.ms": I,
    "metrics.listener": S, "log.level": S, "log.format": S,
    # security
    "listener.security.protocol.map": S, "ssl.keystore.type": S, "ssl.keystore.location": S,
    "ssl.keystore.certificate.chain": P, "ssl.keystore.key": P, "ssl.keystore.password": P,
    "ssl.key.password": P, "ssl.truststore.type": S, "ssl.truststore.location": S,
    "ssl.truststore.certificates": P, "ssl.client.auth": S, "ssl.enabled.protocols": LI,
    "ssl.cipher.suites": LI, "ssl.endpoint.identification.algorithm": S,
    "sasl.enabled.mechanisms": LI, "sasl.jaas.config": P, "sasl.mechanism.inter.broker.protocol": S,
    "security.inter.broker.protocol": S, "connections.max.reauth.ms": L,
    "sasl.server.max.receive.size": I, "connection.failed.authentication.delay.ms": I,
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
