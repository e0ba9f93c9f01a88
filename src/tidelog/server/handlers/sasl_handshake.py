"""SaslHandshake (key 17, v0-1): pick a SASL mechanism on a SASL listener (security.session)."""

from kio.schema.errors import ErrorCode as E

from ..router import control_route

API_KEY = 17


def register(broker) -> None:
    def handle(ctx, request):
        session = ctx.connection.security
        if session is None or not session.sasl:
            return {"error_code": E.illegal_sasl_state, "mechanisms": []}
        return session.handshake(ctx.api_version, request.mechanism)

    broker.router.add(control_route(API_KEY, 0, 1, handle))
