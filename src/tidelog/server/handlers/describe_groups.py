"""DescribeGroups (key 15, v0-5): state, protocol and members; an unknown group is reported Dead."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey

from ..router import control_route

if TYPE_CHECKING:
    from ..broker import Broker
    from ..connection import RequestContext
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest



def handle(broker: Broker, ctx: RequestContext, request: DescribeGroupsRequest) -> Any:
    coordinator = broker.groups
    return {"throttle_time": 0, "groups": [coordinator.describe(g) for g in request.groups]}


ROUTE = control_route(ApiKey.DESCRIBE_GROUPS, 0, 5, handle)
