"""SyncGroup (key 14, v0-5): the leader hands in the assignment; every member gets its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.sync_group.v5.request import SyncGroupRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import SyncGroupResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    coordinator = deps.groups
    result = await coordinator.sync(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=getattr(request, "group_instance_id", None),
        generation=request.generation_id,
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    return {"throttle_time": 0, **result}


ROUTE = control_route(ApiKey.SYNC_GROUP, 0, 5, handle)
