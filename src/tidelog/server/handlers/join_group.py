"""JoinGroup (key 11, v0-9): join or rejoin a classic group; answered when the rebalance completes.

v4+ first answers MEMBER_ID_REQUIRED with the member id to use (KIP-394); v5+ carries
group_instance_id for static membership (KIP-345); v8 a reason for the (re)join, logged with the
rebalance it starts (KIP-800); v9 lets a static leader that rejoins a Stable group know it leads
and skip the assignment (`skip_assignment`, KIP-814; `groups.membership`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...groups import ClassicJoin
from ...wire.apis import ApiKey
from ..router import control_route
from ._txn_util import millis

if TYPE_CHECKING:
    from kio.schema.join_group.v9.request import JoinGroupRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import JoinGroupResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    coordinator = deps.groups
    version = ctx.api_version
    peer = ctx.connection.peer
    session = millis(request.session_timeout)
    # v0 has no rebalance timeout: the session timeout serves, as in Kafka
    rebalance = millis(getattr(request, "rebalance_timeout", -1)) if version >= 1 else session
    result = await coordinator.join(
        ClassicJoin(
            group_id=request.group_id,
            member_id=request.member_id,
            instance_id=getattr(request, "group_instance_id", None),
            client_id=ctx.header.client_id or "",
            client_host=f"/{peer[0]}" if peer else "",
            session_ms=session,
            rebalance_ms=rebalance,
            protocol_type=request.protocol_type,
            protocols=tuple((p.name, bytes(p.metadata)) for p in request.protocols),
            require_known_member_id=version >= 4,
            skip_assignment=version >= 9,
            reason=getattr(request, "reason", None),
        )
    )
    if version < 7 and result["protocol_name"] is None:
        result = {**result, "protocol_name": ""}
    return {"throttle_time": 0, **result}


ROUTE = control_route(ApiKey.JOIN_GROUP, 0, 9, handle)
