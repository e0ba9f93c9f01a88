"""ShareAcknowledge (key 79, v1-2; share groups, KIP-932): a share consumer acknowledges records it
was given (ACCEPT, RELEASE, REJECT; GAP for offsets the log does not have) without fetching, in its
share session (epoch n > 0; -1 also closes the session and releases what the member holds; 0 is
INVALID_SHARE_SESSION_EPOCH). Answered per partition once the new state is durable
(`share.manager`): INVALID_RECORD_STATE for a record the member does not hold (a lock expired,
another member has it)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...share.sessions import ShareSessionError
from ...wire.apis import ApiKey
from ..router import control_route
from .share_fetch import acks_of

if TYPE_CHECKING:
    from kio.schema.share_acknowledge.v2.request import ShareAcknowledgeRequest

    from ...core.group_configs import GroupConfigs
    from ...share.manager import SharePartitions
    from ...wire.responses import ShareAcknowledgePartitionData, ShareAcknowledgeResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    shares: SharePartitions
    group_configs: GroupConfigs


def _error(code: E, message: str | None) -> ShareAcknowledgeResponse:
    return {"throttle_time": 0, "error_code": code, "error_message": message, "responses": [], "node_endpoints": []}


async def handle(deps: Deps, ctx: RequestContext, request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    shares = deps.shares
    group, member = request.group_id, request.member_id
    if group is None:
        return _error(E.invalid_request, "Invalid group id in the request.")
    if not member or not member.strip():
        return _error(E.invalid_request, "Invalid member id in the request.")
    try:
        context = shares.sessions.acknowledge_context(group, member, request.share_session_epoch)
    except ShareSessionError as e:
        return _error(e.code, str(e))
    acks = acks_of(request.topics)
    errors = await shares.acknowledge(group, member, acks) if acks else {}
    if context.final:
        shares.sessions.close(group, member)
        shares.release(group, member)
    by_topic: dict[uuid.UUID, list[ShareAcknowledgePartitionData]] = {}
    for (topic_id, p), code in errors.items():
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": p,
                "error_code": code,
                "error_message": None,
                "current_leader": {"leader_id": -1, "leader_epoch": -1},
            }
        )
    return {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout": deps.group_configs.get_int(group, "share.record.lock.duration.ms"),
        "responses": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
        "node_endpoints": [],
    }


ROUTE = control_route(ApiKey.SHARE_ACKNOWLEDGE, 1, 2, handle)
