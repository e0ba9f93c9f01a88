"""ShareGroupHeartbeat (key 76, v1; share groups, KIP-932): a member joins (epoch 0, with its
subscription), heartbeats, or leaves (-1); the answer carries its epoch and, when it changed, the
partitions it may fetch from (topic ids; other members may share them). The protocol is
`groups.share_group`'s; this module only translates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...groups.share_group import ShareHeartbeat
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import ShareGroupHeartbeatResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    shares = deps.groups.share
    if shares is None:  # a group coordinator built without share state (tests)
        return {
            "throttle_time": 0,
            "error_code": E.unsupported_version,
            "error_message": "Share groups are not served by this broker.",
            "member_id": None,
            "member_epoch": 0,
            "heartbeat_interval": 0,
            "assignment": None,
        }
    peer = ctx.connection.peer
    hb = ShareHeartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        rack_id=request.rack_id,
        subscribed_topic_names=None
        if request.subscribed_topic_names is None
        else tuple(request.subscribed_topic_names),
        client_id=ctx.header.client_id or "",
        client_host=f"/{peer[0]}" if peer else "",
    )
    return await shares.heartbeat(hb)


ROUTE = control_route(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1, handle)
