"""Topic administration shared by CreateTopics, DeleteTopics, CreatePartitions, the config APIs
and Metadata's auto-creation. Every operation answers (error_code, message) as Kafka would.

The handlers ask a single node and a cluster member the same way: `create_topic`,
`delete_topic` and `set_partitions` return an awaitable in both modes. A single node changes its
registry at the call (the awaitable is already done, so a later check in the same request sees
the change); a cluster member writes etcd, and the awaitable ends once this broker's registry
follows (cluster/state.py)."""

from __future__ import annotations

import logging
import resource
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

from kio.schema.errors import ErrorCode as E

from .topic_config import effective, validate_topic_config
from .topics import INTERNAL_TOPICS, Topic, TopicRegistry, topic_name_error

if TYPE_CHECKING:
    from .config import BrokerConfig

log = logging.getLogger("tidelog.admin")
Result = tuple[int, str | None]
Created = tuple[int, str | None, Topic | None]  # (error_code, message, the topic once here)
_T = TypeVar("_T")
OK: Result = (0, None)

# Kafka refuses a CreateTopics or CreatePartitions request adding more than 10,000 partitions in all
# (KAFKA-17870, KAFKA-19673), with this POLICY_VIOLATION message.
MAX_NEW_PARTITIONS_PER_REQUEST = 10_000
TOO_MANY_PER_REQUEST: Result = (E.policy_violation.value, "Excessively large number of partitions per request.")
# Every partition keeps open its .log and its .index and .timeindex files, each of those twice
# (file and mmap): creating partitions past RLIMIT_NOFILE would fail half-way with EMFILE and leave
# a broker that can open nothing, not even its logs at the next start. Room is kept for connections.
FILES_PER_PARTITION = 5
FILES_RESERVED = 2048


