"""FindCoordinator (key 10, v0-4): this node coordinates every group (key type 0) and every
transactional id (key type 1). v4 answers a batch of keys."""

from kio.schema.errors import ErrorCode as E

from ..router import control_route
from .metadata import broker_entries

API_KEY = 10
KEY_TYPES = (0, 1)  # group, transaction


def register(broker) -> None:
    coordinator = broker.groups

    def answer(ctx, key: str, key_type: int) -> dict:
        node = broker_entries(broker, ctx.connection.listener_name)[0]
        if key_type not in KEY_TYPES:
            return {"key": key, "error_code": E.invalid_request, "error_message": f"unknown key type {key_type}",
                    "node_id": -1, "host": "", "port": -1}
        if key_type == 0 and not coordinator.loaded:
            return {"key": key, "error_code": E.coordinator_not_available, "error_message": "loading",
                    "node_id": -1, "host": "", "port": -1}
        return {"key": key, "error_code": 0, "error_message": None, "node_id": node["node_id"],
                "host": node["host"], "port": node["port"]}

    def handle(ctx, request):
        key_type = getattr(request, "key_type", 0)
        if ctx.api_version >= 4:
            return {"throttle_time": 0,
                    "coordinators": [answer(ctx, k, key_type) for k in request.coordinator_keys]}
        one = answer(ctx, request.key, key_type)
        del one["key"]  # v0-3 answer one key, at the top level, without naming it
        return {"throttle_time": 0, **one}

    broker.router.add(control_route(API_KEY, 0, 4, handle))
