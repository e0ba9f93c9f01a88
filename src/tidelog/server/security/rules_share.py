"""Authorization rules for share groups (KIP-932), as Kafka's KafkaApis checks them: membership
and fetching need Read on the group and on each topic (Describe on subscribed topics); describing
needs Describe on the group; the share-offsets admin APIs need Describe (to look), Read (to alter)
or Delete (to delete) on the group, and Describe or Read on each topic. A refused topic is answered
in the response's own shape and left out of the request the handler sees."""

from __future__ import annotations

import dataclasses
import uuid
from typing import TYPE_CHECKING, Any

from ...core.acls import Operation as Op
from ...core.acls import ResourceType as R
from .rule_kit import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    TOPIC_DENIED,
    Partial,
    Reply,
    Verdict,
    cluster,
    extend,
    plain,
    rule,
    split,
    topic_allowed,
)

if TYPE_CHECKING:
    from ..connection import RequestContext
    from .session import Session

ZERO_UUID = uuid.UUID(int=0)
TOPIC_DENIED_MESSAGE = "Topic authorization failed."


def _group(session: Session, group_id: str, op: int) -> bool:
    return session.allowed(R.GROUP, group_id, op)


def _topic(session: Session, name: str, op: int) -> bool:
    return session.allowed(R.TOPIC, name, op)


