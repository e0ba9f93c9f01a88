"""DeleteGroups (key 42, v0-2): remove empty groups and their committed offsets (tombstones)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.delete_groups.v2.request import DeleteGroupsRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import DeletableGroupResult, DeleteGroupsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    coordinator = deps.groups
    results: list[DeletableGroupResult] = []
    for g in request.groups_names:
        results.append({"group_id": g, "error_code": await coordinator.delete_group(g)})
    return {"throttle_time": 0, "results": results}


ROUTE = control_route(ApiKey.DELETE_GROUPS, 0, 2, handle)
