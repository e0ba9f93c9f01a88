"""The broker: configuration, topic registry, logs, coordinators, router, and listeners.

`Broker.start()` opens the data directory, registers every handler module with the router and
listens on each configured listener; `Broker.stop()` closes listeners and connections, then the
logs cleanly (so the next start skips recovery).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .admin import TopicAdmin
from .config import BrokerConfig
from .partitions import Partitions
from .router import Router
from .security import Security
from .topics import TopicRegistry
from . import handlers

log = logging.getLogger("tidelog.server")


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        data_dir = config.log_dirs[0]
        self.registry = TopicRegistry(data_dir, self.node_id, config["cluster.id"])
        self.router = Router()
        self.connections: set[Any] = set()
        self.servers: list[asyncio.base_events.Server] = []
        self.services: dict[str, Any] = {}
        self.stopping = asyncio.Event()
        self.topic_defaults = config.topic_defaults()
        self.admin = TopicAdmin(self)
        self.security = Security(config)  # TLS contexts, SASL, credentials, ACLs
        self.bound_ports: dict[str, int] = {}
        try:
            self.services["partitions"] = Partitions(self)
        except ImportError as e:  # the log engine's manager has not landed yet in this tree
            log.warning("data path disabled: %s", e)
        handlers.register_all(self)
        from .metrics import Metrics  # after the handlers: it wraps their routes when enabled

        self.services["metrics"] = Metrics(self)

    # ---- connections ---------------------------------------------------------------------
    def connection_opened(self, conn) -> bool:
        if len(self.connections) >= self.config["max.connections"]:
            return False
        self.connections.add(conn)
        return True

    def connection_closed(self, conn) -> None:
        self.connections.discard(conn)

    # ---- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        from .connection import KafkaConnection

        loop = asyncio.get_running_loop()
        for hook in list(self.services.values()):
            start = getattr(hook, "start", None)
            if start is not None:
                res = start()
                if asyncio.iscoroutine(res):
                    await res
        for lst in self.config.listeners:
            server = await loop.create_server(
                lambda name=lst.name: KafkaConnection(self, name),
                host=lst.host or None,
                port=lst.port,
                reuse_address=True,
                backlog=1024,
                ssl=self.security.ssl_context(lst.name),
            )
            self.servers.append(server)
            bound = server.sockets[0].getsockname()
            self.bound_ports[lst.name] = bound[1]
            log.info("listening on %s://%s:%d", lst.name, bound[0], bound[1])
        log.info("tidelog node %d started (cluster %s)", self.node_id, self.registry.cluster_id)

    def bound_port(self, listener: str | None = None) -> int:
        if listener in self.bound_ports:
            return self.bound_ports[listener]
        return self.servers[0].sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.stopping.set()
        for server in self.servers:
            server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        for server in self.servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001
                pass
        for hook in reversed(list(self.services.values())):
            stop = getattr(hook, "stop", None)
            if stop is not None:
                res = stop()
                if asyncio.iscoroutine(res):
                    await res
        log.info("tidelog stopped cleanly")