@rule(76)
def share_group_heartbeat(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    """Read on the group; Describe on every subscribed topic (Kafka's KafkaApis)."""
    code = None
    if not _group(session, req.group_id, Op.READ):
        code = GROUP_DENIED
    elif req.subscribed_topic_names and not all(
        session.allowed(R.TOPIC, t, Op.DESCRIBE) for t in set(req.subscribed_topic_names)
    ):
        code = TOPIC_DENIED
    if code is None:
        return None
    return Reply(
        {
            "throttle_time": 0,
            "error_code": code,
            "error_message": "Authorization failed.",
            "member_id": None,
            "member_epoch": 0,
            "heartbeat_interval": 0,
            "assignment": None,
        }
    )


@rule(77)
def share_group_describe(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    """Describe on each group (GROUP_AUTHORIZATION_FAILED for the others)."""
    ok, denied = split(req.group_ids, lambda g: _group(session, g, Op.DESCRIBE))
    if not denied:
        return None
    refused = [
        {
            "error_code": GROUP_DENIED,
            "error_message": "Authorization failed.",
            "group_id": g,
            "group_state": "",
            "group_epoch": 0,
            "assignment_epoch": 0,
            "assignor_name": "",
            "members": [],
        }
        for g in denied
    ]
    if not ok:
        return Reply({"throttle_time": 0, "groups": refused})
    return Partial(dataclasses.replace(req, group_ids=tuple(ok)), extend("groups", refused))


@rule(78, 79)  # ShareFetch, ShareAcknowledge
def share_fetch(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    """Read on the group (the whole request), Read on each topic (TOPIC_AUTHORIZATION_FAILED for
    its partitions, which are left out of the request)."""
    if req.group_id is not None and not _group(session, req.group_id, Op.READ):
        return Reply(
            {
                "throttle_time": 0,
                "error_code": GROUP_DENIED,
                "error_message": "Authorization failed.",
                "acquisition_lock_timeout": 0,
                "responses": [],
                "node_endpoints": [],
            }
        )
    ok, denied = split(req.topics, topic_allowed(session, ctx, Op.READ))
    if not denied:
        return None
    refused = [
        {
            "topic_id": t.topic_id,
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "error_code": TOPIC_DENIED,
                    "acknowledge_error_code": TOPIC_DENIED,
                    "current_leader": {"leader_id": -1, "leader_epoch": -1},
                    "records": b"",
                    "acquired_records": [],
                }
                for p in t.partitions
            ],
        }
        for t in denied
    ]
    return Partial(dataclasses.replace(req, topics=tuple(ok)), extend("responses", refused))


@rule(90)
def describe_share_group_offsets(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    """Describe on each group (GROUP_AUTHORIZATION_FAILED for the others); Describe on each topic:
    a refused topic asked for by name is answered TOPIC_AUTHORIZATION_FAILED, one found by asking
    for all of a group's topics is left out of the answer."""
    groups = list(req.groups or ())
    denied = {g.group_id for g in groups if not _group(session, g.group_id, Op.DESCRIBE)}
    refused: dict[str, list[dict[str, Any]]] = {}
    all_topics: set[str] = set()
    kept = []
    for g in groups:
        if g.group_id in denied:
            continue
        if g.topics is None:
            all_topics.add(g.group_id)
            kept.append(g)
            continue
        ok, no = split(g.topics, lambda t: _topic(session, t.topic_name, Op.DESCRIBE))
        if no:
            refused[g.group_id] = [
                {
                    "topic_name": t.topic_name,
                    "topic_id": ZERO_UUID,
                    "partitions": [
                        {
                            "partition_index": p,
                            "start_offset": -1,
                            "leader_epoch": 0,
                            "lag": -1,
                            "error_code": TOPIC_DENIED,
                            "error_message": TOPIC_DENIED_MESSAGE,
                        }
                        for p in t.partitions
                    ],
                }
                for t in no
            ]
        kept.append(dataclasses.replace(g, topics=tuple(ok)))
    if not denied and not refused and not all_topics:
        return None

    def merge(resp: Any) -> Any:
        d = plain(resp)
        answered = {g["group_id"]: g for g in d.get("groups") or ()}
        out: list[Any] = []
        for g in groups:
            if g.group_id in denied:
                out.append({"group_id": g.group_id, "topics": [], "error_code": GROUP_DENIED})
                continue
            a = answered.get(g.group_id)
            if a is None:
                continue
            if a.get("error_code") in (0, None):
                topics = list(a.get("topics") or ())
                if g.group_id in all_topics:
                    topics = [t for t in topics if _topic(session, t["topic_name"], Op.DESCRIBE)]
                a["topics"] = topics + refused.get(g.group_id, [])
            out.append(a)
        d["groups"] = out
        return d

    if not kept:
        return Reply(merge({"throttle_time": 0, "groups": []}))
    return Partial(dataclasses.replace(req, groups=tuple(kept)), merge)


@rule(91)
def alter_share_group_offsets(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    """Read on the group (the whole request); Read on each topic (TOPIC_AUTHORIZATION_FAILED for
    its partitions, answered first, as Kafka's broker does)."""
    if not _group(session, req.group_id, Op.READ):
        return Reply(
            {
                "throttle_time": 0,
                "error_code": GROUP_DENIED,
                "error_message": "Group authorization failed.",
                "responses": [],
            }
        )
    ok, no = split(req.topics, lambda t: _topic(session, t.topic_name, Op.READ))
    if not no:
        return None
    registry = ctx.broker.registry
    refused = [
        {
            "topic_name": t.topic_name,
            "topic_id": known.topic_id if (known := registry.get(t.topic_name)) is not None else ZERO_UUID,
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "error_code": TOPIC_DENIED,
                    "error_message": TOPIC_DENIED_MESSAGE,
                }
                for p in t.partitions
            ],
        }
        for t in no
    ]

    def merge(resp: Any) -> Any:
        d = plain(resp)
        if d.get("error_code") in (0, None):
            d["responses"] = refused + list(d.get("responses") or ())
        return d

    return Partial(dataclasses.replace(req, topics=tuple(ok)), merge)


@rule(92)
def delete_share_group_offsets(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    """Delete on the group (the whole request); Read on each topic (TOPIC_AUTHORIZATION_FAILED,
    answered first)."""
    if not _group(session, req.group_id, Op.DELETE):
        return Reply(
            {
                "throttle_time": 0,
                "error_code": GROUP_DENIED,
                "error_message": "Group authorization failed.",
                "responses": [],
            }
        )
    ok, no = split(req.topics, lambda t: _topic(session, t.topic_name, Op.READ))
    if not no:
        return None
    refused = [
        {
            "topic_name": t.topic_name,
            "topic_id": ZERO_UUID,
            "error_code": TOPIC_DENIED,
            "error_message": TOPIC_DENIED_MESSAGE,
        }
        for t in no
    ]

    def merge(resp: Any) -> Any:
        d = plain(resp)
        if d.get("error_code") in (0, None):
            d["responses"] = refused + list(d.get("responses") or ())
        return d

    return Partial(dataclasses.replace(req, topics=tuple(ok)), merge)


@rule(83, 84, 85, 86, 87)  # Initialize / Read / Write / Delete / ReadSummary ShareGroupState
def share_group_state(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    """The persister APIs are between brokers: ClusterAction on the cluster, else each partition
    CLUSTER_AUTHORIZATION_FAILED (its other fields at their defaults)."""
    if cluster(session, Op.CLUSTER_ACTION):
        return None
    extra: dict[str, Any] = {}
    if req.__api_key__ == 84:
        extra = {"state_epoch": -1, "start_offset": -1, "state_batches": []}
    elif req.__api_key__ == 87:
        extra = {"state_epoch": -1, "leader_epoch": -1, "start_offset": -1}
    return Reply(
        {
            "results": [
                {
                    "topic_id": t.topic_id,
                    "partitions": [
                        {
                            "partition": p.partition,
                            "error_code": CLUSTER_DENIED,
                            "error_message": "Cluster authorization failed.",
                            **extra,
                        }
                        for p in t.partitions
                    ],
                }
                for t in req.topics
            ]
        }
    )
