"""AlterShareGroupOffsets (key 91, v0; KIP-932): set the share-partition start offsets of an empty
share group (`kafka-share-groups.sh --reset-offsets`). `groups.share_offsets` decides; this module
only translates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.alter_share_group_offsets.v0.request import AlterShareGroupOffsetsRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import AlterShareGroupOffsetsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(
    deps: Deps, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> AlterShareGroupOffsetsResponse:
    offsets = deps.groups.share_offsets
    if offsets is None:
        return {
            "throttle_time": 0,
            "error_code": E.unsupported_version,
            "error_message": "Share groups are not served by this broker.",
            "responses": [],
        }
    return await offsets.alter(
        request.group_id,
        [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions]) for t in request.topics],
    )


ROUTE = control_route(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, handle)
