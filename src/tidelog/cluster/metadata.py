"""The broker's copy of the cluster state in etcd: live brokers, the controller, topic
assignments and partition states, kept current by one watch on the cluster's prefix.

`load()` reads everything at one revision; `run()` then applies every change from the next
revision on, in order, and calls the listeners after each applied event. A load() while the watch
runs (a broker registering again after a lost lease) makes the watch skip the events it already
holds: the copy never goes back to an older state. When etcd is
unreachable the copy simply stops changing: the broker keeps serving the last known state (no
elections, no ISR change: the safe direction). A watch that cannot resume (compacted revision)
reloads the whole state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from .model import BrokerInfo, Endpoint, Keys, PartitionState, TopicAssignment
from .store import Store, StoreUnavailable, WatchEvent

log = logging.getLogger("tidelog.cluster")

Listener = Callable[[str, object], None]  # (kind, detail): "broker" id, "topic" name, "partition" (t, p), "controller"


@dataclass
class MetadataCache:
    store: Store
    keys: Keys
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicAssignment] = field(default_factory=dict)
    states: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    security: dict[str, bytes] = field(default_factory=dict)  # security/... key -> value
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)  # entity ("" default) -> configs
    group_configs: dict[str, dict[str, str]] = field(default_factory=dict)  # group id -> its own configs
    controller_id: int = -1
    controller_epoch: int = -1
    producer_ids_next: int = 0
    revision: int = 0
    listeners: list[Listener] = field(default_factory=list)
    loaded: asyncio.Event = field(default_factory=asyncio.Event)
    _loaded_at: int = 0  # the revision of the last load(): older watch events are already in it

    async def load(self) -> None:
        """Replace the copy with etcd's state read at one revision - unless the watch applied a
        later revision while the read was under way (the copy is newer than the snapshot: it
        stays, and the listeners are told to look again all the same)."""
        kvs, rev = await self.store.get_prefix(self.keys.root)
        if rev < self.revision:
            self._tell("reload", None)
            return
        self.brokers.clear()
        self.topics.clear()
        self.states.clear()
        self.security.clear()
        self.broker_configs.clear()
        self.group_configs.clear()
        self.controller_id = self.controller_epoch = -1
        for kv in kvs:
            self._apply_put(kv.key, kv.value, kv.create_revision, kv.mod_revision)
        self.revision = rev
        self._loaded_at = rev
        self.loaded.set()
        self._tell("reload", None)

    async def run(self) -> None:
        while True:
            try:
                async for ev in self.store.watch(self.keys.root, self.revision + 1):
                    if ev.kv.mod_revision <= self._loaded_at:
                        continue  # a lagging watch's event that a later load() already holds
                    self.revision = max(self.revision, ev.kv.mod_revision)
                    self._apply(ev)
            except asyncio.CancelledError:
                raise
            except StoreUnavailable as e:
                log.warning("cluster state watch ended (%s); reloading", e)
            except Exception:
                log.exception("cluster state watch failed; reloading")
            await asyncio.sleep(0.5)
            try:
                await self.load()
            except StoreUnavailable as e:
                log.warning("etcd unreachable (%s): serving the last known cluster state", e)

    # ---- applying events ---------------------------------------------------------------------
    def _apply(self, ev: WatchEvent) -> None:
        if ev.type == "PUT":
            detail = self._apply_put(ev.kv.key, ev.kv.value, ev.kv.create_revision, ev.kv.mod_revision)
        else:
            detail = self._apply_delete(ev.kv.key)
        if detail is not None:
            self._tell(*detail)

    def _apply_put(self, key: str, value: bytes, create_rev: int, mod_rev: int) -> tuple[str, object] | None:
        k = self.keys
        try:
            if key.startswith(k.brokers):
                info = BrokerInfo.decode(value, create_rev)
                self.brokers[info.node_id] = info
                return "broker", info.node_id
            if key == k.controller:
                import json

                self.controller_id = int(json.loads(value)["broker"])
                self.controller_epoch = create_rev
                return "controller", self.controller_id
            if key == k.producer_ids:
                import json

                self.producer_ids_next = int(json.loads(value)["next"])
                return "producer-ids", self.producer_ids_next
            if key.startswith(k.security):
                self.security[key] = value
                return "security", key
            if key.startswith(k.broker_configs):
                import json

                entity = key[len(k.broker_configs) :]
                self.broker_configs["" if entity == "default" else entity] = {
                    str(a): str(b) for a, b in json.loads(value).items()
                }
                return "broker-configs", entity
            if key.startswith(k.group_configs):
                import json

                group = key[len(k.group_configs) :]
                self.group_configs[group] = {str(a): str(b) for a, b in json.loads(value).items()}
                return "group-configs", group
            parsed = k.parse_topic_key(key)
            if parsed is None:
                return None
            name, p = parsed
            if p is None:
                self.topics[name] = TopicAssignment.decode(name, value, mod_rev)
                return "topic", name
            self.states[(name, p)] = PartitionState.decode(value, mod_rev)
            return "partition", (name, p)
        except (ValueError, KeyError, TypeError) as e:
            log.warning("ignoring malformed cluster key %s: %s", key, e)
            return None

    def _apply_delete(self, key: str) -> tuple[str, object] | None:
        k = self.keys
        if key.startswith(k.brokers):
            node_id = k.parse_broker_key(key)
            if node_id is not None:
                self.brokers.pop(node_id, None)
                return "broker", node_id
            return None
        if key == k.controller:
            self.controller_id = self.controller_epoch = -1
            return "controller", -1
        if key.startswith(k.security):
            self.security.pop(key, None)
            return "security", key
        if key.startswith(k.broker_configs):
            entity = key[len(k.broker_configs) :]
            self.broker_configs.pop("" if entity == "default" else entity, None)
            return "broker-configs", entity
        if key.startswith(k.group_configs):
            group = key[len(k.group_configs) :]
            self.group_configs.pop(group, None)
            return "group-configs", group
        parsed = k.parse_topic_key(key)
        if parsed is None:
            return None
        name, p = parsed
        if p is None:
            self.topics.pop(name, None)
            return "topic", name
        self.states.pop((name, p), None)
        return "partition", (name, p)

    def _tell(self, kind: str, detail: object) -> None:
        for fn in list(self.listeners):
            try:
                fn(kind, detail)
            except Exception:
                log.exception("cluster listener failed on %s %s", kind, detail)

    async def caught_up(self, revision: int, timeout_s: float = 5.0) -> None:
        """Until this copy applied etcd's `revision` (a write of ours, answered once visible here)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.revision < revision and loop.time() < deadline:
            await asyncio.sleep(0.01)

    # ---- questions ---------------------------------------------------------------------------
    def live(self) -> set[int]:
        return set(self.brokers)

    def endpoint(self, node_id: int, listener: str) -> Endpoint | None:
        """Where a live broker listens for `listener` (None: not registered)."""
        info = self.brokers.get(node_id)
        return info.endpoint(listener) if info is not None else None

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        a = self.topics.get(topic)
        if a is None or not 0 <= partition < a.partitions:
            return ()
        return a.replicas[partition]

    def state(self, topic: str, partition: int) -> PartitionState | None:
        return self.states.get((topic, partition))
