"""Group configs, as Kafka's `kafka-configs --entity-type groups`: IncrementalAlterConfigs and
DescribeConfigs on a GROUP resource (type 32) set and show a group's own values of the keys below,
which override the broker's `group.share.*` / `group.consumer.*` defaults for that group.

    share.auto.offset.reset        latest | earliest | by_duration:<ISO-8601 duration>   default latest
    share.isolation.level          read_uncommitted | read_committed         default read_uncommitted
    share.record.lock.duration.ms  a record's acquisition lock      default group.share.record.lock.duration.ms
    share.delivery.count.limit     deliveries before archiving      default group.share.delivery.count.limit
    share.partition.max.record.locks  records in flight per share partition (read when the share
                                   partition is loaded)   default group.share.partition.max.record.locks
    share.session.timeout.ms, share.heartbeat.interval.ms, consumer.session.timeout.ms,
    consumer.heartbeat.interval.ms, streams.session.timeout.ms, streams.heartbeat.interval.ms,
    streams.num.standby.replicas, streams.initial.rebalance.delay.ms, streams.assignment.interval.ms
    (default: the broker's group.share.* / group.consumer.* / group.streams.* keys)

A numeric value must lie within the broker's bounds for it, as Kafka's GroupConfig checks
(`share.record.lock.duration.ms` within `group.share.min.record.lock.duration.ms` and
`group.share.max.record.lock.duration.ms`, and so on for each key of a `group.*` default).

A single node keeps them in `group-configs.json` in its data directory (rewritten atomically on
each change, read at start); a cluster keeps them in etcd (`configs/groups/<group>`), every broker
its copy (the same file, rewritten as etcd changes). A value is checked before it is stored
(INVALID_CONFIG otherwise).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .private_files import write_private_json

if TYPE_CHECKING:
    from .config import BrokerConfig

log = logging.getLogger("tidelog.server")

FILE_NAME = "group-configs.json"
_DURATION = re.compile(r"^-?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration (PnDTnHnMnS) in milliseconds; ValueError when it is not one."""
    m = _DURATION.match(text.strip())
    if m is None or text.strip() in ("P", "PT", "-P", "-PT"):
        raise ValueError(f"not an ISO-8601 duration: {text!r}")
    d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return int(((d * 24 + h) * 60 + mi) * 60_000 + s * 1000)


def _reset(v: str) -> str:
    if v in ("latest", "earliest"):
        return v
    if v.startswith("by_duration:"):
        if parse_duration_ms(v[len("by_duration:") :]) < 0:
            raise ValueError("a negative duration")
        return v
    raise ValueError("latest, earliest or by_duration:<duration>")


def _positive(v: str) -> str:
    if int(v) <= 0:
        raise ValueError("must be positive")
    return v


def _non_negative(v: str) -> str:
    if int(v) < 0:
        raise ValueError("must not be negative")
    return v


def _choice(*options: str) -> Callable[[str], str]:
    def check(v: str) -> str:
        if v not in options:
            raise ValueError(f"one of {', '.join(options)}")
        return v

    return check


