"""Broker configuration: Kafka's property names, types, defaults and validation.

`load_config(path, overrides)` reads a Java-style `server.properties` file (key=value, `#` and `!`
comments) and `key=value` overrides, warns about unknown keys, and raises `ConfigError` with a clear
message for invalid values. Topic-level keys (`segment.bytes`, `retention.ms`, ...) are derived from
the broker's `log.*` defaults, as Kafka does.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .security_settings import SECURITY_KEYS, is_listener_key
from .security_settings import validate as _validate_security

log = logging.getLogger("tidelog.config")

LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    pass


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(s.strip())
        except ValueError:
            raise ValueError(f"not an integer: {s!r}") from None
        if lo is not None and v < lo:
            raise ValueError(f"{v} is below the minimum {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"{v} is above the maximum {hi}")
        return v

    return parse


def _bool(s: str) -> bool:
    v = s.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ValueError(f"not a boolean (true/false): {s!r}")


def _choice(*options: str) -> Callable[[str], str]:
    def parse(s: str) -> str:
        v = s.strip()
        if v not in options:
            raise ValueError(f"{v!r} is not one of {', '.join(options)}")
        return v

    return parse


# Kafka's class names of its server-side assignors, and the short names tidelog (and Kafka) know them by
ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def _assignors(s: str) -> list[str]:
    """group.consumer.assignors: a list of `uniform`, `range` (or Kafka's class names of them)."""
    names = [ASSIGNOR_CLASSES.get(n.strip(), n.strip()) for n in s.split(",") if n.strip()]
    unknown = [n for n in names if n not in ("uniform", "range")]
    if unknown or not names:
        raise ValueError(f"unknown server assignor {', '.join(unknown) or '(none)'}: uniform and range are served")
    return names


def _str(s: str) -> str:
    return s.strip()


def _process_count(s: str) -> int:
    """process.count: `auto` (one broker process per core, os.cpu_count()) or a count >= 1."""
    v = s.strip().lower()
    if v == "auto":
        import os

        return max(1, os.cpu_count() or 1)
    return _int(1)(v)


_LISTENER = re.compile(r"^(?:([A-Za-z0-9_]+)://)?(\[[^\]]*\]|[^:]*):(\d+)$")


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_listeners(s: str) -> list[Listener]:
    out = []
    for part in [p.strip() for p in s.split(",") if p.strip()]:
        m = _LISTENER.match(part)
        if not m:
            raise ValueError(f"listener {part!r} is not NAME://host:port")
        name, host, port = m.group(1) or "PLAINTEXT", m.group(2).strip("[]"), int(m.group(3))
        if not 0 <= port <= 65535:
            raise ValueError(f"port {port} out of range")
        out.append(Listener(name, host, port))
    if not out:
        raise ValueError("no listener")
    return out


def _listeners(s: str) -> str:
    parse_listeners(s)
    return s.strip()


def _http_listener(s: str) -> str:
    """schema.registry.listeners: one `http://host:port` or `https://host:port` (TLS with the
    `listener.name.schema_registry.ssl.*` keys, else the broker's `ssl.*` ones)."""
    m = re.match(r"^https?://(\[[^\]]*\]|[^:/]*):(\d+)/?$", s.strip())
    if not m or not 0 <= int(m.group(2)) <= 65535:
        raise ValueError(f"{s!r} is not http://host:port or https://host:port")
    return s.strip()


# key -> (parser, default as string or None)
BROKER_KEYS: dict[str, tuple[Callable[[str], object], str | None]] = {
    "listeners": (_listeners, "PLAINTEXT://127.0.0.1:9092"),
    "advertised.listeners": (_listeners, None),
    "log.dirs": (_str, "./data"),
    "log.dir": (_str, None),
    "node.id": (_int(0), "1"),
    "broker.id": (_int(-1), None),
    "cluster.id": (_str, None),
    "num.partitions": (_int(1), "1"),
    "default.replication.factor": (_int(1), "1"),
    "auto.create.topics.enable": (_bool, "true"),
    "delete.topic.enable": (_bool, "true"),
    "log.segment.bytes": (_int(14), str(1024**3)),
    "log.roll.ms": (_int(1), None),
    "log.roll.hours": (_int(1), "168"),
    "log.retention.ms": (_int(-1), None),
    "log.retention.minutes": (_int(-1), None),
    "log.retention.hours": (_int(-1), "168"),
    "log.retention.bytes": (_int(-1), "-1"),
    "log.retention.check.interval.ms": (_int(1), "300000"),
    "log.flush.offset.checkpoint.interval.ms": (_int(1), "60000"),
    "log.segment.delete.delay.ms": (_int(0), "60000"),
    "log.index.size.max.bytes": (_int(4), str(10 * 1024 * 1024)),
    "log.index.interval.bytes": (_int(0), "4096"),
    "index.interval.bytes": (_int(0), None),
    "log.message.timestamp.type": (_choice("CreateTime", "LogAppendTime"), "CreateTime"),
    "log.message.timestamp.difference.max.ms": (_int(0), str(LONG_MAX)),
    "log.cleanup.policy": (_choice("delete", "compact", "compact,delete", "delete,compact"), "delete"),
    "log.cleaner.enable": (_bool, "true"),
    "log.cleaner.delete.retention.ms": (_int(0), "86400000"),
    "log.cleaner.min.cleanable.ratio": (lambda s: float(s), "0.5"),
    "log.cleaner.backoff.ms": (_int(0), "15000"),
    "log.flush.interval.messages": (_int(1), str(LONG_MAX)),
    "log.flush.interval.ms": (_int(0), None),
    "log.flush.scheduler.interval.ms": (_int(0), str(LONG_MAX)),
    "max.request.partition.size.limit": (_int(1), "2000"),
    "message.max.bytes": (_int(0), "1048588"),
    "socket.request.max.bytes": (_int(1), str(100 * 1024 * 1024)),
    # SO_RCVBUF of client connections (-1: the OS's autotuning); Kafka's default, 100 KiB. A small
    # buffer is the producers' backpressure: librdkafka keeps building requests (of a record or two
    # a batch at many partitions) while its socket takes them, and batches only grow once it does
    # not; with 4 MiB, three brokers at 500 partitions took 5x fewer acks=all records/s at 5x the
    # CPU per record (bench/README.md, "Socket receive buffers").
    "socket.receive.buffer.bytes": (_int(-1), "102400"),
    "max.connections": (_int(1), "2147483647"),
    "queued.max.requests": (_int(1), "500"),
    "num.io.threads": (_int(1), "8"),
    "num.network.threads": (_int(1), "3"),
    "group.initial.rebalance.delay.ms": (_int(0), "3000"),
    "group.min.session.timeout.ms": (_int(0), "6000"),
    "group.max.session.timeout.ms": (_int(0), "1800000"),
    # the consumer protocol (KIP-848, Kafka 4)
    "group.consumer.session.timeout.ms": (_int(1), "45000"),
    "group.consumer.heartbeat.interval.ms": (_int(1), "5000"),
    "group.consumer.max.size": (_int(1), str(2**31 - 1)),
    "group.consumer.assignors": (_assignors, "uniform,range"),
    "group.consumer.migration.policy": (_choice("disabled", "upgrade", "downgrade", "bidirectional"), "bidirectional"),
    # the bounds of a group's own consumer.* / share.* configs (kafka-configs --entity-type groups)
    "group.consumer.min.session.timeout.ms": (_int(1), "45000"),
    "group.consumer.max.session.timeout.ms": (_int(1), "60000"),
    "group.consumer.min.heartbeat.interval.ms": (_int(1), "5000"),
    "group.consumer.max.heartbeat.interval.ms": (_int(1), "15000"),
    "group.share.min.session.timeout.ms": (_int(1), "45000"),
    "group.share.max.session.timeout.ms": (_int(1), "60000"),
    "group.share.min.heartbeat.interval.ms": (_int(1), "5000"),
    "group.share.max.heartbeat.interval.ms": (_int(1), "15000"),
    "group.share.min.record.lock.duration.ms": (_int(1000), "15000"),
    "group.share.max.record.lock.duration.ms": (_int(30000), "60000"),
    "group.share.min.delivery.count.limit": (_int(2, 10), "2"),
    "group.share.max.delivery.count.limit": (_int(2, 10), "10"),
    # streams groups (KIP-1071, Kafka Streams with group.protocol=streams)
    "group.streams.session.timeout.ms": (_int(1), "45000"),
    "group.streams.min.session.timeout.ms": (_int(1), "45000"),
    "group.streams.max.session.timeout.ms": (_int(1), "60000"),
    "group.streams.heartbeat.interval.ms": (_int(1), "5000"),
    "group.streams.min.heartbeat.interval.ms": (_int(1), "5000"),
    "group.streams.max.heartbeat.interval.ms": (_int(1), "15000"),
    "group.streams.max.size": (_int(1), str(2**31 - 1)),
    "group.streams.num.standby.replicas": (_int(0), "0"),
    "group.streams.max.standby.replicas": (_int(0), "2"),
    "group.streams.initial.rebalance.delay.ms": (_int(0), "3000"),
    "group.streams.assignment.interval.ms": (_int(0), "1000"),
    "group.streams.min.assignment.interval.ms": (_int(0), "0"),
    "group.streams.max.assignment.interval.ms": (_int(0), "15000"),
    # share groups (KIP-932)
    "group.share.session.timeout.ms": (_int(1), "45000"),
    "group.share.heartbeat.interval.ms": (_int(1), "5000"),
    "group.share.max.size": (_int(1), "200"),
    "group.share.record.lock.duration.ms": (_int(1), "30000"),
    "group.share.delivery.count.limit": (_int(2, 10), "5"),
    "group.share.partition.max.record.locks": (_int(100), "2000"),
    "group.share.min.partition.max.record.locks": (_int(100, 2000), "100"),
    "group.share.max.partition.max.record.locks": (_int(2000, 10000), "4000"),
    "share.coordinator.state.topic.num.partitions": (_int(1), "50"),
    "share.coordinator.state.topic.segment.bytes": (_int(1), str(100 * 1024 * 1024)),
    "share.coordinator.state.topic.replication.factor": (_int(1), "3"),  # cluster mode
    "share.coordinator.state.topic.min.isr": (_int(1), "2"),
    "share.coordinator.write.timeout.ms": (_int(1), "5000"),  # a persister call, retries included
    "offsets.topic.num.partitions": (_int(1), "50"),
    "offsets.topic.segment.bytes": (_int(1), str(100 * 1024 * 1024)),
    "offsets.retention.minutes": (_int(1), "10080"),
    "offsets.retention.check.interval.ms": (_int(1), "600000"),
    "offsets.commit.timeout.ms": (_int(1), "5000"),
    # cluster mode: the internal topics' replication (a single node keeps one replica)
    "offsets.topic.replication.factor": (_int(1), "3"),
    "transaction.state.log.replication.factor": (_int(1), "3"),
    "transaction.state.log.min.isr": (_int(1), "2"),
    "auto.leader.rebalance.enable": (_bool, "true"),
    "leader.imbalance.check.interval.seconds": (_int(1), "300"),
    "leader.imbalance.per.broker.percentage": (_int(0), "10"),
    "transaction.state.log.num.partitions": (_int(1), "50"),
    "transaction.state.log.segment.bytes": (_int(1), str(100 * 1024 * 1024)),
    "transaction.max.timeout.ms": (_int(1), "900000"),
    "transactional.id.expiration.ms": (_int(1), "604800000"),
    "producer.id.expiration.ms": (_int(1), "86400000"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (_int(1), "10000"),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (_int(1), "3600000"),
    # the finalized level of Kafka's `transaction.version` feature (Kafka sets it when the cluster
    # is formatted, `kafka-storage format --feature transaction.version=N`; 2 for a new 4.x one)
    "transaction.version": (_int(0, 2), "2"),
    # the schema registry (tidelog/registry), off unless a listener is given: http://host:port
    "schema.registry.listeners": (_http_listener, None),
    "schema.registry.topic": (_str, "_schemas"),
    "schema.registry.topic.replication.factor": (_int(1), "3"),  # cluster mode
    "schema.registry.max.request.bytes": (_int(1024), str(8 * 1024 * 1024)),
    "schema.registry.authentication": (_choice("none", "basic"), "none"),  # basic: the broker's SCRAM users
    # Cluster mode (tidelog/cluster): etcd endpoints host:port[,host:port][/cluster-name]; unset = one node.
    "etcd.connect": (_str, None),
    "etcd.connection.timeout.ms": (_int(1), "5000"),
    "broker.session.timeout.ms": (_int(1000), "9000"),  # the etcd lease of the broker's registration
    "broker.rack": (_str, None),
    "inter.broker.listener.name": (_str, None),
    "replica.lag.time.max.ms": (_int(1), "30000"),
    "replica.fetch.wait.max.ms": (_int(0), "500"),
    "replica.fetch.max.bytes": (_int(1), "1048576"),
    "replica.fetch.response.max.bytes": (_int(1), "10485760"),
    "unclean.leader.election.enable": (_bool, "false"),
    "min.insync.replicas": (_int(1), "1"),
    "metrics.listener": (_str, None),
    # `tidelog serve --processes N` (tidelog/cli/processes.py): N broker processes, cluster nodes
    # 1..N on one host; 1 = one broker in this process, as without the key
    "process.count": (_process_count, "1"),
    "process.etcd.path": (_str, None),  # the etcd binary (default: etcd on PATH, else /usr/bin/etcd)
    "process.etcd.client.port": (_int(0, 65535), "0"),  # 0: a free port, chosen once and kept
    "process.etcd.peer.port": (_int(0, 65535), "0"),
    "log.level": (_choice("DEBUG", "INFO", "WARNING", "ERROR"), "INFO"),
    "log.format": (_choice("text", "json"), "text"),
}


BROKER_KEYS.update(SECURITY_KEYS)


class BrokerConfig:
    """Parsed broker properties. `config[key]` gives the typed value (None when unset)."""

    def __init__(self, raw: dict[str, str]) -> None:
        self.raw = dict(raw)
        self.values: dict[str, Any] = {}  # each value as its key's parser gives it
        errors = []
        for key, _value in raw.items():
            if key not in BROKER_KEYS and not is_listener_key(key):
                log.warning("unknown config key %r ignored", key)
                continue
        for key, (parser, default) in BROKER_KEYS.items():
            s = raw.get(key, default)
            if s is None:
                self.values[key] = None
                continue
            try:
                self.values[key] = parser(s)
            except ValueError as e:
                errors.append(f"invalid value {s!r} for {key}: {e}")
        if errors:
            raise ConfigError("; ".join(errors))
        self.listeners = parse_listeners(self.values["listeners"])
        adv = self.values["advertised.listeners"]
        self.advertised = (
            parse_listeners(adv)
            if adv
            else [
                Listener(lst.name, lst.host if lst.host not in ("", "0.0.0.0", "::") else "127.0.0.1", lst.port)
                for lst in self.listeners
            ]
        )
        try:
            _validate_security(self)
        except ValueError as e:
            raise ConfigError(str(e)) from None

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self.values["log.dirs"] or self.values["log.dir"] or "./data"
        return [Path(d.strip()) for d in str(dirs).split(",") if d.strip()]

    @property
    def node_id(self) -> int:
        b = self.values["broker.id"]
        return int(b) if b is not None and b >= 0 else int(self.values["node.id"])

    def topic_defaults(self) -> dict[str, str]:
        """Topic-level config defaults (Kafka's topic key names) derived from the log.* keys."""
        v = self.values
        roll_ms = v["log.roll.ms"] if v["log.roll.ms"] is not None else v["log.roll.hours"] * 3600_000
        if v["log.retention.ms"] is not None:
            ret_ms = v["log.retention.ms"]
        elif v["log.retention.minutes"] is not None:
            ret_ms = v["log.retention.minutes"] * 60_000
        else:
            ret_ms = v["log.retention.hours"] * 3600_000 if v["log.retention.hours"] >= 0 else -1
        idx = v["index.interval.bytes"] if v["index.interval.bytes"] is not None else v["log.index.interval.bytes"]
        flush_ms = v["log.flush.interval.ms"]
        return {
            "cleanup.policy": str(v["log.cleanup.policy"]),
            "segment.bytes": str(v["log.segment.bytes"]),
            "segment.ms": str(roll_ms),
            "segment.index.bytes": str(v["log.index.size.max.bytes"]),
            "retention.ms": str(ret_ms),
            "retention.bytes": str(v["log.retention.bytes"]),
            "index.interval.bytes": str(idx),
            "max.message.bytes": str(v["message.max.bytes"]),
            "message.timestamp.type": str(v["log.message.timestamp.type"]),
            "message.timestamp.difference.max.ms": str(v["log.message.timestamp.difference.max.ms"]),
            "delete.retention.ms": str(v["log.cleaner.delete.retention.ms"]),
            "min.cleanable.dirty.ratio": str(v["log.cleaner.min.cleanable.ratio"]),
            "flush.messages": str(v["log.flush.interval.messages"]),
            "flush.ms": str(flush_ms if flush_ms is not None else LONG_MAX),
            "file.delete.delay.ms": str(v["log.segment.delete.delay.ms"]),
            "min.insync.replicas": str(v["min.insync.replicas"]),
        }


def read_properties(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for lineno, line in enumerate(Path(path).read_text().splitlines(), 1):
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        m = re.match(r"^([^=:\s]+)\s*[=:]\s*(.*)$", s)
        if not m:
            raise ConfigError(f"{path}:{lineno}: expected key=value, got {line!r}")
        out[m.group(1)] = m.group(2)
    return out


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> BrokerConfig:
    raw: dict[str, str] = {}
    if path:
        raw.update(read_properties(Path(path)))
    for item in overrides or []:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not key=value")
        k, v = item.split("=", 1)
        raw[k.strip()] = v
    return BrokerConfig(raw)
