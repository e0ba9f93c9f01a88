"""Topic-level configuration keys (Kafka's names), validation, and effective values.

The keys and their parsers are the log engine's (`tidelog.log.config.KEYS`); a few replication
keys that mean nothing on one node are accepted and stored so that tools setting them work.
A topic's effective config is the broker's derived defaults (`BrokerConfig.topic_defaults`)
overlaid with the topic's own overrides.
"""

from __future__ import annotations

from ..log.config import KEYS as LOG_KEYS
from ..log.config import LogConfig

ACCEPTED_ONLY = {
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
    "follower.replication.throttled.replicas": "",
    "leader.replication.throttled.replicas": "",
}

_LOG_DEFAULTS = LogConfig().to_properties()


def validate_topic_config(key: str, value: str | None) -> str | None:
    """An error message, or None when `key=value` is a valid topic override."""
    if key in ACCEPTED_ONLY:
        return None
    if key not in LOG_KEYS:
        return f"unknown topic config {key!r}"
    if value is None:
        return None
    try:
        LogConfig.from_properties({key: value})
    except ValueError as e:
        return str(e)
    return None


def effective(defaults: dict[str, str], overrides: dict[str, str]) -> dict[str, str]:
    out = dict(_LOG_DEFAULTS)
    out.update(ACCEPTED_ONLY)
    out.update(defaults)
    out.update(overrides)
    return out


def log_config(defaults: dict[str, str], overrides: dict[str, str]) -> LogConfig:
    return LogConfig.from_properties({k: v for k, v in effective(defaults, overrides).items() if k in LOG_KEYS})
