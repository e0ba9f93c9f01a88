"""SaslHandshake (key 17, v0-1): pick a SASL mechanism on a SASL listener (security.session)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    from ...wire.responses import SaslHandshakeResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """None: the connection's SASL session (`ctx.connection.security`) does the work."""


def handle(deps: Deps, ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    session = ctx.connection.security
    if session is None or not session.sasl:
        return {"error_code": E.illegal_sasl_state, "mechanisms": []}
    return session.handshake(ctx.api_version, request.mechanism)


ROUTE = control_route(ApiKey.SASL_HANDSHAKE, 0, 1, handle)
