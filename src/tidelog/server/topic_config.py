"""Topic-level configuration keys (Kafka's names), validation, and effective values.

A topic's effective config is the broker's derived defaults (`BrokerConfig.topic_defaults`)
overlaid with the topic's own overrides. Overrides are validated here before they are stored.
"""

from __future__ import annotations

from .config import LONG_MAX, _bool, _choice, _int

_ratio = lambda s: _float01(s)  # noqa: E731


def _float01(s: str) -> float:
    v = float(s)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{v} is not within [0, 1]")
    return v


TOPIC_KEYS = {
    "cleanup.policy": _choice("delete", "compact", "compact,delete", "delete,compact"),
    "compression.type": _choice("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
    "delete.retention.ms": _int(0),
    "file.delete.delay.ms": _int(0),
    "flush.messages": _int(1),
    "flush.ms": _int(0),
    "index.interval.bytes": _int(0),
    "max.compaction.lag.ms": _int(1),
    "max.message.bytes": _int(0),
    "message.timestamp.type": _choice("CreateTime", "LogAppendTime"),
    "message.timestamp.difference.max.ms": _int(0),
    "message.timestamp.before.max.ms": _int(0),
    "message.timestamp.after.max.ms": _int(0),
    "min.cleanable.dirty.ratio": _ratio,
    "min.compaction.lag.ms": _int(0),
    "min.insync.replicas": _int(1),
    "preallocate": _bool,
    "retention.bytes": _int(-1),
    "retention.ms": _int(-1),
    "segment.bytes": _int(14),
    "segment.index.bytes": _int(4),
    "segment.jitter.ms": _int(0),
    "segment.ms": _int(1),
    "unclean.leader.election.enable": _bool,
    "message.downconversion.enable": _bool,
}

EXTRA_DEFAULTS = {
    "compression.type": "producer",
    "max.compaction.lag.ms": str(LONG_MAX),
    "message.timestamp.before.max.ms": str(LONG_MAX),
    "message.timestamp.after.max.ms": str(LONG_MAX),
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "segment.jitter.ms": "0",
    "unclean.leader.election.enable": "false",
    "message.downconversion.enable": "true",
}


def validate_topic_config(key: str, value: str | None) -> str | None:
    """An error message, or None when `key=value` is a valid topic override."""
    parser = TOPIC_KEYS.get(key)
    if parser is None:
        return f"unknown topic config {key!r}"
    if value is None:
        return None
    try:
        parser(value)
    except ValueError as e:
        return f"invalid value {value!r} for {key}: {e}"
    return None


def effective(defaults: dict[str, str], overrides: dict[str, str]) -> dict[str, str]:
    out = dict(EXTRA_DEFAULTS)
    out.update(defaults)
    out.update(overrides)
    return out
