"""A broker's membership of a cluster, as one part: its incarnation (membership.py), its copy of
the cluster state (state.py), the controller it may become, its replicas' roles and the
coordinators that follow its leaderships. Its parts are built by the composition root
(server/broker.py) in dependency order and passed here; this class runs them: start-up, the
reaction to every change etcd's watch brings, the loss of the lease, controlled shutdown, stop.
Without `etcd.connect` the broker is a single node (`SingleNode` in `view.py`).

Start: the cluster id agreed, a lease of `broker.session.timeout.ms`, the whole state read at one
revision, the local topic registry brought in line with etcd's topics, the registration bound to
the lease, producer-id blocks, then the watch, the controller's election loop and the ISR lag
check. Each step is retried until etcd answers (a broker started while etcd is away waits for
it); the broker serves no request before all of them are done (server/broker.py).

Partition states record the leader's broker epoch and each ISR member's data directory id; this
broker leads only states written for its current incarnation, and the controller moves a
leadership held by an earlier one at a new leader epoch (controller.py). A lost lease stops every
leadership at once; the broker registers again, in a new incarnation, and takes the roles etcd
then gives it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from .controller import Controller
from .coordinators import COORDINATOR_TOPICS, CoordinatorPlacement
from .fetcher import FetcherManager
from .markers import MarkerSender
from .membership import Membership
from .partition import Lease, Partition
from .replica import ReplicaManager
from .security_state import SharedSecurity
from .state import ClusterState
from .store import Compare, LeaseExpired, Op, StoreUnavailable
from .verify import TxnVerifier
from .view import Leader, PartitionView, Reassignments, ReplicationStats, Result

if TYPE_CHECKING:
    from ..core.admin import TopicAdmin
    from ..core.config import BrokerConfig
    from ..core.dynamic_config import DynamicBrokerConfigs
    from ..core.group_configs import GroupConfigs
    from ..wire.responses import MetadataResponseBroker

log = logging.getLogger("tidelog.cluster")


class ClusterNode:
    clustered = True

    def __init__(
        self,
        config: BrokerConfig,
        state: ClusterState,
        membership: Membership,
        admin: TopicAdmin,
        dynamic: DynamicBrokerConfigs,
        group_configs: GroupConfigs,
        replicas: ReplicaManager,
        fetchers: FetcherManager,
        placement: CoordinatorPlacement,
        markers: MarkerSender,
        verifier: TxnVerifier,
        shared_security: SharedSecurity,
    ) -> None:
        self.config = config
        self.node_id = config.node_id
        self.state = state
        self.membership = membership
        self.registry = state.registry
        self.admin = admin
        self.dynamic = dynamic
        self.group_configs = group_configs
        self.store = state.store
        self.keys = state.keys
        self.cache = state.cache
        self.pids = state.pids
        self.replicas = replicas
        self.fetchers = fetchers
        self.placement = placement
        self.markers = markers
        self.verifier = verifier
        self.shared_security = shared_security
        self.lease = membership.lease
        self.controller = Controller(
            self.store,
            self.keys,
            self.cache,
            self.node_id,
            lambda: self.lease.lease,
            state.unclean,
            (
                bool(config["auto.leader.rebalance.enable"]),
                float(config["leader.imbalance.check.interval.seconds"]),
                int(config["leader.imbalance.per.broker.percentage"]),
            ),
            state.min_isr,
        )
        self.elections = self.controller.elections  # ElectLeaders asks the same
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopping = False  # set first thing in stop(): no re-registration, no new fetchers
        self._security_pending = False
        membership.subscribe(self._lease_lost, self._lease_restored)
        self.cache.listeners.append(self._changed)

    # ---- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        await self._until_done("agree on the cluster id", self.membership.agree_cluster_id)
        await self._until_done("take an etcd lease", self.lease.start)
        await self._until_done("read the cluster state", self.cache.load)
        self._sync_all_topics()
        await self._until_done("register", self.membership.register)
        await self._until_done("reserve producer ids", self.pids.start)
        self._tasks.append(asyncio.ensure_future(self.cache.run()))
        await self.shared_security.seed()
        self._security_changed()
        self._tasks.append(asyncio.ensure_future(self.controller.run()))
        self._tasks.append(asyncio.ensure_future(self._lag_loop()))
        self._apply_all()
        log.info("node %d joined cluster %s (etcd %s)", self.node_id, self.keys.root, self.config["etcd.connect"])

    async def _until_done(self, what: str, step: Callable[[], Awaitable[Any]]) -> None:
        """Run a start-up step until etcd answers it (a broker started while etcd is away waits)."""
        delay, said = 0.2, False
        while True:
            if self._stopping:
                raise asyncio.CancelledError(f"stopping before it could {what}")
            try:
                await step()
                return
            except (StoreUnavailable, LeaseExpired) as e:  # LeaseExpired: the lease ended meanwhile
                if not said:
                    log.warning("node %d: cannot %s yet (%s); retrying until etcd answers", self.node_id, what, e)
                    said = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def controlled_shutdown(self) -> None:
        """SIGTERM: hand this broker's leaderships to in-sync followers while its listeners still
        serve their fetches (Kafka's controlled shutdown), so clients move without waiting for the
        registration to expire."""
        t0 = time.monotonic()
        moved = await self.replicas.hand_over_all()
        self._reconcile()  # the coordinators of the partitions handed over move with them
        log.info(
            "controlled shutdown: handed over the leadership of %d partitions in %.0f ms",
            moved,
            (time.monotonic() - t0) * 1000,
        )

    async def stop(self) -> None:
        self._stopping = True
        self.membership.leave()
        for t in self._tasks:
            t.cancel()
        self.placement.stop()
        self.fetchers.stop()
        self.markers.close()
        self.verifier.close()
        try:
            if self.controller.active:
                await self.store.txn(
                    [Compare.create(self.keys.controller, self.controller.epoch)], [Op.delete(self.keys.controller)]
                )
            await self.lease.stop()
        except Exception as e:  # noqa: BLE001 - etcd away at shutdown: the lease expires on its own
            log.warning("leaving the cluster: %s", e)
        await self.store.close()

    def _lease_lost(self) -> None:
        if self._stopping:
            return
        log.warning("node %d: etcd lease lost; leading nothing until registered again", self.node_id)
        self._tasks.append(asyncio.ensure_future(self._rejoin()))
        try:
            self.replicas.stop_leading_all()
        except Exception:
            log.exception("node %d: stepping down after the lease loss", self.node_id)
        self._reconcile()

    def _lease_restored(self) -> None:
        """etcd answered a keepalive again after a whole session without: the lease is surely
        alive, so the coordinators of the internal partitions led here load now (they wait for
        a sure lease; a leadership taken meanwhile would otherwise go uncoordinated until the
        next change - simulation seed 342 of issue 26)."""
        if self._stopping:
            return
        log.info("node %d: etcd answers again; lease %x renewed", self.node_id, self.lease.lease)
        self._reconcile()

    async def _rejoin(self) -> None:
        """A new lease, the registration again, then the state etcd holds now. Retried until it
        succeeds or the broker stops: a broker that gave up here would stay out of every ISR."""
        while not self._stopping:
            try:
                await self.lease.start()
                await self.membership.register()
                await self.cache.load()
                self._apply_all()
                log.info("node %d: registered again after the lease loss", self.node_id)
                return
            except (StoreUnavailable, LeaseExpired) as e:
                log.warning("node %d: cannot register again yet: %s", self.node_id, e)
            except Exception:
                log.exception("node %d: registering again failed; retrying", self.node_id)
            await asyncio.sleep(1.0)

    def lease_valid(self) -> bool:
        return self.membership.lease_valid()

    async def _lag_loop(self) -> None:
        every = self.config["replica.lag.time.max.ms"] / 2000
        while True:
            await asyncio.sleep(min(every, 1.0))
            if self.lease_valid():
                self.replicas.check_isr_lag()

    # ---- following etcd -------------------------------------------------------------------
    def _changed(self, kind: str, detail: object) -> None:
        if kind == "broker-configs":
            self.dynamic.replace_all(self.cache.broker_configs)
        if kind == "group-configs":
            self.group_configs.replace_all(self.cache.group_configs)
        if kind == "security":
            self._security_changed()
        elif kind == "reload":
            self._sync_all_topics()
            self._apply_all()
            self._security_changed()
            self.dynamic.replace_all(self.cache.broker_configs)
            self.group_configs.replace_all(self.cache.group_configs)
        elif kind == "topic":
            assert isinstance(detail, str)
            self._sync_topic(detail)
            topic = self.registry.get(detail)
            for p in range(topic.partitions if topic is not None else 0):
                self._apply(detail, p)
        elif kind == "partition":
            assert isinstance(detail, tuple)
            self._apply(detail[0], detail[1])
        elif kind == "broker":
            assert isinstance(detail, int)
            self.replicas.broker_changed(detail)
            for f in self.fetchers.fetchers.values():
                f.wake.set()

    def _security_changed(self) -> None:
        """ACLs and credentials rebuilt from etcd's, once per burst of changes."""
        shared = self.shared_security
        if self._security_pending:
            return
        self._security_pending = True

        def rebuild() -> None:
            self._security_pending = False
            try:
                shared.apply()
            except Exception:
                log.exception("node %d: applying the cluster's ACLs and credentials failed", self.node_id)

        asyncio.get_running_loop().call_soon(rebuild)

    def _apply(self, topic: str, partition: int) -> None:
        if self.membership.registered.is_set():
            self.replicas.apply(topic, partition)
            if topic in COORDINATOR_TOPICS:
                self.placement.reconcile(topic, partition)

    def _apply_all(self) -> None:
        for t, p in list(self.cache.states):
            self._apply(t, p)
        self._reconcile()

    def _reconcile(self) -> None:
        """The coordinators follow this broker's leaderships of the internal topics' partitions."""
        try:
            self.placement.reconcile()
        except Exception:
            log.exception("node %d: moving coordinators failed", self.node_id)

    def _sync_all_topics(self) -> None:
        for name in list(self.cache.topics):
            self._sync_topic(name)
        for name in list(self.registry.topics):
            if name not in self.cache.topics and not self.registry.topics[name].internal:
                self._sync_topic(name)

    def _sync_topic(self, name: str) -> None:
        """The local registry (and through it the local logs) follows etcd's topics."""
        a = self.cache.topics.get(name)
        local = self.registry.get(name)
        if a is None:
            if local is not None and not local.internal:
                self.admin.delete_local(name)
            return
        if local is not None and local.topic_id != a.topic_id:
            self.admin.delete_local(name)
            local = None
        if local is None:
            self.admin.create_local(name, a.topic_id, a.partitions, a.configs)
            return
        if a.partitions > local.partitions:
            self.admin.add_partitions(name, a.partitions)
        if a.configs != local.configs:
            self.admin.set_configs(name, a.configs)

    # ---- the view the handlers ask -------------------------------------------------------------
    def controller_id(self) -> int:
        return self.state.controller_id()

    def brokers(self, listener: str) -> list[MetadataResponseBroker]:
        return self.state.brokers(listener)

    def partition(self, topic: str, partition: int) -> PartitionView:
        return self.state.partition(topic, partition)

    def under_replicated(self) -> int:
        return self.replicas.under_replicated()

    def replication_stats(self) -> ReplicationStats:
        manager, cache = self.replicas, self.cache
        offline = (
            sum(1 for st in cache.states.values() if st.leader < 0 or st.leader not in cache.brokers)
            if self.controller.active
            else None
        )
        lag = []
        for (t, p), r in sorted(manager.replicas.items()):
            if r.role == "leader":
                leo = r.plog.log_end_offset
                for b, f_leo in sorted(r.follower_leo.items()):
                    lag.append((t, p, b, max(leo - f_leo, 0) if f_leo >= 0 else leo))
        return ReplicationStats(manager.under_replicated(), offline, manager.isr_shrinks, manager.isr_expands, lag)

    # ---- the partition handlers' questions (view.py) -----------------------------------------
    def replicated(self, topic: str, partition: int) -> bool:
        return bool(self.cache.replicas(topic, partition))

    def leader_check(self, topic: str, partition: int, current_epoch: int) -> tuple[int, Leader | None]:
        """(0, the partition) when this broker leads it; else NOT_LEADER_OR_FOLLOWER, or KIP-320's
        FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when the client names an older / newer epoch."""
        p = self.replicas.leader(topic, partition)
        if p is None:
            return E.not_leader_or_follower.value, None
        if current_epoch >= 0:
            if current_epoch < p.leader_epoch:
                return E.fenced_leader_epoch.value, None
            if current_epoch > p.leader_epoch:
                return E.unknown_leader_epoch.value, None
        return 0, p

    def admit_append(self, topic: str, partition: int, acks: int) -> tuple[int, Lease | None]:
        return self.replicas.leader_for_append(topic, partition, acks)

    async def wait_replicated(self, lease: Lease, last_offset: int, timeout_s: float) -> int:
        return await self.replicas.wait_replicated(lease, last_offset, timeout_s)

    async def wait_all_replicated(self, waits: list[tuple[Lease, int]], timeout_s: float) -> list[int]:
        return await self.replicas.wait_all_replicated(waits, timeout_s)

    def follower_fetched(self, leader: Leader, follower: int, fetch_offset: int) -> None:
        if isinstance(leader, Partition):  # always: leader_check hands out the partition itself
            self.replicas.on_follower_fetch(leader, follower, fetch_offset)

    def needs_verification(self, topic: str, partition: int, records: bytes | memoryview) -> tuple[int, int] | None:
        return self.verifier.needs(topic, partition, records)

    async def verify(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]], add: bool = False
    ) -> dict[tuple[str, int], int]:
        return await self.verifier.verify(txn_id, producer_id, epoch, tps, add)

    # ---- the controller's and the coordinators' questions (view.py) --------------------------
    async def elect(self, topic: str, partition: int, unclean: bool, timeout_s: float) -> Result:
        return await self.elections.elect(topic, partition, unclean=unclean, timeout_s=timeout_s)

    def reassignments(self) -> Reassignments:
        return self.state.reassignments()

    async def reassign(
        self, topic: str, partition: int, target: tuple[int, ...] | None, allow_rf_change: bool
    ) -> Result:
        """Start, change or cancel (None) moving the partition; refused when it would change the
        replication factor and the request does not allow that (KIP-860)."""
        a = self.cache.topics.get(topic)
        if (
            target is not None
            and not allow_rf_change
            and a is not None
            and 0 <= partition < a.partitions
            and len(target) != len(a.original(partition))
        ):
            return E.invalid_replication_factor.value, "The replication factor would change."
        return await self.state.reassign(topic, partition, target)

    def coordinators_topic_exists(self, topic: str) -> bool:
        return topic in self.cache.topics

    async def ensure_coordinators_topic(self, topic: str) -> int:
        """Create `__consumer_offsets` / `__transaction_state` on first use (coordinators.py)."""
        return await self.placement.ensure_topic(topic)

    def coordinator(self, topic: str, partition_of: Callable[[int], int]) -> int:
        """The leader of the key's partition of the coordinators' topic; -1 while none leads it."""
        return self.placement.leader(topic, partition_of(self.placement.num_partitions(topic)))
