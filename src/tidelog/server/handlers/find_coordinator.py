"""FindCoordinator (key 10, v0-4): this node coordinates every group (key type 0) and every
transactional id (key type 1). v4 answers a batch of keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey

from kio.schema.errors import ErrorCode as E

from ..router import control_route
from .metadata import broker_entries

if TYPE_CHECKING:
    from ..broker import Broker
    from ..connection import RequestContext
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

KEY_TYPES = (0, 1)  # group, transaction


def handle(broker: Broker, ctx: RequestContext, request: FindCoordinatorRequest) -> Any:
    coordinator = broker.groups
    def answer(ctx, key: str, key_type: int) -> dict:
        # The coordinators live on one broker (cluster mode: pinned in etcd, see README)
        nodes = {b["node_id"]: b for b in broker_entries(broker, ctx.connection.listener_name)}
        node = nodes.get(broker.cluster.coordinator_id())
        if node is None:
            return {"key": key, "error_code": E.coordinator_not_available, "error_message": "coordinator broker down",
                    "node_id": -1, "host": "", "port": -1}
        if key_type not in KEY_TYPES:
            return {"key": key, "error_code": E.invalid_request, "error_message": f"unknown key type {key_type}",
                    "node_id": -1, "host": "", "port": -1}
        if key_type == 0 and not coordinator.loaded:
            return {"key": key, "error_code": E.coordinator_not_available, "error_message": "loading",
                    "node_id": -1, "host": "", "port": -1}
        return {"key": key, "error_code": 0, "error_message": None, "node_id": node["node_id"],
                "host": node["host"], "port": node["port"]}

    key_type = getattr(request, "key_type", 0)
    if ctx.api_version >= 4:
        return {"throttle_time": 0,
                "coordinators": [answer(ctx, k, key_type) for k in request.coordinator_keys]}
    one = answer(ctx, request.key, key_type)
    del one["key"]  # v0-3 answer one key, at the top level, without naming it
    return {"throttle_time": 0, **one}


ROUTE = control_route(ApiKey.FIND_COORDINATOR, 0, 4, handle)
