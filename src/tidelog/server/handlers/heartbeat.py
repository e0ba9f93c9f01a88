"""Heartbeat (key 12, v0-4): keeps a member's session alive; REBALANCE_IN_PROGRESS asks it to rejoin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.heartbeat.v4.request import HeartbeatRequest

    from ..broker import Broker
    from ..connection import RequestContext


def handle(broker: Broker, ctx: RequestContext, request: HeartbeatRequest) -> Any:
    coordinator = broker.groups
    err = coordinator.heartbeat(
        request.group_id, request.member_id, getattr(request, "group_instance_id", None), request.generation_id
    )
    return {"throttle_time": 0, "error_code": err}


ROUTE = control_route(ApiKey.HEARTBEAT, 0, 4, handle)
