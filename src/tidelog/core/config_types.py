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
    "offsets.topic.replication.factor": ConfigType.SHORT,
    "transaction.state.log.replication.factor": ConfigType.SHORT,
    "transaction.state.log.min.isr": INT,
    "auto.leader.rebalance.enable": B, "leader.imbalance.check.interval.seconds": L,
    "leader.imbalance.per.broker.percentage": INT,
    "transaction.state.log.num.partitions": INT, "transaction.state.log.segment.bytes": INT,
    "transaction.max.timeout.ms": INT, "transactional.id.expiration.ms": INT,
    "producer.id.expiration.ms": INT, "transaction.abort.timed.out.transaction.cleanup.interval.ms": INT,
    "transaction.remove.expired.transaction.cleanup.interval.ms": INT,
    "metrics.listener": S, "log.level": S, "log.format": S,
    # cluster mode (etcd.* are tidelog's own)
    "etcd.connect": S, "etcd.connection.timeout.ms": INT, "broker.session.timeout.ms": INT, "broker.rack": S,
    "inter.broker.listener.name": S, "replica.lag.time.max.ms": L, "replica.fetch.wait.max.ms": INT,
    "replica.fetch.max.bytes": INT, "replica.fetch.response.max.bytes": INT, "min.insync.replicas": INT,
    "unclean.leader.election.enable": B,
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


