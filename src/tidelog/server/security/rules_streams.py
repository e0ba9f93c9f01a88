"""Authorization rules of streams groups (KIP-1071), as Kafka's KafkaApis checks them.

StreamsGroupHeartbeat needs Read on the group (GROUP_AUTHORIZATION_FAILED, the error code alone);
the handler then checks Describe on the topology's topics and Create for the internal topics it
would create, in Kafka's order after its checks of the topology's topic names.
StreamsGroupDescribe needs Describe on each group (the others are GROUP_AUTHORIZATION_FAILED); a
described group whose topology names a topic the principal may not Describe is answered
TOPIC_AUTHORIZATION_FAILED without members or topology; authorized operations are the principal's.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...core.acls import Operation as Op
from ...core.acls import ResourceType as R
from .rule_kit import (
    GROUP_DENIED,
    GROUP_OPS,
    TOPIC_DENIED,
    Partial,
    Reply,
    Verdict,
    authorized_operations,
    plain,
    rule,
    split,
)

if TYPE_CHECKING:
    from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest
    from kio.schema.streams_group_heartbeat.v0.request import StreamsGroupHeartbeatRequest

    from ..connection import RequestContext
    from .session import Session


@rule(88)
def streams_group_heartbeat(session: Session, ctx: RequestContext, req: StreamsGroupHeartbeatRequest) -> Verdict:
    if session.allowed(R.GROUP, req.group_id, Op.READ):
        return None
    return Reply(
        {
            "throttle_time": 0,
            "error_code": GROUP_DENIED,
            "error_message": None,
            "member_id": "",
            "member_epoch": 0,
            "heartbeat_interval": 0,
            "acceptable_recovery_lag": 0,
            "task_offset_interval": 0,
            "status": [],
            "active_tasks": None,
            "standby_tasks": None,
            "warmup_tasks": None,
            "endpoint_information_epoch": 0,
            "partitions_by_user_endpoint": None,
        }
    )


def _topics(group: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for s in (group.get("topology") or {}).get("subtopologies") or ():
        out.update(s.get("source_topics") or ())
        out.update(s.get("repartition_sink_topics") or ())
        out.update(t["name"] for t in s.get("repartition_source_topics") or ())
        out.update(t["name"] for t in s.get("state_changelog_topics") or ())
    return out


@rule(89)
def streams_group_describe(session: Session, ctx: RequestContext, req: StreamsGroupDescribeRequest) -> Verdict:
    with_ops = bool(req.include_authorized_operations)

    def checked(resp: Any) -> dict[str, Any]:
        d = plain(resp)
        for g in d.get("groups") or ():
            if g.get("error_code") not in (0, E.none):
                continue
            if not all(session.allowed(R.TOPIC, t, Op.DESCRIBE) for t in _topics(g)):
                g.update(
                    error_code=TOPIC_DENIED,
                    error_message="The described group uses topics that the client is not authorized to describe.",
                    members=[],
                    topology=None,
                )
            elif with_ops:
                g["authorized_operations"] = authorized_operations(session, R.GROUP, g["group_id"], GROUP_OPS)
        return d

    ok, denied = split(req.group_ids, lambda g: session.allowed(R.GROUP, g, Op.DESCRIBE))
    refused: list[dict[str, Any]] = [
        {
            "error_code": GROUP_DENIED,
            "error_message": None,
            "group_id": g,
            "group_state": "",
            "group_epoch": 0,
            "assignment_epoch": 0,
            "topology": None,
            "members": [],
        }
        for g in denied
    ]
    if not ok:
        return Reply({"throttle_time": 0, "groups": refused})

    def answer(resp: Any) -> dict[str, Any]:
        d = checked(resp)  # the refused groups first, as KafkaApis answers them
        d["groups"] = [*refused, *(d.get("groups") or ())]
        return d

    return Partial(dataclasses.replace(req, group_ids=tuple(ok)), answer)
