"""Coordinators that move with leadership, as in Kafka: the group coordinator of group G is the
leader of `__consumer_offsets` partition `partition_for(G)`, the transaction coordinator of
transactional id X the leader of its `__transaction_state` partition, the share coordinator of a
share partition the leader of its `__share_group_state` partition.

- The three topics are ordinary replicated topics in etcd, created on first use (FindCoordinator,
  the first share state) once their replication factor's brokers are live (until then
  COORDINATOR_NOT_AVAILABLE, as Kafka), compacted, with `min.insync.replicas` =
  `transaction.state.log.min.isr` (default 2; `share.coordinator.state.topic.min.isr` for the
  share state).
- `reconcile` makes what this broker coordinates match what it leads: on becoming a partition's
  leader its groups or transactional ids are replayed from the local replica (which holds every
  record the previous leader had acknowledged: they were replicated to the ISR this broker was
  elected from) and transactions left in PrepareCommit/PrepareAbort are completed - once the high
  watermark has reached the log end it started leading at, so that no answer rests on a record
  that is not committed (the local log may end with records of the previous leader that no other
  replica has, which the next leader may truncate; until then COORDINATOR_LOAD_IN_PROGRESS, as
  Kafka answers while it loads); on losing it
  (another leader, a lost etcd lease, controlled shutdown) they are dropped, parked requests get
  NOT_COORDINATOR and clients find the new coordinator.
- `CoordinatorWrites` is the coordinators' write guard: an append to an internal partition not
  led here is refused with NOT_COORDINATOR, and an append counts once the high watermark passed it
  under the leader epoch it was made at (acks=all), else COORDINATOR_NOT_AVAILABLE (the client
  retries; the record may still become committed, as a Kafka offset commit that timed out).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ..core.topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC, STATE_TOPIC
from ..log.errors import LogError
from ..wire.errors import COORDINATOR_NOT_AVAILABLE, NONE, NOT_COORDINATOR
from .partition import Lease
from .ports import Coordinator

if TYPE_CHECKING:
    from ..core.admin import Created
    from ..core.config import BrokerConfig
    from .metadata import MetadataCache
    from .replica import ReplicaManager

log = logging.getLogger("tidelog.cluster")

COORDINATOR_TOPICS = (OFFSETS_TOPIC, STATE_TOPIC, SHARE_STATE_TOPIC)
# topic -> its configuration keys: partitions, replication factor, segment bytes, min ISR
TOPIC_KEYS = {
    OFFSETS_TOPIC: (
        "offsets.topic.num.partitions",
        "offsets.topic.replication.factor",
        "offsets.topic.segment.bytes",
        "transaction.state.log.min.isr",
    ),
    STATE_TOPIC: (
        "transaction.state.log.num.partitions",
        "transaction.state.log.replication.factor",
        "transaction.state.log.segment.bytes",
        "transaction.state.log.min.isr",
    ),
    SHARE_STATE_TOPIC: (
        "share.coordinator.state.topic.num.partitions",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.segment.bytes",
        "share.coordinator.state.topic.min.isr",
    ),
}


class CoordinatorWrites:
    """The `WriteGuard` of the group log and the transaction state log in cluster mode: a write
    is admitted under the partition owner's lease (this broker leads the internal partition now,
    at a leader epoch), and counts once replicated under that same epoch."""

    def __init__(self, replicas: ReplicaManager, lease_valid: Callable[[], bool], timeout_s: float) -> None:
        self.replicas = replicas
        self.lease_valid = lease_valid
        self.timeout_s = timeout_s

    def check(self, topic: str, partition: int) -> Lease:
        """The lease to append under; LogError NOT_COORDINATOR off the leader,
        COORDINATOR_NOT_AVAILABLE with too few replicas in sync."""
        code, lease = self.replicas.leader_for_append(topic, partition, -1)
        if code == E.not_enough_replicas.value:
            raise LogError(
                COORDINATOR_NOT_AVAILABLE, f"{topic}-{partition}: fewer in-sync replicas than min.insync.replicas"
            )
        if code or lease is None or not self.lease_valid():
            raise LogError(NOT_COORDINATOR, f"{topic}-{partition} is not led by this broker")
        return lease

    async def replicated(self, lease: object, offset: int) -> None:
        assert isinstance(lease, Lease), lease  # the token `check` answered
        code = await self.replicas.wait_replicated(lease, offset, self.timeout_s)
        if code and not lease.partition.leads_at(lease.epoch):
            raise LogError(
                NOT_COORDINATOR,
                f"{lease.partition.topic}-{lease.partition.partition}: leadership moved before replication",
            )
        if code:
            raise LogError(
                COORDINATOR_NOT_AVAILABLE,
                f"{lease.partition.topic}-{lease.partition.partition}: offset {offset} not replicated (error {code})",
            )


class CoordinatorTopics:
    """The coordinators' internal topics: how many partitions each has, who leads a partition,
    and their creation on first use (`ensure_topic`)."""

    def __init__(
        self,
        config: BrokerConfig,
        cache: MetadataCache,
        create_topic: Callable[[str, int, int, dict[str, str]], Awaitable[Created]],
    ) -> None:
        self.config = config
        self.cache = cache
        self.create_topic = create_topic
        self._creating: dict[str, asyncio.Future[int]] = {}

    def num_partitions(self, topic: str) -> int:
        a = self.cache.topics.get(topic)
        if a is not None:
            return int(a.partitions)
        return int(self.config[TOPIC_KEYS[topic][0]])

    async def ensure_topic(self, topic: str) -> int:
        """NONE once `topic` exists in etcd, else COORDINATOR_NOT_AVAILABLE (too few brokers yet)."""
        if topic in self.cache.topics:
            return NONE
        pending = self._creating.get(topic)
        if pending is None:
            pending = self._creating[topic] = asyncio.ensure_future(self._create(topic))

            def forget(_f: object, t: str = topic) -> None:
                self._creating.pop(t, None)

            pending.add_done_callback(forget)
        return await asyncio.shield(pending)

    async def _create(self, topic: str) -> int:
        _, rf_key, segment_key, min_isr_key = TOPIC_KEYS[topic]
        rf, segment = self.config[rf_key], self.config[segment_key]
        live = len(self.cache.brokers)
        if live < rf:
            log.warning("%s not created: replication factor %d needs %d live brokers, %d are", topic, rf, rf, live)
            return COORDINATOR_NOT_AVAILABLE
        min_isr = min(int(self.config[min_isr_key]), rf)
        configs = {"cleanup.policy": "compact", "segment.bytes": str(segment), "min.insync.replicas": str(min_isr)}
        code, msg, _ = await self.create_topic(topic, self.num_partitions(topic), rf, configs)
        if code and topic not in self.cache.topics:
            log.warning("%s not created: %s", topic, msg)
            return COORDINATOR_NOT_AVAILABLE
        log.info(
            "%s created: %d partitions, replication factor %d, min.insync.replicas %d",
            topic,
            self.num_partitions(topic),
            rf,
            min_isr,
        )
        return NONE

    def leader(self, topic: str, key_partition: int) -> int:
        st = self.cache.state(topic, key_partition)
        return st.leader if st is not None and st.leader in self.cache.brokers else -1


class CoordinatorPlacement:
    def __init__(
        self,
        cache: MetadataCache,
        replicas: ReplicaManager,
        coordinators: dict[str, Coordinator],
        lease_valid: Callable[[], bool],
        topics: CoordinatorTopics,
    ) -> None:
        self.cache = cache
        self.replicas = replicas
        self.coordinators = coordinators  # each internal topic's coordinator
        self.lease_valid = lease_valid
        self.topics = topics
        self._loading: dict[tuple[str, int], int] = {}  # waiting for the log to be committed -> epoch
        self._tasks: set[asyncio.Task[Any]] = set()

    # ---- the topics (`CoordinatorTopics`) -----------------------------------------------------
    def num_partitions(self, topic: str) -> int:
        return self.topics.num_partitions(topic)

    async def ensure_topic(self, topic: str) -> int:
        return await self.topics.ensure_topic(topic)

    def leader(self, topic: str, key_partition: int) -> int:
        return self.topics.leader(topic, key_partition)

    # ---- following leadership ------------------------------------------------------------------
    def reconcile(self, topic: str | None = None, partition: int | None = None) -> None:
        """Load or unload the coordinators' partitions so they match what this broker leads."""
        resume = False
        for name in (topic,) if topic is not None else COORDINATOR_TOPICS:
            a = self.cache.topics.get(name)
            coord = self.coordinators[name]
            owned = coord.owned
            if owned is None:
                continue
            if a is None:
                for p in list(owned):
                    self._unload(name, p)
                continue
            if not owned and coord.num_partitions != a.partitions:
                self._set_partitions(name, a.partitions)
            for p in (partition,) if partition is not None else range(a.partitions):
                r = self.replicas.leader(name, p) if self.lease_valid() else None
                if r is not None and not r.draining and owned.get(p) != r.leader_epoch:
                    if p in owned:
                        self._unload(name, p)
                    if r.plog.high_watermark >= r.epoch_start:
                        self._loading.pop((name, p), None)
                        self._load(name, p, r.leader_epoch)
                        resume = resume or name == STATE_TOPIC
                    elif self._loading.get((name, p)) != r.leader_epoch:
                        self._loading[(name, p)] = r.leader_epoch
                        coord.begin_load(p)
                        self._spawn(self._load_when_committed(name, p, r.leader_epoch, r.epoch_start))
                elif (r is None or r.draining) and (p in owned or (name, p) in self._loading):
                    self._loading.pop((name, p), None)
                    self._unload(name, p)
        if resume:
            self._spawn(self.coordinators[STATE_TOPIC].resume())

    async def _load_when_committed(self, topic: str, p: int, epoch: int, end: int) -> None:
        log.info("%s-%d: loading once offsets below %d are committed (epoch %d)", topic, p, end, epoch)
        committed = await self.replicas.wait_committed(topic, p, epoch, end)
        if self._loading.get((topic, p)) != epoch:
            return  # unloaded, or loading at a newer epoch, meanwhile
        del self._loading[(topic, p)]
        r = self.replicas.leader(topic, p)
        if not committed or r is None or r.draining or r.leader_epoch != epoch or not self.lease_valid():
            self._unload(topic, p)
            self.reconcile(topic, p)
            return
        self._load(topic, p, epoch)
        await self.coordinators[topic].resume()

    def _set_partitions(self, topic: str, n: int) -> None:
        self.coordinators[topic].set_num_partitions(n)

    def _load(self, topic: str, p: int, epoch: int) -> None:
        try:
            self.coordinators[topic].load_partition(p, epoch)
        except Exception:
            log.exception("%s-%d: loading the coordinator's state failed", topic, p)

    def _unload(self, topic: str, p: int) -> None:
        self.coordinators[topic].unload_partition(p)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