# key -> (check, the broker key whose value is the default, or the fixed default)
GROUP_KEYS: dict[str, tuple[Callable[[str], str], str]] = {
    "share.auto.offset.reset": (_reset, "=latest"),
    "share.isolation.level": (_choice("read_uncommitted", "read_committed"), "=read_uncommitted"),
    "share.record.lock.duration.ms": (_positive, "group.share.record.lock.duration.ms"),
    "share.delivery.count.limit": (_positive, "group.share.delivery.count.limit"),
    "share.partition.max.record.locks": (_positive, "group.share.partition.max.record.locks"),
    "share.session.timeout.ms": (_positive, "group.share.session.timeout.ms"),
    "share.heartbeat.interval.ms": (_positive, "group.share.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": (_positive, "group.consumer.session.timeout.ms"),
    "consumer.heartbeat.interval.ms": (_positive, "group.consumer.heartbeat.interval.ms"),
    "streams.session.timeout.ms": (_positive, "group.streams.session.timeout.ms"),
    "streams.heartbeat.interval.ms": (_positive, "group.streams.heartbeat.interval.ms"),
    "streams.num.standby.replicas": (_non_negative, "group.streams.num.standby.replicas"),
    "streams.initial.rebalance.delay.ms": (_non_negative, "group.streams.initial.rebalance.delay.ms"),
    "streams.assignment.interval.ms": (_non_negative, "group.streams.assignment.interval.ms"),
}
# a numeric key's bounds: the broker keys of its least and greatest values (Kafka's GroupConfig)
BOUNDS: dict[str, tuple[str, str]] = {
    "share.record.lock.duration.ms": (
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
    "share.delivery.count.limit": ("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    "share.partition.max.record.locks": (
        "group.share.min.partition.max.record.locks",
        "group.share.max.partition.max.record.locks",
    ),
    "share.session.timeout.ms": ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    "consumer.heartbeat.interval.ms": (
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    "streams.session.timeout.ms": ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    "streams.heartbeat.interval.ms": (
        "group.streams.min.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
    ),
    "streams.assignment.interval.ms": (
        "group.streams.min.assignment.interval.ms",
        "group.streams.max.assignment.interval.ms",
    ),
}
# keys with only an upper bound (their least value is 0)
UPPER_BOUNDS: dict[str, str] = {"streams.num.standby.replicas": "group.streams.max.standby.replicas"}


class GroupConfigs:
    def __init__(
        self,
        config: BrokerConfig,
        data_dir: Path | None,
        publisher: Callable[[str, dict[str, str]], Awaitable[None]] | None = None,
    ) -> None:
        self.config = config
        self.publisher = publisher  # a cluster: changes go through etcd (`replace_all` brings them)
        self.path = None if data_dir is None else Path(data_dir) / FILE_NAME
        self.groups: dict[str, dict[str, str]] = {}
        if self.path is not None and self.path.exists():
            try:
                self.groups = {g: dict(v) for g, v in json.loads(self.path.read_text()).items()}
            except (ValueError, OSError) as e:
                log.warning("%s unreadable, group configs ignored: %s", self.path, e)

    def invalid(self, key: str, value: str | None) -> str | None:
        """Why `key`=`value` cannot be set on a group, or None."""
        if key not in GROUP_KEYS:
            return f"Unknown group config name: {key}"
        if value is None:
            return None
        try:
            GROUP_KEYS[key][0](value)
        except ValueError as e:
            return f"Invalid value {value} for configuration {key}: {e}"
        if key in BOUNDS:
            low, high = BOUNDS[key]
            if int(value) < self.config[low]:
                return f"{key} must be greater than or equal to {low}"
            if int(value) > self.config[high]:
                return f"{key} must be less than or equal to {high}"
        if key in UPPER_BOUNDS and int(value) > self.config[UPPER_BOUNDS[key]]:
            return f"{key} must be less than or equal to {UPPER_BOUNDS[key]}"
        return None

    def set(self, group: str, values: dict[str, str | None]) -> None:
        """Set (None: delete) keys of `group`; the file is rewritten."""
        mine = self.groups.setdefault(group, {})
        for k, v in values.items():
            if v is None:
                mine.pop(k, None)
            else:
                mine[k] = v
        if not mine:
            del self.groups[group]
        if self.path is not None:
            write_private_json(self.path, self.groups)

    async def alter(self, group: str, values: dict[str, str | None]) -> None:
        """Set (None: delete) keys of `group`: here, or in a cluster every broker's, through etcd
        (returns once this broker has the change)."""
        if self.publisher is None:
            self.set(group, values)
            return
        mine = self.own(group)
        for k, v in values.items():
            if v is None:
                mine.pop(k, None)
            else:
                mine[k] = v
        await self.publisher(group, mine)

    def replace_all(self, groups: dict[str, dict[str, str]]) -> None:
        """A cluster: every group's configs, as etcd holds them now."""
        if groups != self.groups:
            self.groups = {g: dict(v) for g, v in groups.items()}
            if self.path is not None:
                write_private_json(self.path, self.groups)

    def own(self, group: str) -> dict[str, str]:
        return dict(self.groups.get(group, {}))

    def get(self, group: str, key: str) -> str:
        """The group's value of `key`, else the broker's (or fixed) default."""
        value = self.groups.get(group, {}).get(key)
        if value is not None:
            return value
        default = GROUP_KEYS[key][1]
        return default[1:] if default.startswith("=") else str(self.config[default])

    def get_int(self, group: str, key: str) -> int:
        return int(self.get(group, key))