# One line per key, in tidelog's own words: DescribeConfigs v3+ returns it when asked
# (include_documentation).
DOCS: dict[str, str] = {
    # topic keys
    "segment.bytes": "Size in bytes at which the active segment is closed and a new one started.",
    "segment.ms": "Time after which the active segment is rolled, measured on record timestamps.",
    "segment.jitter.ms": "Largest random amount subtracted from segment.ms, so that segments do not all roll together.",
    "segment.index.bytes": "Size in bytes of a segment's offset and time indexes; a full index rolls the segment.",
    "retention.ms": "How long a closed segment is kept after its largest record timestamp; -1 keeps it forever.",
    "retention.bytes": "Largest size a partition may reach before its oldest segments are deleted; -1 for no limit.",
    "index.interval.bytes": "Bytes appended between two entries of the offset and time indexes.",
    "max.message.bytes": "Largest record batch, after compression, the partition accepts.",
    "message.timestamp.type": "CreateTime (the producer's timestamp) or LogAppendTime (the broker's).",
    "message.timestamp.difference.max.ms": "Largest distance allowed between a CreateTime timestamp and the broker's clock.",
    "message.timestamp.before.max.ms": "How far in the past a CreateTime timestamp may be.",
    "message.timestamp.after.max.ms": "How far in the future a CreateTime timestamp may be.",
    "cleanup.policy": "delete (by retention), compact (latest value per key), or both.",
    "delete.retention.ms": "How long tombstones and transaction markers stay after compaction made them removable.",
    "min.cleanable.dirty.ratio": "Share of not yet compacted bytes that starts the cleaner on a compacted topic.",
    "min.compaction.lag.ms": "Least age of a record before the cleaner may compact it.",
    "max.compaction.lag.ms": "Greatest age a record may reach before the cleaner must compact it.",
    "flush.messages": "Records appended between two fsyncs of the partition.",
    "flush.ms": "Time between two fsyncs of the partition.",
    "file.delete.delay.ms": "Time a deleted segment's files stay open before they are closed and removed.",
    "preallocate": "Whether a new segment's file is preallocated on disk.",
    "compression.type": "The codec batches are stored with; producer keeps each batch's own.",
    "message.downconversion.enable": "Whether old fetch versions get batches converted to the old message format.",
    "min.insync.replicas": "Replicas that must hold a batch before an acks=all produce is answered.",
    "unclean.leader.election.enable": "Whether a replica outside the ISR may become leader (losing data).",
    "follower.replication.throttled.replicas": "Replicas whose follower fetches are throttled.",
    "leader.replication.throttled.replicas": "Replicas whose leader answers to followers are throttled.",
    # broker keys
    "etcd.connect": "etcd endpoints host:port[,host:port][/cluster]: the broker joins that cluster; unset: one node.",
    "etcd.connection.timeout.ms": "Timeout of one request to etcd.",
    "broker.session.timeout.ms": "TTL of the broker's etcd lease: its registration vanishes that long after it stops.",
    "broker.rack": "Rack of the broker: replicas of a partition are spread over racks.",
    "inter.broker.listener.name": "Listener followers fetch from (default: the first listener).",
    "replica.lag.time.max.ms": "A follower not caught up for this long leaves the ISR.",
    "replica.fetch.wait.max.ms": "Longest wait of a follower's fetch for new data at the leader.",
    "replica.fetch.max.bytes": "Bytes per partition a follower asks for in one fetch.",
    "replica.fetch.response.max.bytes": "Bytes a follower asks for in one fetch, over all partitions.",
    "listeners": "The addresses the broker listens on, as NAME://host:port.",
    "advertised.listeners": "The addresses given to clients in Metadata, per listener name.",
    "log.dirs": "The directories that hold the partitions' segments (tidelog uses the first).",
    "log.dir": "The log directory when log.dirs is not set.",
    "node.id": "This broker's id.",
    "broker.id": "This broker's id (older name of node.id).",
    "cluster.id": "The cluster id announced to clients; generated and kept in the data directory when unset.",
    "num.partitions": "Partitions of an automatically created topic.",
    "default.replication.factor": "Replication factor of an automatically created topic.",
    "auto.create.topics.enable": "Whether Metadata and Produce create a topic they name.",
    "delete.topic.enable": "Whether DeleteTopics may delete topics.",
    "log.segment.bytes": "Default segment.bytes of topics.",
    "log.roll.ms": "Default segment.ms of topics.",
    "log.roll.hours": "Default segment.ms of topics, in hours (used when log.roll.ms is unset).",
    "log.retention.ms": "Default retention.ms of topics.",
    "log.retention.minutes": "Default retention.ms of topics, in minutes (when log.retention.ms is unset).",
    "log.retention.hours": "Default retention.ms of topics, in hours (when the finer keys are unset).",
    "log.retention.bytes": "Default retention.bytes of topics.",
    "log.retention.check.interval.ms": "Time between two passes of retention and compaction.",
    "log.flush.offset.checkpoint.interval.ms": "Time between two writes of the recovery-point checkpoint.",
    "log.segment.delete.delay.ms": "Default file.delete.delay.ms of topics.",
    "log.index.size.max.bytes": "Default segment.index.bytes of topics.",
    "log.index.interval.bytes": "Default index.interval.bytes of topics.",
    "log.message.timestamp.type": "Default message.timestamp.type of topics.",
    "log.message.timestamp.difference.max.ms": "Default message.timestamp.difference.max.ms of topics.",
    "log.cleanup.policy": "Default cleanup.policy of topics.",
    "log.cleaner.enable": "Whether compacted topics are cleaned.",
    "log.cleaner.delete.retention.ms": "Default delete.retention.ms of topics.",
    "log.cleaner.min.cleanable.ratio": "Default min.cleanable.dirty.ratio of topics.",
    "log.cleaner.backoff.ms": "Time the cleaner waits when there is nothing to clean.",
    "log.flush.interval.messages": "Default flush.messages of topics.",
    "log.flush.interval.ms": "Default flush.ms of topics.",
    "log.flush.scheduler.interval.ms": "Time between two checks for partitions due a time-based fsync.",
    "message.max.bytes": "Default max.message.bytes of topics.",
    "max.request.partition.size.limit": "Most partitions one DescribeTopicPartitions answer may list.",
    "socket.request.max.bytes": "Largest request frame accepted; a larger one closes the connection.",
    "socket.receive.buffer.bytes": "SO_RCVBUF of client sockets (-1: the system default).",
    "max.connections": "Most client connections open at once; more are refused.",
    "queued.max.requests": "Requests read from one connection but not yet answered before reading pauses.",
    "num.io.threads": "Accepted for Kafka's tools; tidelog answers on one event loop.",
    "num.network.threads": "Accepted for Kafka's tools; tidelog answers on one event loop.",
    "group.initial.rebalance.delay.ms": "Time a new group waits for more members before its first rebalance.",
    "group.min.session.timeout.ms": "Smallest session timeout a group member may ask for.",
    "group.max.session.timeout.ms": "Largest session timeout a group member may ask for.",
    "offsets.topic.num.partitions": "Partitions of __consumer_offsets.",
    "offsets.topic.segment.bytes": "segment.bytes of __consumer_offsets.",
    "offsets.retention.minutes": "How long committed offsets of an empty group are kept.",
    "offsets.retention.check.interval.ms": "Time between two checks for expired committed offsets.",
    "offsets.commit.timeout.ms": "Longest wait for an offset commit to be written (and, in a cluster, replicated).",
    "offsets.topic.replication.factor": "Cluster mode: replication factor of __consumer_offsets.",
    "transaction.state.log.replication.factor": "Cluster mode: replication factor of __transaction_state.",
    "transaction.state.log.min.isr": "Cluster mode: min.insync.replicas of both internal topics.",
    "auto.leader.rebalance.enable": "Cluster mode: the controller moves leadership back to preferred replicas.",
    "leader.imbalance.check.interval.seconds": "Cluster mode: time between two leader-imbalance checks.",
    "leader.imbalance.per.broker.percentage": "Cluster mode: share of a broker's preferred partitions led elsewhere that triggers a rebalance.",
    "transaction.state.log.num.partitions": "Partitions of __transaction_state.",
    "transaction.state.log.segment.bytes": "segment.bytes of __transaction_state.",
    "transaction.max.timeout.ms": "Largest transaction timeout a producer may ask for.",
    "transactional.id.expiration.ms": "How long an idle transactional id is kept.",
    "producer.id.expiration.ms": "How long the state of an idle producer id is kept.",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "Time between two checks for timed-out transactions.",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "Time between two checks for expired transactional ids.",
    "metrics.listener": "host:port of the Prometheus metrics endpoint (none when unset).",
    "log.level": "Level of the broker's own log.",
    "log.format": "text or json lines for the broker's own log.",
    "listener.security.protocol.map": "The security protocol of each listener name.",
    "ssl.keystore.type": "Format of the key store (PEM).",
    "ssl.keystore.location": "File with the broker's certificate chain and private key.",
    "ssl.keystore.certificate.chain": "The broker's certificate chain, inline PEM.",
    "ssl.keystore.key": "The broker's private key, inline PEM.",
    "ssl.keystore.password": "Password of the key store.",
    "ssl.key.password": "Password of the private key.",
    "ssl.truststore.type": "Format of the trust store (PEM).",
    "ssl.truststore.location": "File with the certificates client certificates are checked against.",
    "ssl.truststore.certificates": "Trusted certificates, inline PEM.",
    "ssl.client.auth": "none, requested or required client certificates.",
    "ssl.enabled.protocols": "TLS versions offered.",
    "ssl.cipher.suites": "TLS cipher suites offered (the defaults when unset).",
    "ssl.endpoint.identification.algorithm": "Host name verification for outgoing TLS connections.",
    "sasl.enabled.mechanisms": "SASL mechanisms offered on SASL listeners.",
    "sasl.jaas.config": "JAAS configuration; for PLAIN, the user_<name> passwords.",
    "sasl.mechanism.inter.broker.protocol": "SASL mechanism between brokers (accepted; one node).",
    "security.inter.broker.protocol": "Security protocol between brokers (accepted; one node).",
    "connections.max.reauth.ms": "Session lifetime after which SASL clients must re-authenticate (0: none).",
    "sasl.server.max.receive.size": "Largest frame accepted before authentication.",
    "connection.failed.authentication.delay.ms": "Delay before a connection that failed authentication is closed.",
    "authorizer.class.name": "Any value turns the ACL authorizer on.",
    "allow.everyone.if.no.acl.found": "Whether a resource with no ACL is open to everyone.",
    "super.users": "Principals every ACL check allows, separated by semicolons.",
}
