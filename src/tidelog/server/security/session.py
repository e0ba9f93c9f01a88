"""One connection's security state: SASL authentication, session expiry, and the gate every
request passes before its handler.

A connection on a SASL listener starts unauthenticated; until a mechanism completes, only
ApiVersions, SaslHandshake and SaslAuthenticate are served and anything else closes the
connection (as Kafka does). SaslHandshake v0 switches to raw tokens: the next frames are SASL
tokens without a Kafka header, answered with size-prefixed tokens. With
`connections.max.reauth.ms` the session expires; the client re-authenticates over the same
connection (KIP-368), keeping its principal, and a request after expiry closes the connection.
Authenticated requests go to the authorizer's per-API rules when an authorizer is configured.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, cast

from kio.schema.errors import ErrorCode as E

from ..router import NO_RESPONSE
from .rules import apply
from .sasl import PlainServer, SaslFailure, ScramServer

if TYPE_CHECKING:
    from ...wire.responses import SaslAuthenticateResponse, SaslHandshakeResponse
    from ..connection import KafkaConnection, RequestContext
    from ..router import Route
    from . import ListenerSecurity, Security
    from .authorizer import Authorizer

log = logging.getLogger("tidelog.security")

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
_PRE_AUTH = frozenset((API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE))


class Session:
    def __init__(self, security: Security, listener: ListenerSecurity, conn: KafkaConnection) -> None:
        self.security = security
        self.listener = listener
        self.conn = conn
        self.sasl = listener.sasl
        self.authenticated = not listener.sasl
        self._principal: str | None = None if listener.sasl else ("" if listener.tls else "User:ANONYMOUS")
        self.mechanism: str | None = None
        self.exchange: Any = None  # the running mechanism (PlainServer / ScramServer)
        self.raw = False  # SaslHandshake v0: the next frames are bare SASL tokens
        self.expires_at: float | None = None
        self._max_frame = conn.decoder.max_frame_bytes
        if listener.sasl:  # sasl.server.max.receive.size bounds frames until authenticated
            conn.decoder.limit(min(self._max_frame, listener.max_receive_size))

    # ---- identity ---------------------------------------------------------------------------
    @property
    def principal(self) -> str:
        if self._principal == "":  # SSL listener: the client certificate names the principal
            from .tls import peer_principal

            transport = self.conn.transport
            self._principal = peer_principal(transport.get_extra_info("ssl_object") if transport else None)
        return self._principal or "User:ANONYMOUS"

    @property
    def host(self) -> str:
        peer = self.conn.peer
        return peer[0] if isinstance(peer, tuple) else "*"

    # ---- the gate ---------------------------------------------------------------------------
    def handle(self, ctx: RequestContext, route: Route, request: Any) -> Any:
        key = route.api_key
        pipeline = route.pipeline
        assert pipeline is not None  # the router seals every route before traffic
        if key in _PRE_AUTH:
            return pipeline(ctx, request)
        if not self.authenticated:
            self.conn.close_with(f"api {key} before SASL authentication completed")
            return NO_RESPONSE
        if self.expires_at is not None and time.monotonic() > self.expires_at:
            self.conn.close_with("SASL session expired without re-authentication")
            return NO_RESPONSE
        authorizer = self.security.authorizer
        if authorizer is None:
            return pipeline(ctx, request)
        return apply(self, authorizer, ctx, route, request)

    def allowed(self, resource_type: int, name: str, op: int) -> bool:
        # asked only where an authorizer is configured (the rules, and handlers that check first)
        authorizer = cast("Authorizer", self.security.authorizer)
        return authorizer.authorize(self.principal, self.host, resource_type, name, op)

    # ---- SASL -------------------------------------------------------------------------------
    def handshake(self, version: int, mechanism: str) -> SaslHandshakeResponse:
        mechanisms = self.listener.mechanisms
        if not self.sasl or self.exchange is not None and not self.exchange.complete or self.raw:
            self._close_soon("unexpected SaslHandshake")
            return {"error_code": E.illegal_sasl_state, "mechanisms": mechanisms}
        if self.authenticated and (version == 0 or mechanism != self.mechanism):
            self._close_soon("re-authentication must use SaslAuthenticate and the same mechanism")
            return {"error_code": E.illegal_sasl_state, "mechanisms": mechanisms}
        if mechanism not in mechanisms:
            self._close_soon(f"unsupported SASL mechanism {mechanism!r}")
            return {"error_code": E.unsupported_sasl_mechanism, "mechanisms": mechanisms}
        self.mechanism = mechanism
        if mechanism == "PLAIN":
            self.exchange = PlainServer(self.listener.plain_users)
        else:
            self.exchange = ScramServer(mechanism, self.security.credentials)
        self.raw = version == 0
        return {"error_code": E.none, "mechanisms": mechanisms}

    def authenticate(self, version: int, token: bytes) -> SaslAuthenticateResponse:
        if self.exchange is None or self.exchange.complete or self.raw:
            self._close_soon("SaslAuthenticate without a SaslHandshake")
            return {
                "error_code": E.illegal_sasl_state,
                "error_message": "SaslAuthenticate without SaslHandshake",
                "auth_bytes": b"",
            }
        try:
            out = self.exchange.step(bytes(token))
        except SaslFailure as e:
            log.info("SASL %s authentication from %s failed: %s", self.mechanism, self.conn.peer, e)
            self._close_soon("SASL authentication failed")
            self.exchange = None
            return {"error_code": E.sasl_authentication_failed, "error_message": str(e), "auth_bytes": b""}
        lifetime = 0
        if self.exchange.complete:
            if not self._complete():
                return {
                    "error_code": E.sasl_authentication_failed,
                    "error_message": "Cannot change principals during re-authentication",
                    "auth_bytes": b"",
                }
            lifetime = self.listener.reauth_ms if version >= 1 else 0
        return {"error_code": E.none, "error_message": None, "auth_bytes": out, "session_lifetime": lifetime}

    def raw_frame(self, frame: bytes | bytearray) -> bool:
        """Handle a bare SASL token after SaslHandshake v0; False when `frame` is a Kafka request."""
        if not self.raw:
            return False
        try:
            out = self.exchange.step(bytes(frame))
        except SaslFailure as e:
            log.info("SASL %s authentication from %s failed: %s", self.mechanism, self.conn.peer, e)
            self.conn.close_with("SASL authentication failed")
            return True
        if self.exchange.complete:
            self.raw = False
            if not self._complete():
                return True
        self.conn.push_raw(out)  # PLAIN's is empty: a zero-length frame acknowledges success
        return True

    def _complete(self) -> bool:
        principal = f"User:{self.exchange.username}"
        if self.authenticated and self._principal not in (None, principal):
            self._close_soon("re-authentication changed the principal")
            return False
        self._principal = principal
        self.authenticated = True
        self.conn.decoder.limit(self._max_frame)
        reauth = self.listener.reauth_ms
        self.expires_at = time.monotonic() + reauth / 1000 if reauth else None
        log.debug("%s authenticated as %s with %s", self.conn.peer, principal, self.mechanism)
        return True

    def _close_soon(self, reason: str) -> None:
        # The answer goes out at once; the close follows after connection.failed.authentication.delay.ms
        # (KIP-306), so that the client reads the error before it sees the connection end.
        delay = self.listener.failed_auth_delay_ms / 1000
        asyncio.get_running_loop().call_later(delay, self.conn.close_with, reason)
