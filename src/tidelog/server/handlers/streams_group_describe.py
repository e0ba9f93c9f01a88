"""StreamsGroupDescribe (key 89, v0; KIP-1071): each streams group's state, epochs, topology (as
configured when it is ready, with the partition counts the broker decided, else as declared) and
members with their process, endpoint, current and target tasks. A group that does not exist, or
is of another kind, is GROUP_ID_NOT_FOUND; an empty group id INVALID_GROUP_ID."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import StreamsGroupDescribeResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


def handle(deps: Deps, ctx: RequestContext, request: StreamsGroupDescribeRequest) -> StreamsGroupDescribeResponse:
    streams = deps.groups.streams
    return {"throttle_time": 0, "groups": [streams.describe(g) for g in request.group_ids]}


ROUTE = control_route(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 0, handle)
