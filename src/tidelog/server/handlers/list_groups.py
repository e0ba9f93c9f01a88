"""ListGroups (key 16, v0-5): every group this node coordinates; v4 filters by state, v5 by type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import ListGroupsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


def handle(deps: Deps, ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    coordinator = deps.groups
    err, groups = coordinator.list_groups(getattr(request, "states_filter", ()), getattr(request, "types_filter", ()))
    return {"throttle_time": 0, "error_code": err, "groups": groups}


ROUTE = control_route(ApiKey.LIST_GROUPS, 0, 5, handle)
