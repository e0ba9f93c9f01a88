"""DescribeShareGroupOffsets (key 90, v0-1; KIP-932): for each share group, the share-partition
start offset, leader epoch and (v1) lag of the partitions asked for, or of every partition the
group has initialized when `topics` is null. What the numbers mean is `groups.share_offsets`'s;
this module only translates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.describe_share_group_offsets.v1.request import DescribeShareGroupOffsetsRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import DescribeShareGroupOffsetsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(
    deps: Deps, ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
) -> DescribeShareGroupOffsetsResponse:
    offsets = deps.groups.share_offsets
    if offsets is None:
        return {
            "throttle_time": 0,
            "groups": [
                {"group_id": g.group_id, "topics": [], "error_code": E.unsupported_version} for g in request.groups
            ],
        }
    return {
        "throttle_time": 0,
        "groups": [
            await offsets.describe(
                g.group_id,
                None if g.topics is None else [(t.topic_name, list(t.partitions)) for t in g.topics],
            )
            for g in request.groups
        ],
    }


ROUTE = control_route(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, handle)
