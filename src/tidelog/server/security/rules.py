"""What each API needs from the authorizer, and how a refusal is answered — in one table.

`RULES[api_key](session, ctx, request)` returns:
- None: every check passed, the handler runs unchanged;
- `Reply(response)`: the whole request is refused; this response goes out, the handler never runs;
- `Partial(request, merge)`: the handler runs on the authorized part (`request`), then
  `merge(response)` adds the refused items (their errors) to what it returned.

Handlers never see authorization. An API with no rule is served to super users only (a test
checks that every routed API has a rule). Data-path and topic APIs are here, groups,
transactions and cluster APIs in `rules_coord`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from inspect import isawaitable
from typing import TYPE_CHECKING, Any, cast

from kio.schema.errors import ErrorCode as E

from ...core.acls import Operation as Op
from ...core.acls import ResourceType as R
from ..router import NO_RESPONSE
from . import (
    rules_coord,  # registers the group, transaction and cluster rules
    rules_share,  # registers the share-group rules
    rules_streams,  # registers the streams groups' rules
)
from .rule_kit import (
    CLUSTER_DENIED,
    CLUSTER_OPS,
    GROUP_DENIED,
    GROUP_OPS,
    RULES,
    TOPIC_DENIED,
    TOPIC_OPS,
    TXN_DENIED,
    Partial,
    Reply,
    Verdict,
    authorized_operations,
    by_parts,
    cluster,
    cluster_operations,
    extend,
    plain,
    rule,
    split,
    topic_allowed,
    topic_name,
)

if TYPE_CHECKING:
    from kio.schema.create_partitions.v3.request import CreatePartitionsRequest
    from kio.schema.create_topics.v7.request import CreateTopicsRequest
    from kio.schema.delete_records.v2.request import DeleteRecordsRequest
    from kio.schema.describe_producers.v0.request import DescribeProducersRequest
    from kio.schema.metadata.v12.request import MetadataRequest
    from kio.schema.offset_for_leader_epoch.v4.request import OffsetForLeaderEpochRequest

    from ...wire.fetch import FetchRequest
    from ...wire.list_offsets import ListOffsetsRequest
    from ...wire.produce import ProduceRequest, ProduceRequestTopic, ProduceResponseTopic
    from ..connection import RequestContext
    from ..router import Route
    from .authorizer import Authorizer
    from .session import Session

NO_OPERATIONS = -2147483648  # INT32_MIN: an authorized-operations field not answered

__all__ = [
    "apply",
    "CLUSTER_DENIED",
    "CLUSTER_OPS",
    "GROUP_DENIED",
    "GROUP_OPS",
    "RULES",
    "TOPIC_DENIED",
    "TOPIC_OPS",
    "TXN_DENIED",
    "Partial",
    "Reply",
    "authorized_operations",
    "cluster_operations",
    "rules_coord",
    "rules_share",
    "rules_streams",
]


def apply(session: Session, authorizer: Authorizer, ctx: RequestContext, route: Route, request: Any) -> Any:
    fn = RULES.get(route.api_key)
    pipeline = cast("Callable[..., Any]", route.pipeline)  # sealed before traffic (`Session.handle` checks)
    if fn is None:
        if session.principal in authorizer.super_users:
            return pipeline(ctx, request)
        session.conn.close_with(f"api {route.api_key} has no authorization rule; super users only")
        return NO_RESPONSE
    verdict = fn(session, ctx, request)
    if verdict is None:
        return pipeline(ctx, request)
    if isinstance(verdict, Reply):
        return verdict.response
    result = pipeline(ctx, verdict.request)
    if isawaitable(result):
        return _merge_later(result, verdict.merge)
    return result if result is NO_RESPONSE else verdict.merge(result)


async def _merge_later(result: Awaitable[Any], merge: Callable[[Any], Any]) -> Any:
    value = await result
    return value if value is NO_RESPONSE else merge(value)


# ---- data path (tidelog's own codecs) ---------------------------------------------------------
@rule(0)
def produce(session: Session, ctx: RequestContext, req: ProduceRequest) -> Verdict:
    from ...wire import produce as c

    def refused(topics: Iterable[ProduceRequestTopic], code: int = TOPIC_DENIED) -> list[ProduceResponseTopic]:
        return [
            c.ProduceResponseTopic(
                t.name, [c.ProduceResponsePartition(p.index, code) for p in t.partition_data], topic_id=t.topic_id
            )
            for t in topics
        ]

    if req.transactional_id is not None and not session.allowed(R.TRANSACTIONAL_ID, req.transactional_id, Op.WRITE):
        return Reply(NO_RESPONSE if req.acks == 0 else c.ProduceResponse(refused(req.topic_data, TXN_DENIED)))
    # v13 names topics by id: resolved here (an unknown id is the handler's UNKNOWN_TOPIC_ID)
    ok, denied = split(req.topic_data, topic_allowed(session, ctx, Op.WRITE))
    if not denied:
        return None
    if not ok:
        return Reply(NO_RESPONSE if req.acks == 0 else c.ProduceResponse(refused(denied)))
    return Partial(dataclasses.replace(req, topic_data=ok), extend("responses", refused(denied)))


@rule(1)
def fetch(session: Session, ctx: RequestContext, req: FetchRequest) -> Verdict:
    from ...wire import fetch as c

    if req.replica_id >= 0 and not cluster(session, Op.CLUSTER_ACTION):
        return Reply(c.FetchResponse([], error_code=CLUSTER_DENIED))
    ok, denied = split(req.topics, topic_allowed(session, ctx, Op.READ))
    if not denied:
        return None
    refused = [
        c.FetchResponseTopic(
            t.topic, [c.FetchResponsePartition(p.partition, TOPIC_DENIED) for p in t.partitions], topic_id=t.topic_id
        )
        for t in denied
    ]
    if not ok:
        return Reply(c.FetchResponse(refused))
    return Partial(dataclasses.replace(req, topics=ok), extend("responses", refused))


@rule(2)
def list_offsets(session: Session, ctx: RequestContext, req: ListOffsetsRequest) -> Verdict:
    from ...wire import list_offsets as c

    ok, denied = split(req.topics, lambda t: session.allowed(R.TOPIC, t.name, Op.DESCRIBE))
    if not denied:
        return None
    refused = [
        c.ListOffsetsResponseTopic(
            t.name, [c.ListOffsetsResponsePartition(p.partition_index, TOPIC_DENIED) for p in t.partitions]
        )
        for t in denied
    ]
    if not ok:
        return Reply(c.ListOffsetsResponse(refused))
    return Partial(dataclasses.replace(req, topics=ok), extend("topics", refused))


@rule(3)
def metadata(session: Session, ctx: RequestContext, req: MetadataRequest) -> Verdict:
    """Unauthorized topics are hidden from a full listing and refused when named; naming a missing
    topic auto-creates it only with Create on the cluster or the topic."""
    registry = ctx.broker.registry

    with_ops = bool(getattr(req, "include_topic_authorized_operations", False))
    with_cluster_ops = bool(getattr(req, "include_cluster_authorized_operations", False))

    def visible(resp: Any) -> dict[str, Any]:
        d = plain(resp)
        if with_cluster_ops:  # v8-10
            d["cluster_authorized_operations"] = cluster_operations(session)
        d["topics"] = [
            t
            for t in d["topics"]
            if not t.get("name")
            or t.get("error_code") not in (0, E.none)
            or session.allowed(R.TOPIC, t["name"], Op.DESCRIBE)
        ]
        if with_ops:  # the principal's own operations, wherever the handler answered them too (all)
            for t in d["topics"]:
                if t.get("name") and (
                    t.get("error_code") in (0, E.none)
                    or t.get("topic_authorized_operations", NO_OPERATIONS) != NO_OPERATIONS
                ):
                    t["topic_authorized_operations"] = authorized_operations(session, R.TOPIC, t["name"], TOPIC_OPS)
        return d

    if req.topics is None or (ctx.api_version == 0 and not req.topics):
        return Partial(req, visible)
    auto = getattr(req, "allow_auto_topic_creation", True)
    create_all = auto and cluster(session, Op.CREATE)

    def allowed(t: Any) -> bool:
        name = topic_name(ctx, t)
        if name is None:
            return True
        if not session.allowed(R.TOPIC, name, Op.DESCRIBE):
            return False
        return registry.get(name) is not None or not auto or create_all or session.allowed(R.TOPIC, name, Op.CREATE)

    ok, denied = split(req.topics, allowed)
    if not denied:
        return Partial(req, visible) if with_ops or with_cluster_ops else None
    refused: list[dict[str, Any]] = [
        {
            "error_code": TOPIC_DENIED,
            "name": topic_name(ctx, t),
            "topic_id": getattr(t, "topic_id", None),
            "partitions": [],
        }
        for t in denied
    ]
    add_refused = extend("topics", refused)
    if not ok:
        # nothing left to ask for; an empty list would mean "every topic" in v0: drop whatever the
        # handler lists, keep only the refusals (as Kafka)
        def only_refused(r: Any) -> Any:
            d = visible(r) if with_ops or with_cluster_ops else plain(r)
            d["topics"] = []
            return add_refused(d)

        return Partial(dataclasses.replace(req, topics=tuple(ok)), only_refused)
    return Partial(
        dataclasses.replace(req, topics=tuple(ok)), (lambda r: add_refused(visible(r))) if with_ops else add_refused
    )


# ---- topic administration ---------------------------------------------------------------------
@rule(19)
def create_topics(session: Session, ctx: RequestContext, req: CreateTopicsRequest) -> Verdict:
    if cluster(session, Op.CREATE):
        return None
    ok, denied = split(req.topics, lambda t: session.allowed(R.TOPIC, t.name, Op.CREATE))
    if not denied:
        return None
    refused = [
        {
            "name": t.name,
            "error_code": TOPIC_DENIED,
            "error_message": "Authorization failed.",
            "num_partitions": -1,
            "replication_factor": -1,
        }
        for t in denied
    ]
    if ctx.api_version >= 5:  # as Kafka: an empty (not null) config list
        for x in refused:
            x["configs"] = []
    if not ok:
        return Reply({"throttle_time": 0, "topics": refused})
    return Partial(dataclasses.replace(req, topics=tuple(ok)), extend("topics", refused))


@rule(20)  # req: topic_names in v0-5, topics in v6+
def delete_topics(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    field = "topics" if getattr(req, "topics", None) is not None and ctx.api_version >= 6 else "topic_names"
    items = getattr(req, field)
    name_of = (lambda t: topic_name(ctx, t)) if field == "topics" else (lambda n: n)
    ok, denied = split(
        items, lambda t: name_of(t) is None or session.allowed(R.TOPIC, cast("str", name_of(t)), Op.DELETE)
    )
    if not denied:
        return None
    refused = [
        {
            "name": name_of(t),
            "topic_id": getattr(t, "topic_id", None),
            "error_code": TOPIC_DENIED,
            "error_message": "Authorization failed.",
        }
        for t in denied
    ]
    if not ok:
        return Reply({"throttle_time": 0, "responses": refused})
    return Partial(dataclasses.replace(req, **{field: tuple(ok)}), extend("responses", refused))


def _partitions_refused(
    topics: Iterable[Any], code: int = TOPIC_DENIED, index: str = "partition_index", extra: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": getattr(p, index, p), "error_code": code, **(extra or {})} for p in t.partitions
            ],
        }
        for t in topics
    ]


@rule(21)
def delete_records(session: Session, ctx: RequestContext, req: DeleteRecordsRequest) -> Verdict:
    return by_parts(
        session,
        ctx,
        req,
        "topics",
        Op.DELETE,
        lambda r: {"throttle_time": 0, "topics": r},
        "topics",
        lambda ts: _partitions_refused(ts, extra={"low_watermark": -1}),
    )


@rule(23)
def offset_for_leader_epoch(session: Session, ctx: RequestContext, req: OffsetForLeaderEpochRequest) -> Verdict:
    if getattr(req, "replica_id", -1) >= 0 and not cluster(session, Op.CLUSTER_ACTION):
        return Reply(
            {
                "throttle_time": 0,
                "topics": [
                    {
                        "topic": t.topic,
                        "partitions": [
                            {
                                "partition": p.partition,
                                "error_code": CLUSTER_DENIED,
                                "leader_epoch": -1,
                                "end_offset": -1,
                            }
                            for p in t.partitions
                        ],
                    }
                    for t in req.topics
                ],
            }
        )
    return by_parts(
        session,
        ctx,
        req,
        "topics",
        Op.DESCRIBE,
        lambda r: {"throttle_time": 0, "topics": r},
        "topics",
        lambda ts: [
            {
                "topic": t.topic,
                "partitions": [
                    {"partition": p.partition, "error_code": TOPIC_DENIED, "leader_epoch": -1, "end_offset": -1}
                    for p in t.partitions
                ],
            }
            for t in ts
        ],
    )


@rule(37)
def create_partitions(session: Session, ctx: RequestContext, req: CreatePartitionsRequest) -> Verdict:
    return by_parts(
        session,
        ctx,
        req,
        "topics",
        Op.ALTER,
        lambda r: {"throttle_time": 0, "results": r},
        "results",
        lambda ts: [{"name": t.name, "error_code": TOPIC_DENIED, "error_message": "Authorization failed."} for t in ts],
    )


@rule(61)
def describe_producers(session: Session, ctx: RequestContext, req: DescribeProducersRequest) -> Verdict:
    return by_parts(
        session,
        ctx,
        req,
        "topics",
        Op.READ,
        lambda r: {"throttle_time": 0, "topics": r},
        "topics",
        lambda ts: [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p, "error_code": TOPIC_DENIED, "active_producers": []}
                    for p in t.partition_indexes
                ],
            }
            for t in ts
        ],
    )
