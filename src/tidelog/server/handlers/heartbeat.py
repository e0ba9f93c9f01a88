"""Heartbeat (key 12, v0-4): keeps a member's session alive; REBALANCE_IN_PROGRESS asks it to rejoin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.heartbeat.v4.request import HeartbeatRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import HeartbeatResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


def handle(deps: Deps, ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    coordinator = deps.groups
    err = coordinator.heartbeat(
        request.group_id, request.member_id, getattr(request, "group_instance_id", None), request.generation_id
    )
    return {"throttle_time": 0, "error_code": err}


ROUTE = control_route(ApiKey.HEARTBEAT, 0, 4, handle)
