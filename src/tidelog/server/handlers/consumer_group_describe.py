"""ConsumerGroupDescribe (key 69, v0-1; KIP-848): each consumer group's state, epochs, assignor and
members with their subscriptions, current and target assignments (topic ids and names). A group
that does not exist, or is a classic group, is GROUP_ID_NOT_FOUND."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import ConsumerGroupDescribeResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


def handle(deps: Deps, ctx: RequestContext, request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    consumer = deps.groups.consumer
    return {"throttle_time": 0, "groups": [consumer.describe(g) for g in request.group_ids]}


ROUTE = control_route(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, handle)
