"""SaslAuthenticate (key 36, v0-2): one SASL token each way; v1+ carries the session lifetime."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest

    from ...wire.responses import SaslAuthenticateResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """None: the connection's SASL session (`ctx.connection.security`) does the work."""


def handle(deps: Deps, ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    session = ctx.connection.security
    if session is None or not session.sasl:
        return {"error_code": E.illegal_sasl_state, "error_message": "not a SASL listener", "auth_bytes": b""}
    return session.authenticate(ctx.api_version, request.auth_bytes)


ROUTE = control_route(ApiKey.SASL_AUTHENTICATE, 0, 2, handle)
