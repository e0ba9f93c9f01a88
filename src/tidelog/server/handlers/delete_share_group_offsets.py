"""DeleteShareGroupOffsets (key 92, v0; KIP-932): delete the share state of an empty share group's
partitions of the given topics (`kafka-share-groups.sh --delete-offsets`); its next member starts
them again by `share.auto.offset.reset`. `groups.share_offsets` decides; this module only
translates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import DeleteShareGroupOffsetsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(
    deps: Deps, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> DeleteShareGroupOffsetsResponse:
    offsets = deps.groups.share_offsets
    if offsets is None:
        return {
            "throttle_time": 0,
            "error_code": E.unsupported_version,
            "error_message": "Share groups are not served by this broker.",
            "responses": [],
        }
    return await offsets.delete(request.group_id, [t.topic_name for t in request.topics])


ROUTE = control_route(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, handle)
