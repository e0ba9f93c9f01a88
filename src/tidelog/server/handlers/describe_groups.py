"""DescribeGroups (key 15, v0-6): state, protocol and members of a classic group; an unknown group (or
a consumer group) is reported Dead, with GROUP_ID_NOT_FOUND from v6."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route
from ..security.rules import GROUP_OPS

if TYPE_CHECKING:
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import DescribeGroupsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


ALL_GROUP_OPERATIONS = sum(1 << int(op) for op in GROUP_OPS)


def handle(deps: Deps, ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    coordinator = deps.groups
    groups = [coordinator.describe(g, ctx.api_version) for g in request.groups]
    if getattr(request, "include_authorized_operations", False):
        # v3+: every group operation on each group described without error, as Kafka answers
        # without an authorizer (the authorizer's rule replaces them with the principal's own)
        for g in groups:
            if g["error_code"] == 0:
                g["authorized_operations"] = ALL_GROUP_OPERATIONS
    return {"throttle_time": 0, "groups": groups}


ROUTE = control_route(ApiKey.DESCRIBE_GROUPS, 0, 6, handle)
