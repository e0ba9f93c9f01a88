"""SaslAuthenticate (key 36, v0-2): one SASL token each way; v1+ carries the session lifetime."""

from kio.schema.errors import ErrorCode as E

from ..router import control_route

API_KEY = 36


def register(broker) -> None:
    def handle(ctx, request):
        session = ctx.connection.security
        if session is None or not session.sasl:
            return {"error_code": E.illegal_sasl_state, "error_message": "not a SASL listener", "auth_bytes": b""}
        return session.authenticate(ctx.api_version, request.auth_bytes)

    broker.router.add(control_route(API_KEY, 0, 2, handle))
