"""`LogConfig`: a topic's log settings under Kafka's topic config names, parsed and validated.

`LogConfig.from_properties({"retention.ms": "1000"}, base=defaults)` overlays string properties
(as stored by topic admin) on `base`; invalid values raise `ValueError` naming the key. Keys the
log engine does not use (`min.insync.replicas`, ...) are ignored: the server owns the list of
valid names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

LONG_MAX = 2**63 - 1
DAY_MS = 24 * 60 * 60 * 1000


def _int(lo: int, hi: int = LONG_MAX) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(str(s).strip())
        except ValueError:
            raise ValueError(f"not an integer: {s!r}") from None
        if not lo <= v <= hi:
            raise ValueError(f"{v} is outside [{lo}, {hi}]")
        return v

    return parse


def _choice(*options: str) -> Callable[[str], str]:
    def parse(s: str) -> str:
        v = str(s).strip()
        if v not in options:
            raise ValueError(f"{v!r} is not one of {', '.join(options)}")
        return v

    return parse


def _bool(s: str) -> bool:
    v = str(s).strip().lower()
    if v not in ("true", "false"):
        raise ValueError(f"not a boolean: {s!r}")
    return v == "true"


def _ratio(s: str) -> float:
    try:
        v = float(str(s).strip())
    except ValueError:
        raise ValueError(f"not a number: {s!r}") from None
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{v} is outside [0, 1]")
    return v


def _policy(s: str) -> str:
    """`delete`, `compact`, both, or - as in Kafka 4.x - none (an empty list: segments are kept
    forever, neither deleted by retention nor compacted)."""
    parts = sorted({p.strip() for p in str(s).split(",") if p.strip()})
    if any(p not in ("delete", "compact") for p in parts):
        raise ValueError(f"{s!r} is not delete, compact, both or empty")
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * DAY_MS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    retention_ms: int = 7 * DAY_MS  # -1: unlimited
    retention_bytes: int = -1  # -1: unlimited
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    cleanup_policy: str = "delete"
    delete_retention_ms: int = DAY_MS
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    preallocate: bool = False
    compression_type: str = "producer"
    message_downconversion_enable: bool = True

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], base: LogConfig | None = None) -> LogConfig:
        changes: dict[str, Any] = {}
        for key, value in props.items():
            spec = KEYS.get(key)
            if spec is None or value is None:
                continue
            attr, parse = spec
            try:
                changes[attr] = parse(value)
            except ValueError as e:
                raise ValueError(f"invalid value {value!r} for {key}: {e}") from None
        return replace(base or cls(), **changes)

    def to_properties(self) -> dict[str, str]:
        out = {}
        for key, (attr, _) in KEYS.items():
            v = getattr(self, attr)
            out[key] = str(v).lower() if isinstance(v, bool) else str(v)
        return out


KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "segment.bytes": ("segment_bytes", _int(14, 2**31 - 1)),
    "segment.ms": ("segment_ms", _int(1)),
    "segment.jitter.ms": ("segment_jitter_ms", _int(0)),
    "segment.index.bytes": ("segment_index_bytes", _int(12, 2**31 - 1)),
    "retention.ms": ("retention_ms", _int(-1)),
    "retention.bytes": ("retention_bytes", _int(-1)),
    "index.interval.bytes": ("index_interval_bytes", _int(0, 2**31 - 1)),
    "max.message.bytes": ("max_message_bytes", _int(0, 2**31 - 1)),
    "message.timestamp.type": ("message_timestamp_type", _choice("CreateTime", "LogAppendTime")),
    "message.timestamp.difference.max.ms": ("message_timestamp_difference_max_ms", _int(0)),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", _int(0)),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", _int(0)),
    "cleanup.policy": ("cleanup_policy", _policy),
    "delete.retention.ms": ("delete_retention_ms", _int(0)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _int(0)),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _int(1)),
    "flush.messages": ("flush_messages", _int(1)),
    "flush.ms": ("flush_ms", _int(0)),
    "file.delete.delay.ms": ("file_delete_delay_ms", _int(0)),
    "preallocate": ("preallocate", _bool),
    "compression.type": (
        "compression_type",
        _choice("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
    ),
    "message.downconversion.enable": ("message_downconversion_enable", _bool),
}

assert {a for a, _ in KEYS.values()} == {f.name for f in fields(LogConfig)}
