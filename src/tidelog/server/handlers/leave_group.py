"""LeaveGroup (key 13, v0-5): one member (v0-2) or a batch of members, by id or instance id (v3+)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.leave_group.v5.request import LeaveGroupRequest

    from ..broker import Broker
    from ..connection import RequestContext


def handle(broker: Broker, ctx: RequestContext, request: LeaveGroupRequest) -> Any:
    coordinator = broker.groups
    if ctx.api_version < 3:
        top, members = coordinator.leave(request.group_id, [(request.member_id, None)])
        if not top and members:
            top = members[0]["error_code"]
        return {"throttle_time": 0, "error_code": top, "members": []}
    leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    top, members = coordinator.leave(request.group_id, leaving)
    return {"throttle_time": 0, "error_code": top, "members": members}


ROUTE = control_route(ApiKey.LEAVE_GROUP, 0, 5, handle)
