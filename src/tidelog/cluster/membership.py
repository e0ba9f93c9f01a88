"""This broker's incarnation in the cluster: its etcd lease and its registration.

Every incarnation is fenced (Kafka's broker epoch): the registration `brokers/ids/<id>` is
created only where none exists, bound to the lease, so a broker restarted within its session
waits until its previous registration expired (a clean stop removes it at once), and its broker
epoch - the create revision - is new. Partition states record the leader's broker epoch; the
replica manager leads only states written for the current incarnation (`broker_epoch()`).

A lost lease (etcd did not hear from us for a session) ends the incarnation at once:
`broker_epoch()` is -1 until registered again, and the subscribers (the cluster node) step down.
Built by the composition root before the replica manager, which asks `lease_valid` and
`broker_epoch` on every decision.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from .model import BrokerInfo, Endpoint
from .state import ClusterState
from .store import Compare, LeaseKeeper, Op, OutcomeUnknown, StoreUnavailable

if TYPE_CHECKING:
    from ..core.config import BrokerConfig
    from ..core.partitions import Partitions

log = logging.getLogger("tidelog.cluster")


class Membership:
    def __init__(
        self, config: BrokerConfig, state: ClusterState, partitions: Partitions, bound_port: Callable[[str], int]
    ) -> None:
        """`bound_port(listener)`: the port a listener advertised with port 0 was bound to."""
        self.config = config
        self.node_id = config.node_id
        self.store = state.store
        self.keys = state.keys
        self.registry = state.registry
        self.partitions = partitions
        self.bound_port = bound_port
        ttl = max(2, round(config["broker.session.timeout.ms"] / 1000))
        self.lease = LeaseKeeper(self.store, ttl, on_lost=self._lost, on_restored=self._restored)
        self.registered = asyncio.Event()
        self.epoch = -1  # the create revision of this incarnation's registration
        self.leaving = False  # the broker stops: no registration any more
        self._on_lost: list[Callable[[], None]] = []
        self._on_restored: list[Callable[[], None]] = []

    def subscribe(self, on_lost: Callable[[], None], on_restored: Callable[[], None]) -> None:
        """Be told when the lease is lost, and when etcd answers again after a whole session."""
        self._on_lost.append(on_lost)
        self._on_restored.append(on_restored)

    def leave(self) -> None:
        """The broker stops: no registration from now on, no subscriber told of a lost lease."""
        self.leaving = True

    def lease_valid(self) -> bool:
        return self.lease.valid()

    def broker_epoch(self) -> int:
        """This incarnation's broker epoch; -1 while not registered."""
        return self.epoch if self.registered.is_set() else -1

    def _lost(self) -> None:
        if self.leaving:
            return
        self.registered.clear()
        self.epoch = -1
        for cb in self._on_lost:
            cb()

    def _restored(self) -> None:
        if self.leaving:
            return
        for cb in self._on_restored:
            cb()

    async def agree_cluster_id(self) -> None:
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
            raise RuntimeError(
                f"this broker's data belongs to cluster {mine}, etcd {self.keys.root} holds cluster "
                f"{theirs}: refusing to join"
            )
        self.registry.set_cluster_id(theirs)

    async def register(self) -> None:
        """Create this incarnation's registration, bound to the current lease, only where none
        exists: its create revision is the new broker epoch. While a registration of this node id
        from another incarnation exists (the previous process, within its session; or a second
        broker configured with the same node.id) it waits for that one to expire, as Kafka
        refuses a duplicate registration."""
        eps = [Endpoint(a.name, a.host, a.port or self.bound_port(a.name)) for a in self.config.advertised]
        info = BrokerInfo(
            self.node_id, tuple(eps), self.config["broker.rack"], storage=getattr(self.registry, "directory_id", "")
        )
        key = self.keys.broker(self.node_id)
        lease = self.lease.lease
        if not lease or self.leaving:
            raise StoreUnavailable("no etcd lease to register with")  # never a registration that outlives us
        said = False
        while True:
            try:
                res = await self.store.txn([Compare.create(key, 0)], [Op.put(key, info.encode(), lease)], [Op.get(key)])
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
                log.warning(
                    "node %d: the registration of an earlier incarnation (lease %x) is still in etcd; "
                    "waiting until it expires (broker.session.timeout.ms)",
                    self.node_id,
                    existing.lease,
                )
                said = True
            await asyncio.sleep(0.25)
            if self.leaving or self.lease.lease != lease:
                raise StoreUnavailable("the lease changed while registering")
        self.epoch = epoch
        log.info("node %d registered: broker epoch %d, data directory %s", self.node_id, epoch, info.storage)
        self.registered.set()
