"""Security: TLS and SASL listeners, SCRAM credentials, ACLs and the authorizer.

`Security(broker)` is built once from the broker's configuration. For each listener it knows the
protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), the TLS context and the SASL mechanisms.
`session(conn)` gives a connection its `Session`, or None when there is nothing to check (a
PLAINTEXT or SSL listener and no authorizer): such connections pay a single `is None` test per
request and nothing else.

Modules: `settings` (config keys), `tls`, `sasl` and `scram` (mechanisms and credentials),
`acls` and `authorizer`, `session` (per-connection state and the gate), `rules` and
`rules_coord` (what each API needs and how a refusal is answered).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...core.acls import AclStore
from ...core.scram import CredentialStore
from ...core.security_settings import enabled_mechanisms, listener_protocol, lookup, plain_users
from .authorizer import Authorizer, parse_super_users

if TYPE_CHECKING:
    import ssl

    from ...core.config import BrokerConfig
    from ..connection import KafkaConnection
    from .session import Session

log = logging.getLogger("tidelog.security")


@dataclass
class ListenerSecurity:
    name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    mechanisms: list[str] = field(default_factory=list)
    plain_users: dict[str, str] = field(default_factory=dict)
    # listener.name.<l>.<key>, else the global <key>
    reauth_ms: int = 0
    max_receive_size: int = 524288
    failed_auth_delay_ms: int = 100

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")


class Security:
    def __init__(self, config: BrokerConfig) -> None:
        data_dir = config.log_dirs[0]
        data_dir.mkdir(parents=True, exist_ok=True)
        self.credentials = CredentialStore(data_dir)
        self.acls = AclStore(data_dir)
        self.authorizer: Authorizer | None = None
        if config["authorizer.class.name"]:
            self.authorizer = Authorizer(
                self.acls, parse_super_users(config["super.users"]), bool(config["allow.everyone.if.no.acl.found"])
            )
        self.listeners: dict[str, ListenerSecurity] = {}
        for lst in config.listeners:
            ls = ListenerSecurity(
                lst.name,
                listener_protocol(config, lst.name),
                reauth_ms=int(lookup(config, lst.name, "connections.max.reauth.ms") or 0),
                max_receive_size=int(lookup(config, lst.name, "sasl.server.max.receive.size")),
                failed_auth_delay_ms=int(lookup(config, lst.name, "connection.failed.authentication.delay.ms")),
            )
            if ls.tls:
                from .tls import server_context

                ls.ssl_context = server_context(config, lst.name)
            if ls.sasl:
                ls.mechanisms = enabled_mechanisms(config, lst.name)
                ls.plain_users = plain_users(config, lst.name)
                if "PLAIN" in ls.mechanisms and not ls.plain_users:
                    log.warning("listener %s enables PLAIN but its sasl.jaas.config names no user_<name>", lst.name)
            self.listeners[lst.name] = ls

    def ssl_context(self, listener: str) -> ssl.SSLContext | None:
        return self.listeners[listener].ssl_context

    def session(self, conn: KafkaConnection) -> Session | None:
        """The connection's authentication and authorization state; None when its listener has
        neither SASL nor an authorizer (nothing to check)."""
        ls = self.listeners.get(conn.listener_name)
        if ls is None or (not ls.sasl and self.authorizer is None):
            return None
        from .session import Session

        return Session(self, ls, conn)
