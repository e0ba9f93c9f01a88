"""Dynamic broker configs, as Kafka's `kafka-configs --entity-type brokers [--entity-default]`:
IncrementalAlterConfigs / AlterConfigs on a BROKER resource named "" (the cluster-wide default)
or a broker id change the keys below without a restart.

Precedence per key, as Kafka: this broker's dynamic value (DYNAMIC_BROKER_CONFIG), else the
cluster-wide default (DYNAMIC_DEFAULT_BROKER_CONFIG), else the static configuration
(STATIC_BROKER_CONFIG), else the built-in default. Applying a change writes the typed value into
the broker's `BrokerConfig` (every reader asks it at use time) and recomputes the topic defaults
derived from the `log.*` keys, so topics without their own override follow at once (retention,
segment size, cleanup policy ...).

Where they live: a single node keeps them in `dynamic-broker-configs.json` in its data
directory; a cluster in etcd (`configs/brokers/<id|default>`, `cluster/node.py`), where a change
made through any broker reaches every broker's watch and survives restarts of all of them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .config import BROKER_KEYS

if TYPE_CHECKING:
    from .admin import TopicAdmin
    from .config import BrokerConfig

log = logging.getLogger("tidelog.server")

FILE_NAME = "dynamic-broker-configs.json"
DEFAULT_ENTITY = ""

# the keys Kafka lists as cluster-wide dynamically updatable that tidelog reads at use time
DYNAMIC_KEYS = frozenset(
    {
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
        "log.retention.bytes",
        "log.segment.bytes",
        "log.roll.ms",
        "log.roll.hours",
        "log.cleanup.policy",
        "log.index.interval.bytes",
        "log.message.timestamp.type",
        "log.message.timestamp.difference.max.ms",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.segment.delete.delay.ms",
        "message.max.bytes",
        "min.insync.replicas",
        "unclean.leader.election.enable",
    }
)
DYNAMIC_BROKER, DYNAMIC_DEFAULT = 2, 3  # Kafka's config sources (DYNAMIC_TOPIC is 1)


class DynamicBrokerConfigs:
    def __init__(
        self,
        config: BrokerConfig,
        admin: TopicAdmin,
        data_dir: Path | None,
        publisher: Callable[[str, dict[str, str]], Awaitable[None]] | None = None,
    ) -> None:
        """`publisher` (cluster mode): writes (entity, configs) to etcd; they are applied when the
        watch brings them back, on every broker alike."""
        self.config = config
        self.admin = admin
        self.static = {k: config.values.get(k) for k in DYNAMIC_KEYS}
        self.path = Path(data_dir) / FILE_NAME if data_dir is not None else None
        self.entities: dict[str, dict[str, str]] = {}
        self.publisher = publisher
        if self.path is not None and self.path.exists():
            try:
                self.entities = {
                    str(k): {str(a): str(b) for a, b in v.items()} for k, v in json.loads(self.path.read_text()).items()
                }
            except (OSError, ValueError, AttributeError) as e:
                log.warning("%s unreadable (%s): dynamic broker configs start empty", self.path, e)
        self.apply()

    # ---- questions ----------------------------------------------------------------------------
    def entity(self, name: str) -> dict[str, str]:
        return dict(self.entities.get(name, {}))

    def source(self, key: str) -> tuple[str, int] | None:
        """(value, Kafka config source) when `key` is set dynamically for this broker."""
        mine = self.entities.get(str(self.config.node_id), {})
        if key in mine:
            return mine[key], DYNAMIC_BROKER
        default = self.entities.get(DEFAULT_ENTITY, {})
        if key in default:
            return default[key], DYNAMIC_DEFAULT
        return None

    @staticmethod
    def invalid(configs: dict[str, str]) -> str | None:
        """Why these configs cannot be set dynamically (None: they can)."""
        static = sorted(k for k in configs if k not in DYNAMIC_KEYS)
        if static:
            return f"Cannot update these configs dynamically: {static}"
        for key, value in configs.items():
            try:
                BROKER_KEYS[key][0](value)
            except (ValueError, TypeError) as e:
                return f"Invalid value {value} for configuration {key}: {e}"
        return None

    # ---- changes -------------------------------------------------------------------------------
    async def alter(self, entity: str, configs: dict[str, str]) -> None:
        """Replace the dynamic configs of `entity` ("" = cluster-wide default, or a broker id)."""
        if self.publisher is not None:
            await self.publisher(entity, configs)
            return
        if configs:
            self.entities[entity] = dict(configs)
        else:
            self.entities.pop(entity, None)
        self._save()
        self.apply()

    def replace_all(self, entities: dict[str, dict[str, str]]) -> None:
        """Cluster mode: every entity's configs, as etcd holds them now."""
        if entities != self.entities:
            self.entities = {k: dict(v) for k, v in entities.items()}
            self._save()
            self.apply()

    def apply(self) -> None:
        cfg = self.config
        mine = self.entities.get(str(cfg.node_id), {})
        default = self.entities.get(DEFAULT_ENTITY, {})
        changed = []
        for key in DYNAMIC_KEYS:
            raw = mine.get(key, default.get(key))
            try:
                value = BROKER_KEYS[key][0](raw) if raw is not None else self.static[key]
            except (ValueError, TypeError):
                value = self.static[key]  # validated when set; a bad file value keeps the static one
            if cfg.values.get(key) != value:
                cfg.values[key] = value
                changed.append(key)
        if changed:
            log.info("dynamic broker configs applied: %s", {k: cfg.values[k] for k in sorted(changed)})
            self.admin.refresh_defaults()

    def _save(self) -> None:
        if self.path is None:
            return
        from .private_files import write_private_json

        write_private_json(self.path, self.entities)
