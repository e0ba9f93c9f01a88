"""The cluster's state in etcd as one broker holds and changes it: the coordination store, the
key layout, the watched metadata cache, producer-id blocks, and the changes a broker makes there
on behalf of clients - topics (create, delete, partitions, configs, reassignments) and dynamic
broker configs. Built by the composition root first in cluster mode, before the topic admin and
the partitions, which use it (`hosts`: which partitions have a replica here).

Every write is a compare-and-swap on the revision it was decided from, or a create where nothing
exists; a write whose answer was lost is read back, never assumed (store.py). A change is
answered once this broker's copy (its registry, through the watch) shows it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from .etcd import EtcdStore
from .metadata import MetadataCache
from .model import Keys, PartitionState, TopicAssignment, assign_replicas, root
from .pids import ClusterProducerIds
from .store import Compare, Op, Store
from .view import PartitionView

if TYPE_CHECKING:
    from ..core.config import BrokerConfig
    from ..core.topics import Topic, TopicRegistry
    from ..wire.responses import MetadataResponseBroker

log = logging.getLogger("tidelog.cluster")

Result = tuple[int, str | None]


def parse_connect(s: str) -> tuple[list[str], str]:
    """`host:port[,host:port][/name]` -> (endpoints, cluster name)."""
    hosts, _, name = s.strip().partition("/")
    return [h.strip() for h in hosts.split(",") if h.strip()], name


class ClusterState:
    def __init__(self, config: BrokerConfig, registry: TopicRegistry, store: Store | None = None) -> None:
        """`store`: the coordination store (default: etcd at `etcd.connect`; the simulation,
        tests/sim, passes its own)."""
        self.config = config
        self.node_id = config.node_id
        self.registry = registry
        endpoints, name = parse_connect(config["etcd.connect"])
        self.store: Store = (
            store if store is not None else EtcdStore(endpoints, timeout_s=config["etcd.connection.timeout.ms"] / 1000)
        )
        self.keys = Keys(root(name))
        self.cache = MetadataCache(self.store, self.keys)
        self.pids = ClusterProducerIds(self.store, self.keys.producer_ids, self.cache)

    # ---- what this broker holds -----------------------------------------------------------------
    def hosts(self, topic: str, partition: int) -> bool:
        """Whether this broker holds a replica of the partition (the assignment says)."""
        a = self.cache.topics.get(topic)
        if a is None:
            return False
        return 0 <= partition < a.partitions and self.node_id in a.replicas[partition]

    def _topic_override(self, topic: str, key: str) -> str | None:
        """The topic's own value of `key` (None: the broker's applies)."""
        t = self.registry.get(topic)
        return t.configs.get(key) if t is not None else None

    def unclean(self, topic: str) -> bool:
        v = self._topic_override(topic, "unclean.leader.election.enable")
        return (v == "true") if v is not None else bool(self.config["unclean.leader.election.enable"])

    def min_isr(self, topic: str) -> int:
        v = self._topic_override(topic, "min.insync.replicas")
        return int(v) if v is not None else int(self.config["min.insync.replicas"])

    # ---- the view the handlers ask -------------------------------------------------------------
    def controller_id(self) -> int:
        return self.cache.controller_id

    def brokers(self, listener: str) -> list[MetadataResponseBroker]:
        out: list[MetadataResponseBroker] = []
        for b in sorted(self.cache.brokers):
            ep = self.cache.brokers[b].endpoint(listener)
            if ep is not None:
                out.append({"node_id": b, "host": ep.host, "port": ep.port, "rack": self.cache.brokers[b].rack})
        return out

    def partition(self, topic: str, partition: int) -> PartitionView:
        replicas = self.cache.replicas(topic, partition)
        st: PartitionState | None = self.cache.state(topic, partition)
        live = self.cache.brokers
        if st is None:
            return PartitionView(-1, -1, replicas, (), tuple(b for b in replicas if b not in live))
        leader = st.leader if st.leader in live else -1
        return PartitionView(leader, st.leader_epoch, replicas, st.isr, tuple(b for b in replicas if b not in live))

    # ---- topic administration through etcd ---------------------------------------------------
    def live_brokers(self) -> list[int]:
        return sorted(self.cache.brokers)

    def check_replication_factor(self, rf: int) -> Result:
        n = len(self.cache.brokers)
        if rf == -1:
            rf = self.config["default.replication.factor"]
        if rf <= 0 or rf > n:
            return (E.invalid_replication_factor.value, f"Replication factor: {rf} larger than available brokers: {n}.")
        return 0, None

    async def create_topic(
        self,
        name: str,
        partitions: int,
        rf: int,
        configs: Mapping[str, str | None],
        replicas: list[tuple[int, ...]] | None = None,
    ) -> tuple[int, str | None, Topic | None]:
        if rf == -1:
            rf = self.config["default.replication.factor"]
        if replicas is None:
            brokers = [(b, i.rack) for b, i in self.cache.brokers.items()]
            replicas = assign_replicas(partitions, rf, brokers, start=hash(name) % max(len(brokers), 1))
        a = TopicAssignment(name, uuid.uuid4(), tuple(replicas), {k: v for k, v in configs.items() if v is not None})
        key = self.keys.topic(name)
        res = await self.store.txn([Compare.create(key, 0)], [Op.put(key, a.encode())])
        if not res.succeeded:
            return E.topic_already_exists.value, f"Topic '{name}' already exists.", None
        topic = await self._wait_local(name, a.topic_id)
        return 0, None, topic

    async def _wait_local(self, name: str, topic_id: uuid.UUID, timeout_s: float = 10.0) -> Topic | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            t = self.registry.get(name)
            if t is not None and t.topic_id == topic_id:
                return t
            await asyncio.sleep(0.01)
        return self.registry.get(name)

    async def delete_topic(self, name: str) -> Result:
        key = self.keys.topic(name)
        await self.store.txn([], [Op.delete(key), Op.delete_prefix(key + "/")])
        deadline = asyncio.get_running_loop().time() + 10
        while self.registry.get(name) is not None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        return 0, None

    async def set_partitions(self, name: str, count: int) -> Result:
        a = self.cache.topics.get(name)
        if a is None:
            return E.unknown_topic_or_partition.value, f"Topic '{name}' does not exist."
        brokers = [(b, i.rack) for b, i in self.cache.brokers.items()]
        rf = len(a.replicas[0]) if a.replicas else 1
        more = assign_replicas(count - a.partitions, rf, brokers, start=a.partitions)
        new = replace(a, replicas=a.replicas + tuple(more))
        key = self.keys.topic(name)
        kv = await self.store.get(key)
        if kv is None:
            return E.unknown_topic_or_partition.value, f"Topic '{name}' does not exist."
        res = await self.store.txn([Compare.mod(key, kv.mod_revision)], [Op.put(key, new.encode())])
        if not res.succeeded:
            return E.reassignment_in_progress.value, "Topic changed meanwhile; retry."
        deadline = asyncio.get_running_loop().time() + 10
        while (
            (t := self.registry.get(name)) is not None
            and t.partitions < count
            and asyncio.get_running_loop().time() < deadline
        ):
            await asyncio.sleep(0.01)
        return 0, None

    async def reassign(self, name: str, partition: int, target: tuple[int, ...] | None) -> Result:
        """AlterPartitionReassignments for one partition: start (or change) moving it to `target`,
        or cancel (None). The new replicas fetch; the controller completes it (controller.py)."""
        key = self.keys.topic(name)
        for _ in range(10):
            a = self.cache.topics.get(name)
            if a is None or not 0 <= partition < a.partitions:
                return E.unknown_topic_or_partition.value, "The partition does not exist."
            moving = partition in a.adding or partition in a.removing
            if target is None and not moving:
                return E.no_reassignment_in_progress.value, "No reassignment is in progress for this partition."
            if target is not None:
                if not target or len(set(target)) != len(target):
                    return E.invalid_replica_assignment.value, "The target replicas must be distinct and not empty."
                unknown = [b for b in target if b not in self.cache.brokers and b not in a.replicas[partition]]
                if unknown:
                    return E.invalid_replica_assignment.value, f"Unknown brokers {unknown}."
            new = a.reassigned(partition, target)
            if new.replicas == a.replicas and new.adding == a.adding and new.removing == a.removing:
                return 0, None  # already so
            res = await self.store.txn([Compare.mod(key, a.version)], [Op.put(key, new.encode())])
            if res.succeeded:
                log.info(
                    "%s-%d: reassignment %s: replicas %s",
                    name,
                    partition,
                    "cancelled" if target is None else f"to {list(target)}",
                    list(new.replicas[partition]),
                )
                await self.cache.caught_up(res.revision)
                return 0, None
            await asyncio.sleep(0.05)  # the topic changed meanwhile (another partition's move)
        return E.reassignment_in_progress.value, "The topic kept changing; retry."

    def reassignments(self) -> dict[str, dict[int, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]]:
        """topic -> partition -> (replicas, adding, removing) of the reassignments in progress."""
        out: dict[str, dict[int, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]] = {}
        for name, a in self.cache.topics.items():
            for p in sorted(set(a.adding) | set(a.removing)):
                out.setdefault(name, {})[p] = (a.replicas[p], a.adding.get(p, ()), a.removing.get(p, ()))
        return out

    async def set_configs(self, name: str, configs: dict[str, str]) -> Result:
        key = self.keys.topic(name)
        for _ in range(10):
            kv = await self.store.get(key)
            if kv is None:
                return E.unknown_topic_or_partition.value, f"Topic '{name}' does not exist."
            a = TopicAssignment.decode(name, kv.value)
            new = replace(a, configs=dict(configs))
            res = await self.store.txn([Compare.mod(key, kv.mod_revision)], [Op.put(key, new.encode())])
            if res.succeeded:
                return 0, None
        return E.reassignment_in_progress.value, "Topic changed meanwhile; retry."

    # ---- dynamic broker configs ------------------------------------------------------------------
    async def put_group_configs(self, group: str, configs: dict[str, str]) -> None:
        """A group's own configs into etcd (none: deleted); returns once this broker has them."""
        key = self.keys.group_configs + group
        op = Op.put(key, json.dumps(configs, sort_keys=True).encode()) if configs else Op.delete(key)
        res = await self.store.txn([], [op])
        await self.cache.caught_up(res.revision)

    async def put_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        """Dynamic broker configs of `entity` into etcd; returns once this broker applied them."""
        key = self.keys.broker_config(entity)
        op = Op.put(key, json.dumps(configs, sort_keys=True).encode()) if configs else Op.delete(key)
        res = await self.store.txn([], [op])
        await self.cache.caught_up(res.revision)
