"""The broker's composition root: every part is built here, in one stated order, and given its
narrow collaborators by constructor.

    config -> topic registry -> topic admin -> security -> dynamic broker configs
           -> partitions (the log engine's LogManager)
           -> cluster view (SingleNode, or ClusterNode with etcd: registration, controller, replicas)
           -> group coordinator (offsets in __consumer_offsets, through the partitions)
           -> transaction coordinator (producer state, markers; completes group offsets)
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
from typing import Any

from ..groups import OFFSETS_TOPIC, GroupCoordinator
from ..groups.store import EngineGroupLog
from ..txn.producer_states import ProducerStates
from ..txn.service import TxnService
from . import handlers
from ..core.admin import TopicAdmin
from ..core.config import BrokerConfig
from ..core.dynamic_config import DynamicBrokerConfigs
from .metrics import Metrics
from ..core.partitions import Partitions
from .router import Router
from .security import Security
from ..core.topics import TopicRegistry
from ..cluster.state import ClusterState
from ..cluster.view import SingleNode

log = logging.getLogger("tidelog.server")


class Broker:
    def __init__(self, config: BrokerConfig, *, store: Any = None, connect: Any = None) -> None:
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
        self.dynamic = DynamicBrokerConfigs(config, self.admin, config.log_dirs[0],
                                            state.put_broker_configs if state is not None else None)
        self.partitions = Partitions(config, self.admin, state.hosts) if state is not None \
            else Partitions(config, self.admin)
        # One node (the default) or a member of a cluster.
        self.cluster: Any
        if state is not None:
            from ..cluster.node import ClusterNode

            from ..cluster.peer import tcp_connect

            self.cluster = ClusterNode(config, state, self.admin, self.partitions,
                                       connect if connect is not None else tcp_connect)
        else:
            self.cluster = SingleNode(self.node_id, self._endpoint)
        self.groups = GroupCoordinator(config, self.admin, EngineGroupLog(self.partitions, OFFSETS_TOPIC))
        self.producers = ProducerStates(self.admin, self.partitions)  # every partition's producer state
        self.txn = TxnService(config, self.admin, self.partitions, self.groups, self.producers)
        if self.cluster.clustered:
            self.cluster.bind(self.txn, self.bound_port, self.security, self.dynamic)
        self.connections: dict[Any, None] = {}  # in order of opening
        self.metrics = Metrics(config, self.registry, self.partitions, self.groups, self.txn, self.connections)
        self.metrics.cluster = self.cluster
        self.router = Router()
        handlers.register_all(self)
        self.router.seal(self.metrics.stage)
        self.servers: list[asyncio.base_events.Server] = []
        self.stopping = asyncio.Event()
        self.serving = asyncio.Event()  # set once requests are served (after the cluster join)
        self.bound_ports: dict[str, int] = {}

    # ---- connections ---------------------------------------------------------------------
    def connection_opened(self, conn) -> bool:
        if len(self.connections) >= self.config["max.connections"]:
            return False
        self.connections[conn] = None
        return True

    def connection_closed(self, conn) -> None:
        self.connections.pop(conn, None)

    # ---- lifecycle -----------------------------------------------------------------------
    async def start(self, listen: bool = True) -> None:
        """Start every part, then listen. `listen=False`: no sockets (the simulation attaches
        connections itself); advertised ports must then be set in the configuration."""
        from .connection import KafkaConnection

        loop = asyncio.get_running_loop()
        self.partitions.start()
        if self.cluster.clustered:  # the coordinators load what this broker comes to lead
            self.groups.start_clustered(self.config["offsets.topic.num.partitions"])
            self.txn.start(clustered=True)
        else:
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
        if self.cluster.clustered:
            await self.cluster.start()
        for server, lst in zip(self.servers, self.config.listeners):
            await server.start_serving()
            bound = server.sockets[0].getsockname()
            log.info("listening on %s://%s:%d", lst.name, bound[0], bound[1])
        self.serving.set()
        log.info("tidelog node %d started (cluster %s)", self.node_id, self.registry.cluster_id)

    def _endpoint(self, listener_name: str) -> dict[str, Any]:
        """This broker as Metadata lists it to a client of `listener_name`."""
        adv = [a for a in self.config.advertised if a.name == listener_name] or self.config.advertised[:1]
        host, port = adv[0].host, adv[0].port
        if port == 0:  # listening on an ephemeral port: advertise the bound one
            port = self.bound_port(adv[0].name)
        return {"node_id": self.node_id, "host": host, "port": port, "rack": None}

    def bound_port(self, listener: str | None = None) -> int:
        if listener in self.bound_ports:
            return self.bound_ports[listener]
        return self.servers[0].sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self.cluster.clustered:
            await self.cluster.controlled_shutdown()  # listeners still open: followers catch up
            # the writes the handover failed are answered before their connections close (an
            # unanswered one is a lost answer to its client, as the crash of a broker is)
            await asyncio.sleep(0.01)
        self.stopping.set()
        for server in self.servers:
            server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        for server in self.servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - a listener that will not close must not block shutdown
                pass
        if self.cluster.clustered:
            await self.cluster.stop()
        await self.metrics.stop()
        self.txn.stop()
        self.groups.stop()
        self.partitions.stop()
        log.info("tidelog stopped cleanly")
