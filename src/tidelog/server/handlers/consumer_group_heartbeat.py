"""ConsumerGroupHeartbeat (key 68, v0-1; Kafka 4's consumer protocol, KIP-848): a member joins (epoch
0), heartbeats with its epoch and what it owns, or leaves (-1, or -2 for a static member that comes
back); the answer carries its epoch and, when it changed, its assignment (topic ids). v1 members
name themselves (a UUID the client makes); v0 members are named by the coordinator. The protocol
is `groups.consumer_protocol`'s; this module only translates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.acls import Operation as Op
from ...core.acls import ResourceType as R
from ...groups.consumer_requests import Heartbeat
from ...wire.apis import ApiKey
from ..router import control_route
from ._txn_util import millis

if TYPE_CHECKING:
    from collections.abc import Callable

    from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import ConsumerGroupHeartbeatResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(
    deps: Deps, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    peer = ctx.connection.peer
    owned = request.topic_partitions
    hb = Heartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=millis(request.rebalance_timeout),
        subscribed_topic_names=None
        if request.subscribed_topic_names is None
        else tuple(request.subscribed_topic_names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),  # v1+
        server_assignor=request.server_assignor,
        owned=None if owned is None else tuple((tp.topic_id, tuple(tp.partitions)) for tp in owned if tp.topic_id),
        client_id=ctx.header.client_id or "",
        client_host=f"/{peer[0]}" if peer else "",
        version=ctx.api_version,
    )
    session = ctx.connection.security
    may_describe: Callable[[str], bool] | None = None
    if session is not None and session.security.authorizer is not None:
        may_describe = lambda topic: session.allowed(R.TOPIC, topic, Op.DESCRIBE)
    return await deps.groups.consumer.heartbeat(hb, may_describe)


ROUTE = control_route(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, handle)
