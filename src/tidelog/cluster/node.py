"""A broker's membership of a cluster: its registration in etcd, its copy of the cluster state,
the controller it may become, and its replicas' roles. Built by the composition root when
`etcd.connect` is set; without it the broker is a single node (`SingleNode` in `view.py`).

Start: a lease of `broker.session.timeout.ms`, the whole state read at one revision, the local
topic registry brought in line with etcd's topics, the registration `brokers/ids/<id>` bound to
the lease, then the watch, the controller's election loop and the ISR lag check. Each step is
retried until etcd answers (a broker started while etcd is away waits for it); the broker serves
no request before all of them are done (server/broker.py).

Every incarnation is fenced (Kafka's broker epoch): the registration is created only where none
exists, so a broker restarted within its session waits until its previous registration expired
(a clean stop removes it at once), and its broker epoch - the create revision - is new. Partition
states record the leader's broker epoch and each ISR member's data directory id; this broker
leads only states written for its current incarnation, and the controller moves a leadership
held by an earlier one at a new leader epoch (controller.py).

A lost lease (etcd did not hear from us for a session) stops every leadership at once; the
broker registers again, in a new incarnation, and takes the roles etcd then gives it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any


from .controller import Controller
from .security_state import SharedSecurity
from .verify import TxnVerifier
from .coordinators import COORDINATOR_TOPICS, CoordinatorPlacement, CoordinatorWrites
from .fetcher import FetcherManager
from .model import BrokerInfo, Endpoint
from .markers import MarkerSender
from .replica import ReplicaManager
from .peer import Connector, tcp_connect
from .store import Compare, LeaseExpired, LeaseKeeper, Op, OutcomeUnknown, Store, StoreUnavailable
from .state import ClusterState
from .view import PartitionView

log = logging.getLogger("tidelog.cluster")


class ClusterNode:
    clustered = True

    def __init__(self, config: Any, state: ClusterState, admin: Any, partitions: Any,
                 connect: Connector = tcp_connect) -> None:
        """`state`: the cluster's state in etcd (store, keys, metadata cache); `connect`: how to
        reach other brokers (default: TCP). The simulation (tests/sim) passes its own."""
        self.config = config
        self.node_id = config.node_id
        self.state = state
        self.registry = state.registry
        self.admin = admin
        self.partitions = partitions
        self.store: Store = state.store
        self.connect = connect
        self.keys = state.keys
        self.cache = state.cache
        ttl = max(2, round(config["broker.session.timeout.ms"] / 1000))
        self.lease = LeaseKeeper(self.store, ttl, on_lost=self._lease_lost, on_restored=self._lease_restored)
        self.controller = Controller(self.store, self.keys, self.cache, self.node_id, lambda: self.lease.lease,
                                     state.unclean, (bool(config["auto.leader.rebalance.enable"]),
                                                     float(config["leader.imbalance.check.interval.seconds"]),
                                                     int(config["leader.imbalance.per.broker.percentage"])),
                                     state.min_isr)
        self.elections = self.controller.elections  # ElectLeaders asks the same
        self.replicas: ReplicaManager | None = None
        self.fetchers: FetcherManager | None = None
        self.placement: CoordinatorPlacement | None = None
        # set by bind(): the parts built after this node
        self.dynamic: Any = None
        self.shared_security: SharedSecurity | None = None
        self.verifier: TxnVerifier | None = None
        self.markers: MarkerSender | None = None
        self.pids = state.pids
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopping = False  # set first thing in stop(): no re-registration, no new fetchers
        self._registered = asyncio.Event()
        self.broker_epoch = -1  # the create revision of this incarnation's registration
        self._security_pending = False
        self._bound: Any = None
        self.cache.listeners.append(self._changed)

    def bind(self, txn: Any, bound_port: Any, security: Any, dynamic: Any) -> None:
        """The parts built after the partitions (the transaction service, security, dynamic broker
        configs) and the listeners."""
        self.txn = txn
        self.dynamic = dynamic
        self.shared_security = SharedSecurity(self.store, self.keys.security, self.cache, security)
        security.shared = self.shared_security
        self._bound = bound_port
        listener = self.config["inter.broker.listener.name"] or self.config.listeners[0].name
        self.fetchers = FetcherManager(self.node_id, self.cache, self.partitions, txn.producers, self.config,
                                       listener, self.connect)
        self.replicas = ReplicaManager(self.node_id, self.store, self.keys, self.cache, self.partitions,
                                       self.config, self.lease_valid, self.state.min_isr, self._broker_epoch, self.fetchers)
        txn.pids = self.pids
        if hasattr(txn, "coordinator"):
            txn.coordinator.pids = self.pids
        groups = txn.groups
        self.verifier = TxnVerifier(self.node_id, self.cache, txn, listener, self.connect)
        self.markers = MarkerSender(self.node_id, self.cache, self.replicas, txn, self.partitions, listener,
                                    groups, self.connect)
        txn.marker_sender = self.markers
        # KIP-890 verification: here when this broker coordinates the producer's transactional id,
        # else asked of the coordinator before the append (verify.py, from the Produce handler)
        txn.verify_here = lambda producer_id: producer_id in txn.coordinator.by_pid
        writes = CoordinatorWrites(self.replicas, self.lease_valid, self.config["offsets.commit.timeout.ms"] / 1000)
        groups._group_log.guard = writes
        txn.state_log.guard = writes
        self.placement = CoordinatorPlacement(self.config, self.cache, self.replicas, groups, txn, self.lease_valid,
                                              self.state.create_topic)

    # ---- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        await self._until_done("agree on the cluster id", self._agree_cluster_id)
        await self._until_done("take an etcd lease", self.lease.start)
        await self._until_done("read the cluster state", self.cache.load)
        self._sync_all_topics()
        await self._until_done("register", self._register)
        await self._until_done("reserve producer ids", self.pids.start)
        self._tasks.append(asyncio.ensure_future(self.cache.run()))
        if self.shared_security is not None:
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

    async def _agree_cluster_id(self) -> None:
        """One cluster id for every broker (clients refuse brokers of different clusters): the
        first broker stores its own in etcd; the others adopt it while their data directory holds
        no partition, and refuse to start otherwise (as Kafka: InconsistentClusterIdException)."""
        key, mine = self.keys.cluster_id, self.registry.cluster_id
        try:
            await self.store.txn([Compare.create(key, 0)], [Op.put(key, mine.encode())])
        except OutcomeUnknown:
            pass  # read back below
        kv = await self.store.get(key)
        theirs = kv.value.decode() if kv is not None else mine
        if theirs == mine:
            return
        if any(lg.log_end_offset > 0 for lg in self.partitions.manager.logs()):
            raise RuntimeError(f"this broker's data belongs to cluster {mine}, etcd {self.keys.root} holds cluster "
                               f"{theirs}: refusing to join")
        self.registry.set_cluster_id(theirs)

    async def _register(self) -> None:
        """Create this incarnation's registration, bound to the current lease, only where none
        exists: its create revision is the new broker epoch. While a registration of this node id
        from another incarnation exists (the previous process, within its session; or a second
        broker configured with the same node.id) it waits for that one to expire, as Kafka
        refuses a duplicate registration."""
        adv = self.config.advertised
        eps = []
        for a in adv:
            port = a.port or (self._bound(a.name) if self._bound is not None else 0)
            eps.append(Endpoint(a.name, a.host, port))
        info = BrokerInfo(self.node_id, tuple(eps), self.config["broker.rack"],
                          storage=getattr(self.registry, "directory_id", ""))
        key = self.keys.broker(self.node_id)
        lease = self.lease.lease
        if not lease or self._stopping:
            raise StoreUnavailable("no etcd lease to register with")  # never a registration that outlives us
        said = False
        while True:
            try:
                res = await self.store.txn([Compare.create(key, 0)], [Op.put(key, info.encode(), lease)],
                                           [Op.get(key)])
                if res.succeeded:
                    epoch = res.revision
                    break
                existing = res.responses[0][0] if res.responses and res.responses[0] else None
            except OutcomeUnknown:
                existing = await self.store.get(key)  # read back
            if existing is not None and existing.lease == lease:
                epoch = existing.create_revision  # ours: the write whose answer was lost
                break
            if not said and existing is not None:
                log.warning("node %d: the registration of an earlier incarnation (lease %x) is still in etcd; "
                            "waiting until it expires (broker.session.timeout.ms)", self.node_id, existing.lease)
                said = True
            await asyncio.sleep(0.25)
            if self._stopping or self.lease.lease != lease:
                raise StoreUnavailable("the lease changed while registering")
        self.broker_epoch = epoch
        log.info("node %d registered: broker epoch %d, data directory %s", self.node_id, epoch, info.storage)
        self._registered.set()

    def _broker_epoch(self) -> int:
        return self.broker_epoch if self._registered.is_set() else -1

    async def controlled_shutdown(self) -> None:
        """SIGTERM: hand this broker's leaderships to in-sync followers while its listeners still
        serve their fetches (Kafka's controlled shutdown), so clients move without waiting for the
        registration to expire."""
        if self.replicas is None:
            return
        t0 = time.monotonic()
        moved = await self.replicas.hand_over_all()
        self._reconcile()  # the coordinators of the partitions handed over move with them
        log.info("controlled shutdown: handed over the leadership of %d partitions in %.0f ms",
                 moved, (time.monotonic() - t0) * 1000)

    async def stop(self) -> None:
        self._stopping = True
        for t in self._tasks:
            t.cancel()
        if self.placement is not None:
            self.placement.stop()
        if self.fetchers is not None:
            self.fetchers.stop()
        if self.markers is not None:
            self.markers.close()
        if self.verifier is not None:
            self.verifier.close()
        try:
            if self.controller.active:
                await self.store.txn([Compare.create(self.keys.controller, self.controller.epoch)],
                                     [Op.delete(self.keys.controller)])
            await self.lease.stop()
        except Exception as e:  # noqa: BLE001 - etcd away at shutdown: the lease expires on its own
            log.warning("leaving the cluster: %s", e)
        await self.store.close()

    def _lease_lost(self) -> None:
        if self._stopping:
            return
        log.warning("node %d: etcd lease lost; leading nothing until registered again", self.node_id)
        self._registered.clear()
        self.broker_epoch = -1
        self._tasks.append(asyncio.ensure_future(self._rejoin()))
        if self.replicas is not None:
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
                await self._register()
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
        return self.lease.valid()

    async def _lag_loop(self) -> None:
        every = self.config["replica.lag.time.max.ms"] / 2000
        while True:
            await asyncio.sleep(min(every, 1.0))
            if self.replicas is not None and self.lease_valid():
                self.replicas.check_isr_lag()

    # ---- following etcd -------------------------------------------------------------------
    def _changed(self, kind: str, detail: object) -> None:
        if kind == "broker-configs" and self.dynamic is not None:
            self.dynamic.replace_all(self.cache.broker_configs)
        if kind == "security":
            self._security_changed()
        elif kind == "reload":
            self._sync_all_topics()
            self._apply_all()
            self._security_changed()
            if self.dynamic is not None:
                self.dynamic.replace_all(self.cache.broker_configs)
        elif kind == "topic":
            assert isinstance(detail, str)
            self._sync_topic(detail)
            topic = self.registry.get(detail)
            for p in range(topic.partitions if topic is not None else 0):
                self._apply(detail, p)
        elif kind == "partition":
            assert isinstance(detail, tuple)
            self._apply(detail[0], detail[1])
        elif kind == "broker" and self.fetchers is not None:
            assert isinstance(detail, int)
            if self.replicas is not None:
                self.replicas.broker_changed(detail)
            for f in self.fetchers.fetchers.values():
                f.wake.set()

    def _security_changed(self) -> None:
        """ACLs and credentials rebuilt from etcd's, once per burst of changes."""
        shared = self.shared_security
        if self._security_pending or shared is None:
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
        if self.replicas is not None and self._registered.is_set():
            self.replicas.apply(topic, partition)
            if topic in COORDINATOR_TOPICS and self.placement is not None:
                self.placement.reconcile(topic, partition)

    def _apply_all(self) -> None:
        for (t, p) in list(self.cache.states):
            self._apply(t, p)
        self._reconcile()

    def _reconcile(self) -> None:
        """The coordinators follow this broker's leaderships of the internal topics' partitions."""
        if self.placement is not None:
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

    def brokers(self, listener: str) -> list[dict[str, Any]]:
        return self.state.brokers(listener)

    def partition(self, topic: str, partition: int) -> PartitionView:
        return self.state.partition(topic, partition)

    def leader_replica(self, topic: str, partition: int) -> Any:
        return self.replicas.leader(topic, partition) if self.replicas is not None else None

    def under_replicated(self) -> int:
        return self.replicas.under_replicated() if self.replicas is not None else 0