def partition_limit() -> int:
    """The most partitions this process's open-file limit allows (`tidelog serve` raises the soft
    limit to the hard one first: see `raise_open_file_limit`). A quarter of a small limit is kept
    for connections: with the common default of 1,024 files that is 153 partitions, not none."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 31
    return max(0, (soft - min(FILES_RESERVED, soft // 4)) // FILES_PER_PARTITION)


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit (capped at 1,048,576), as servers that hold
    a file per segment do; returns (before, after). Failure leaves the limit as it was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard if hard != resource.RLIM_INFINITY else 1 << 20, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            return soft, soft
        return soft, want
    return soft, soft


class ClusterTopics(Protocol):
    """Cluster mode: where topics are changed (etcd, cluster/state.py); the registry follows."""

    def live_brokers(self) -> list[int]: ...

    def check_replication_factor(self, rf: int) -> Result: ...

    async def create_topic(
        self,
        name: str,
        partitions: int,
        rf: int,
        configs: Mapping[str, str | None],
        replicas: list[tuple[int, ...]] | None = None,
    ) -> tuple[int, str | None, Topic | None]: ...

    async def delete_topic(self, name: str) -> Result: ...

    async def set_partitions(self, name: str, count: int) -> Result: ...

    async def set_configs(self, name: str, configs: dict[str, str]) -> Result: ...


async def _done(value: _T) -> _T:
    """An awaitable of a result known at once (a single node's change, made at the call)."""
    return value


class TopicAdmin:
    """Topic creation, deletion and configuration over the registry; tells its listeners (the
    partitions, the coordinators) of every change. In a cluster (`cluster` given) topics are
    created and configured through etcd, and the registry follows what etcd holds."""

    def __init__(self, config: BrokerConfig, registry: TopicRegistry, cluster: ClusterTopics | None = None) -> None:
        self.config = config
        self.registry = registry
        self.topic_defaults = config.topic_defaults()
        self.listeners: list[Callable[[str, Topic], None]] = []  # (event, topic) for logs/coordinators
        self.cluster = cluster

    def topic_configs(self, topic: Topic) -> dict[str, str]:
        return effective(self.topic_defaults, topic.configs)

    def new_topic_configs(self, configs: dict[str, str | None]) -> dict[str, str]:
        """The configs a topic created with `configs` would have (`topic_configs` of it): every
        topic key, as CreateTopics answers them for validate_only as for a creation."""
        return effective(self.topic_defaults, {k: v for k, v in configs.items() if v is not None})

    def check_create(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str | None]
    ) -> Result:
        err = topic_name_error(name)
        if err:
            return E.invalid_topic_exception.value, err
        if self.registry.get(name) is not None:
            return E.topic_already_exists.value, f"Topic '{name}' already exists."
        if partitions <= 0:
            return E.invalid_partitions.value, "Number of partitions must be larger than 0."
        if partitions > 100_000:
            return E.invalid_partitions.value, "Number of partitions is too large."
        room = self.check_room(partitions)
        if room[0]:
            return room
        if self.cluster is not None:
            code, msg = self.cluster.check_replication_factor(replication_factor)
            if code:
                return code, msg
        elif replication_factor not in (-1, 1):
            return (
                E.invalid_replication_factor.value,
                f"Replication factor {replication_factor} is larger than the 1 available broker.",
            )
        for key, value in configs.items():
            err = validate_topic_config(key, value)
            if err:
                return E.invalid_config.value, err
        return OK

    def live_brokers(self) -> list[int]:
        """The brokers a replica may be assigned to: the cluster's live ones, or this one."""
        return self.cluster.live_brokers() if self.cluster is not None else [self.config.node_id]

    def replication_factor(self, requested: int) -> int:
        """The replication factor a topic created asking `requested` (-1: the default) gets; 1 on
        a single node, where there is no other broker to replicate to."""
        if self.cluster is None:
            return 1
        return int(self.config["default.replication.factor"]) if requested == -1 else requested

    def check_new_partition_assignments(self, assignments: list[list[int]]) -> Result:
        """CreatePartitions' explicit assignments: a single node accepts only itself. A cluster
        places new partitions itself (`ClusterState.set_partitions`) and does not read them."""
        if self.cluster is None and any(a != [self.config.node_id] for a in assignments):
            return E.invalid_replica_assignment.value, f"Only broker {self.config.node_id} exists."
        return OK

    def create_topic(
        self,
        name: str,
        partitions: int,
        rf: int,
        configs: Mapping[str, str | None],
        replicas: list[tuple[int, ...]] | None = None,
    ) -> Awaitable[Created]:
        """Create a topic `check_create` passed (see the module docstring for when it is done)."""
        if self.cluster is not None:
            return self.cluster.create_topic(name, partitions, rf, configs, replicas)
        return _done((0, None, self.create(name, partitions, configs)))

    def delete_topic(self, name: str) -> Awaitable[Result]:
        """Delete a topic `check_delete` passed."""
        if self.cluster is not None:
            return self.cluster.delete_topic(name)
        return _done(self.delete(name))

    def set_partitions(self, name: str, count: int) -> Awaitable[Result]:
        """Grow a topic `check_partitions` passed to `count` partitions."""
        if self.cluster is not None:
            return self.cluster.set_partitions(name, count)
        self.add_partitions(name, count)
        return _done(OK)

    def create(self, name: str, partitions: int, configs: Mapping[str, str | None]) -> Topic:
        """A topic with `configs` as its overrides (null values dropped)."""
        overrides = {k: v for k, v in configs.items() if v is not None}
        topic = self.registry.create(name, partitions, overrides)
        log.info("created topic %s with %d partitions %s", name, partitions, overrides or "")
        self._notify("created", topic)
        return topic

    def create_local(self, name: str, topic_id: uuid.UUID, partitions: int, configs: dict[str, str]) -> Topic:
        """Cluster mode: a topic etcd holds, mirrored into this broker's registry."""
        topic = self.registry.create(name, partitions, configs, topic_id)
        log.info("topic %s (%d partitions) from the cluster state", name, partitions)
        self._notify("created", topic)
        return topic

    def delete_local(self, name: str) -> None:
        """Cluster mode: a topic gone from etcd leaves this broker's registry and disk."""
        topic = self.registry.delete(name)
        if topic is not None:
            log.info("topic %s deleted from the cluster state", name)
            self._notify("deleted", topic)

    def auto_create(self, name: str) -> tuple[Topic | None, int]:
        """Metadata's auto-creation of an unknown topic: (the topic, 0) when created now; else
        (None, the error Metadata answers for it): UNKNOWN_TOPIC_OR_PARTITION when it is not
        created, and in a cluster with auto-creation on LEADER_NOT_AVAILABLE, as Kafka answers
        while the creation (through etcd, in the background) is under way."""
        if not self.config["auto.create.topics.enable"] or topic_name_error(name):
            return None, E.unknown_topic_or_partition.value
        not_yet = E.leader_not_available.value if self.cluster is not None else E.unknown_topic_or_partition.value
        if name in INTERNAL_TOPICS:
            return None, not_yet
        partitions = self.config["num.partitions"]
        code, msg = self.check_room(partitions)
        if code:
            log.warning("not auto-creating topic %s: %s", name, msg)
            return None, not_yet
        if self.cluster is not None:
            import asyncio

            rf = min(self.config["default.replication.factor"], len(self.cluster.live_brokers()))
            asyncio.ensure_future(self.cluster.create_topic(name, partitions, max(rf, 1), {}))
            return None, not_yet
        return self.create(name, partitions, {}), 0

    def ensure_internal(self, name: str, partitions: int, configs: dict[str, str]) -> Topic:
        topic = self.registry.get(name)
        if topic is None:
            topic = self.create(name, partitions, configs)
        return topic

    def check_delete(self, name: str) -> Result:
        topic = self.registry.get(name)
        if topic is None:
            return E.unknown_topic_or_partition.value, f"Topic '{name}' does not exist."
        if topic.internal:
            return E.invalid_topic_exception.value, f"Internal topic '{name}' cannot be deleted."
        if not self.config["delete.topic.enable"]:
            return E.topic_deletion_disabled.value, "Topic deletion is disabled."
        return OK

    def delete(self, name: str) -> Result:
        checked = self.check_delete(name)
        if checked[0]:
            return checked
        topic = self.registry.get(name)
        self.registry.delete(name)
        log.info("deleted topic %s", name)
        if topic is not None:
            self._notify("deleted", topic)
        return OK

    def check_room(self, new_partitions: int) -> Result:
        """POLICY_VIOLATION when `new_partitions` more would pass `partition_limit()`."""
        total = sum(t.partitions for t in self.registry.topics.values())
        limit = partition_limit()
        if total + new_partitions > limit:
            return (
                E.policy_violation.value,
                f"The broker has {total} partitions; {new_partitions} more would pass the {limit} its "
                f"open-file limit (RLIMIT_NOFILE) allows.",
            )
        return OK

    def check_partitions(self, name: str, count: int) -> Result:
        topic = self.registry.get(name)
        if topic is None:
            return E.unknown_topic_or_partition.value, f"Topic '{name}' does not exist."
        if count <= topic.partitions:
            return (
                E.invalid_partitions.value,
                f"Topic currently has {topic.partitions} partitions, "
                f"which is higher than or equal to the requested {count}.",
            )
        return self.check_room(count - topic.partitions)

    def add_partitions(self, name: str, count: int) -> None:
        topic = self.registry.get(name)
        assert topic is not None
        old = topic.partitions
        self.registry.set_partitions(name, count)
        log.info("topic %s: partitions %d -> %d", name, old, count)
        self._notify("partitions", topic)

    def check_configs(self, configs: Mapping[str, str | None]) -> Result:
        for key, value in configs.items():
            err = validate_topic_config(key, value)
            if err:
                return E.invalid_config.value, err
        return OK

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        if self.cluster is not None and not self.registry.topics[name].internal:
            # etcd holds every topic's configs: written there, applied here at once, and on the
            # other brokers when their watch brings the change
            import asyncio

            asyncio.ensure_future(self.cluster.set_configs(name, configs))
        self.registry.set_configs(name, configs)
        topic = self.registry.get(name)
        assert topic is not None  # set_configs just stored them
        log.info("topic %s: configs now %s", name, configs)
        self._notify("configs", topic)

    def refresh_defaults(self) -> None:
        """The broker's log.* keys changed (dynamic broker configs): topics without an override
        of their own follow the new defaults at once."""
        new = self.config.topic_defaults()
        if new == self.topic_defaults:
            return
        self.topic_defaults.clear()
        self.topic_defaults.update(new)  # in place: the broker and the handlers hold this dict
        for topic in list(self.registry.topics.values()):
            self._notify("configs", topic)

    def _notify(self, event: str, topic: Topic) -> None:
        for cb in self.listeners:
            cb(event, topic)
