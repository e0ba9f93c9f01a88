"""The broker's composition root: every part is built here, in one stated order, and given its
narrow collaborators by constructor.

    config -> topic registry -> topic admin -> security -> dynamic broker configs
           -> partitions (the log engine's LogManager)
           -> cluster view (SingleNode, or ClusterNode with etcd: registration, controller, replicas)
           -> group coordinator (offsets in __consumer_offsets, through the partitions)
           -> transaction coordinator (producer state, markers; completes group offsets)
           -> schema registry (`schema.registry.listeners`: `_schemas` through the partitions, HTTP)
           -> metrics -> router (one module per API, then the pipeline stages) -> listeners

`start()` starts the parts in that order (the group coordinator loads before the transaction
coordinator, which completes transactional offset commits on it), binds the listeners, and - in
a cluster, only once this broker has joined it (registered, with its copy of the cluster state
loaded) - starts serving them, as Kafka enables request processing only at the end of its
start-up: a client never gets an answer from a broker that does not know the cluster yet;
`stop()` closes listeners and connections, then stops the parts in reverse order (logs last, so
the next start skips recovery).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..cluster.registry_directory import RegistryDirectory
from ..cluster.state import ClusterState
from ..cluster.view import ClusterView, SingleNode
from ..core.admin import TopicAdmin
from ..core.config import BrokerConfig
from ..core.dynamic_config import DynamicBrokerConfigs
from ..core.features import Features
from ..core.group_configs import GroupConfigs
from ..core.partitions import Partitions
from ..core.topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC, STATE_TOPIC, TopicRegistry
from ..groups import GroupCoordinator
from ..groups.store import EngineGroupLog
from ..registry.access import AccessControl
from ..registry.acl_admin import RegistryAcls
from ..registry.auth import ScramPasswords
from ..registry.forward import Forwarder
from ..registry.http import RegistryServer
from ..registry.metrics import RegistryCollector
from ..registry.service import Registry
from ..registry.store import ClusterTopic, SchemaStore
from ..share.admin import ShareStateAdmin
from ..share.coordinator import ShareCoordinator
from ..share.manager import SharePartitions
from ..share.persister import LocalPersister, state_of_read, summary_of_read
from ..share.state_store import ShareStateStore, coordinator_partition
from ..txn.producer_states import ProducerStates
from ..txn.service import TxnService
from . import handlers
from .metrics import Metrics
from .router import Router
from .security import Security
from .security.changes import SecurityChanges
from .security.tls import registry_tls

if TYPE_CHECKING:
    from ..cluster.coordinators import CoordinatorWrites
    from ..cluster.peer import Connector
    from ..cluster.store import Store
    from ..wire.responses import MetadataResponseBroker
    from .connection import KafkaConnection

log = logging.getLogger("tidelog.server")


class Broker:
    def __init__(self, config: BrokerConfig, *, store: Store | None = None, connect: Connector | None = None) -> None:
        """`store` and `connect` (cluster mode only): the coordination store and how to reach other
        brokers, when not etcd at `etcd.connect` and TCP (the deterministic simulation passes
        its own, tests/sim)."""
        self.config = config
        self.node_id = config.node_id
        self.registry = TopicRegistry(config.log_dirs[0], self.node_id, config["cluster.id"])
        # a member of a cluster coordinated by etcd (`etcd.connect`): its state there comes first
        state = ClusterState(config, self.registry, store) if config["etcd.connect"] else None
        self.admin = TopicAdmin(config, self.registry, state)
        self.topic_defaults = self.admin.topic_defaults
        self.security = Security(config)  # TLS contexts, SASL, credentials, ACLs
        # dynamic broker configs (kafka-configs --entity-type brokers): a file here, etcd in a cluster
        self.dynamic = DynamicBrokerConfigs(
            config, self.admin, config.log_dirs[0], state.put_broker_configs if state is not None else None
        )
        self.partitions = (
            Partitions(config, self.admin, state.hosts) if state is not None else Partitions(config, self.admin)
        )
        self.producers = ProducerStates(self.admin, self.partitions)  # every partition's producer state
        # group configs (kafka-configs --entity-type groups): share.* and consumer.* keys per group
        self.group_configs = GroupConfigs(
            config, config.log_dirs[0], state.put_group_configs if state is not None else None
        )
        self.features = Features.of(config)  # the feature levels ApiVersions advertises (KIP-584)
        self.cluster: ClusterView
        # share groups (KIP-932): the share coordinator (the share state), the share partitions
        # led here, and what the group coordinator asks of the share state
        self.share_state: ShareStateStore
        self.share_coordinator: ShareCoordinator
        self.shares: SharePartitions
        self._coordinator_writes: CoordinatorWrites | None = None  # a cluster's guard of coordinator writes
        if state is not None:
            self.groups, self.txn, self.cluster = self._cluster(state, connect)
        else:
            self.share_state = ShareStateStore(config, self.admin, self.partitions)
            self.share_coordinator = ShareCoordinator(self.share_state, self.registry)
            persister = LocalPersister(self.share_coordinator)
            self.shares = SharePartitions(config, self.registry, self.partitions, persister, self.group_configs)
            share_admin = ShareStateAdmin(persister, self.registry, self.partitions, self.shares.leadership)
            self.groups = GroupCoordinator(
                config, self.admin, EngineGroupLog(self.partitions, OFFSETS_TOPIC), share_admin, self.group_configs
            )
            self.txn = TxnService(config, self.admin, self.partitions, self.groups, self.producers)
            self.cluster = SingleNode(self.node_id, self._endpoint, self.registry)
        # ACL and credential changes: this broker's files, or etcd in a cluster
        self.security_changes = SecurityChanges(self.security, self.cluster.shared_security)
        self.connections: dict[KafkaConnection, None] = {}  # in order of opening
        self.schema_registry = self._schema_registry(state)  # its numbers are scraped with the broker's
        self.metrics = Metrics(
            config,
            self.registry,
            self.partitions,
            self.groups,
            self.txn,
            self.connections,
            self.cluster,
            [RegistryCollector(self.schema_registry)] if self.schema_registry is not None else [],
        )
        self.stopping = asyncio.Event()  # set at stop: long polls end (the Fetch handler waits on it)
        self.serving = asyncio.Event()  # set once requests are served (after the cluster join)
        self.router = Router()
        handlers.register_all(self)  # each handler bound to the parts it uses (handlers/__init__.py)
        self.router.seal(self.metrics.stage)
        self.servers: list[asyncio.base_events.Server] = []
        self.bound_ports: dict[str, int] = {}

    def _schema_registry(self, state: ClusterState | None) -> RegistryServer | None:
        """The schema registry's listener, when `schema.registry.listeners` names one. In a
        cluster its store writes as the leader of its topic's partition (the coordinators'
        guard) and creates the topic through etcd."""
        url = self.config["schema.registry.listeners"]
        if not url:
            return None
        scheme, _, rest = url.partition("://")
        host, _, port = rest.rstrip("/").rpartition(":")
        tls, client_tls = registry_tls(self.config) if scheme == "https" else (None, None)
        cluster, forwarder, publish = None, None, None
        if state is not None:
            directory = RegistryDirectory(
                state.store,
                state.keys,
                state.cache,
                self.node_id,
                self.config["schema.registry.topic"],
                self.config.advertised[0].host,
            )
            forwarder, publish = Forwarder(directory.primary_url, tls=client_tls), directory.publish
            assert self._coordinator_writes is not None  # built with the cluster's parts
            cluster = ClusterTopic(
                self._coordinator_writes,
                state.create_topic,
                lambda: len(state.cache.brokers),
                self.config["schema.registry.topic.replication.factor"],
            )
        store = SchemaStore(self.admin, self.partitions, self.config["schema.registry.topic"], cluster)
        basic = self.config["schema.registry.authentication"] == "basic"
        return RegistryServer(
            Registry(store),
            host.strip("[]") or "0.0.0.0",
            int(port),
            self.config["schema.registry.max.request.bytes"],
            ScramPasswords(self.security.credentials) if basic else None,
            forwarder,
            publish,
            tls,
            self._registry_access(basic),
        )

    def _registry_access(self, basic: bool) -> AccessControl | None:
        """ACLs on subjects: on with the registry's basic authentication and the broker's
        authorizer (its bindings, super users and no-ACL default), changed as Kafka's ACLs are."""
        authorizer = self.security.authorizer
        if authorizer is None:
            return None
        if not basic:
            log.warning("schema registry: no ACLs on subjects without schema.registry.authentication=basic")
            return None
        return AccessControl(authorizer, RegistryAcls(self.security.acls, self.security_changes))

    def _cluster(
        self, state: ClusterState, connect: Connector | None
    ) -> tuple[GroupCoordinator, TxnService, ClusterView]:
        """The coordinators and the cluster node of a cluster member, in dependency order: this
        broker's incarnation (lease, registration), the replica fetcher and manager, the guard
        that makes coordinator writes count once replicated, the group coordinator, the marker
        sender, the transaction coordinator, KIP-890 verification at other coordinators, the
        coordinators' placement (they follow the leaderships of their topics' partitions), the
        ACLs and credentials shared through etcd, and the node that runs them."""
        from ..cluster.coordinators import CoordinatorPlacement, CoordinatorTopics, CoordinatorWrites
        from ..cluster.fetcher import FetcherManager
        from ..cluster.markers import MarkerSender
        from ..cluster.membership import Membership
        from ..cluster.node import ClusterNode
        from ..cluster.peer import tcp_connect
        from ..cluster.replica import ReplicaManager
        from ..cluster.security_state import SharedSecurity
        from ..cluster.share_persister import RoutedPersister, ShareLeadership
        from ..cluster.verify import TxnVerifier

        config, node_id, connect = self.config, self.node_id, connect if connect is not None else tcp_connect
        listener = config["inter.broker.listener.name"] or config.listeners[0].name
        membership = Membership(config, state, self.partitions, self.bound_port)
        fetchers = FetcherManager(node_id, state.cache, self.partitions, self.producers, config, listener, connect)
        replicas = ReplicaManager(
            node_id,
            state.store,
            state.keys,
            state.cache,
            self.partitions,
            config,
            membership.lease_valid,
            state.min_isr,
            membership.broker_epoch,
            fetchers,
        )
        writes = CoordinatorWrites(replicas, membership.lease_valid, config["offsets.commit.timeout.ms"] / 1000)
        self._coordinator_writes = writes  # the schema registry's store writes under it too
        # share groups: the share coordinator of the __share_group_state partitions led here, the
        # persister that reaches any share coordinator, the share partitions of data partitions
        # led here, the group coordinator's calls on the share state
        self.share_state = ShareStateStore(config, self.admin, self.partitions, writes)
        self.share_coordinator = ShareCoordinator(self.share_state, self.registry)
        topics = CoordinatorTopics(config, state.cache, state.create_topic)
        persister = RoutedPersister(
            node_id,
            state.cache,
            self.share_coordinator,
            topics,
            coordinator_partition,
            state_of_read,
            summary_of_read,
            listener,
            config["share.coordinator.write.timeout.ms"] / 1000,
            connect,
        )
        leadership = ShareLeadership(replicas)
        self.shares = SharePartitions(config, self.registry, self.partitions, persister, self.group_configs, leadership)
        share_admin = ShareStateAdmin(persister, self.registry, self.partitions, leadership, persister.end_offset)
        groups = GroupCoordinator(
            config,
            self.admin,
            EngineGroupLog(self.partitions, OFFSETS_TOPIC, writes),
            share_admin,
            group_configs=self.group_configs,
        )
        markers = MarkerSender(
            node_id, state.cache, replicas, self.producers, self.partitions, listener, groups, connect
        )
        txn = TxnService(
            config,
            self.admin,
            self.partitions,
            groups,
            self.producers,
            pids=state.pids,
            marker_sender=markers,
            state_guard=writes,
        )
        verifier = TxnVerifier(node_id, state.cache, txn, listener, connect)
        placement = CoordinatorPlacement(
            state.cache,
            replicas,
            {OFFSETS_TOPIC: groups, STATE_TOPIC: txn, SHARE_STATE_TOPIC: self.share_coordinator},
            membership.lease_valid,
            topics,
        )
        shared = SharedSecurity(
            state.store, state.keys.security, state.cache, self.security.acls, self.security.credentials
        )
        node = ClusterNode(
            config,
            state,
            membership,
            self.admin,
            self.dynamic,
            self.group_configs,
            replicas,
            fetchers,
            placement,
            markers,
            verifier,
            shared,
        )
        return groups, txn, node

    # ---- connections ---------------------------------------------------------------------
    def connection_opened(self, conn: KafkaConnection) -> bool:
        if len(self.connections) >= self.config["max.connections"]:
            return False
        self.connections[conn] = None
        return True

    def connection_closed(self, conn: KafkaConnection) -> None:
        self.connections.pop(conn, None)
        self.shares.connection_closed(conn)  # its share sessions end; what their members held is released

    # ---- lifecycle -----------------------------------------------------------------------
    async def start(self, listen: bool = True) -> None:
        """Start every part, then listen. `listen=False`: no sockets (the simulation attaches
        connections itself); advertised ports must then be set in the configuration."""
        from .connection import KafkaConnection

        loop = asyncio.get_running_loop()
        self.partitions.start()
        if self.cluster.clustered:  # the coordinators load what this broker comes to lead
            self.groups.start_clustered(self.config["offsets.topic.num.partitions"])
            self.txn.start()
        else:
            self.share_state.start()
            self.groups.start()
            self.txn.start()
        await self.metrics.start()
        for lst in self.config.listeners if listen else ():
            server = await loop.create_server(
                lambda name=lst.name: KafkaConnection(self, name),
                host=lst.host or None,
                port=lst.port,
                reuse_address=True,
                backlog=1024,
                ssl=self.security.ssl_context(lst.name),
                start_serving=False,  # bound (the registration advertises the port), not yet listening
            )
            self.servers.append(server)
            bound = server.sockets[0].getsockname()
            self.bound_ports[lst.name] = bound[1]
        await self.cluster.start()  # a cluster member joins (serving nothing before)
        if self.schema_registry is not None:  # `_schemas` read, listening before the Kafka listeners are
            await self.schema_registry.start()
        for server, lst in zip(self.servers, self.config.listeners):
            await server.start_serving()
            bound = server.sockets[0].getsockname()
            log.info("listening on %s://%s:%d", lst.name, bound[0], bound[1])
        self.serving.set()
        log.info("tidelog node %d started (cluster %s)", self.node_id, self.registry.cluster_id)

    def _endpoint(self, listener_name: str) -> MetadataResponseBroker:
        """This broker as Metadata lists it to a client of `listener_name`."""
        adv = [a for a in self.config.advertised if a.name == listener_name] or self.config.advertised[:1]
        host, port = adv[0].host, adv[0].port
        if port == 0:  # listening on an ephemeral port: advertise the bound one
            port = self.bound_port(adv[0].name)
        return {"node_id": self.node_id, "host": host, "port": port, "rack": None}

    def bound_port(self, listener: str | None = None) -> int:
        if listener in self.bound_ports:
            return self.bound_ports[listener]
        return int(self.servers[0].sockets[0].getsockname()[1])

    async def stop(self) -> None:
        await self.cluster.controlled_shutdown()  # listeners still open: followers catch up
        if self.cluster.clustered:
            # the writes the handover failed are answered before their connections close (an
            # unanswered one is a lost answer to its client, as the crash of a broker is)
            await asyncio.sleep(0.01)
        self.stopping.set()
        if self.schema_registry is not None:
            await self.schema_registry.stop()
        for server in self.servers:
            server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        for server in self.servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except (TimeoutError, Exception):  # noqa: BLE001 - a listener that will not close must not block shutdown
                pass
        await self.cluster.stop()
        await self.metrics.stop()
        self.txn.stop()
        self.groups.stop()
        self.shares.stop()
        self.partitions.stop()
        log.info("tidelog stopped cleanly")
