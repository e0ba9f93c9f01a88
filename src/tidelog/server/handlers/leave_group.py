"""LeaveGroup (key 13, v0-5): one member (v0-2) or a batch of members, by id or instance id (v3+)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.leave_group.v5.request import LeaveGroupRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import LeaveGroupResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    coordinator = deps.groups
    if ctx.api_version < 3:
        member_id: str = getattr(request, "member_id")  # v0-2: one member, at the top level
        top, members = await coordinator.leave(request.group_id, [(member_id, None)])
        if not top and members:
            top = members[0]["error_code"]
        return {"throttle_time": 0, "error_code": top, "members": []}
    leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    top, members = await coordinator.leave(request.group_id, leaving)
    return {"throttle_time": 0, "error_code": top, "members": members}


ROUTE = control_route(ApiKey.LEAVE_GROUP, 0, 5, handle)
