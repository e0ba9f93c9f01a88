"""Authorization rules for groups, transactions, configs, ACLs, credentials and the cluster.

Kafka's requirements: group membership and offsets need Read on the group (Describe to look);
transactional requests need Write on the TransactionalId, and sending offsets to a transaction
Read on the group; an idempotent producer needs IdempotentWrite on the cluster or Write on some
topic (KIP-679); WriteTxnMarkers needs ClusterAction; ACL and credential APIs need Describe /
Alter on the cluster; configs need DescribeConfigs / AlterConfigs on the topic or the cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from kio.schema.errors import ErrorCode as E

from ...core.acls import Operation as Op
from ...core.acls import ResourceType as R
from .rule_kit import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    GROUP_OPS,
    TOPIC_DENIED,
    TXN_DENIED,
    Partial,
    Reply,
    Rule,
    Verdict,
    authorized_operations,
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
    from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
    from kio.schema.alter_replica_log_dirs.v2.request import AlterReplicaLogDirsRequest
    from kio.schema.alter_user_scram_credentials.v0.request import (
        AlterUserScramCredentialsRequest,
        ScramCredentialDeletion,
        ScramCredentialUpsertion,
    )
    from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
    from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
    from kio.schema.create_acls.v3.request import CreateAclsRequest
    from kio.schema.delete_acls.v3.request import DeleteAclsRequest
    from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
    from kio.schema.describe_acls.v3.request import DescribeAclsRequest
    from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
    from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest
    from kio.schema.describe_topic_partitions.v0.request import DescribeTopicPartitionsRequest
    from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
    from kio.schema.describe_user_scram_credentials.v0.request import DescribeUserScramCredentialsRequest
    from kio.schema.end_txn.v4.request import EndTxnRequest
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
    from kio.schema.list_groups.v5.request import ListGroupsRequest
    from kio.schema.list_transactions.v1.request import ListTransactionsRequest
    from kio.schema.offset_commit.v8.request import OffsetCommitRequest
    from kio.schema.offset_delete.v0.request import OffsetDeleteRequest
    from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequest
    from kio.schema.write_txn_markers.v1.request import WriteTxnMarkersRequest

    from ..connection import RequestContext
    from .authorizer import Authorizer
    from .session import Session

OP_NOT_ATTEMPTED = E.operation_not_attempted.value

# OffsetCommit or TxnOffsetCommit: their topics have the same shape
_OffsetCommitT = TypeVar("_OffsetCommitT", "OffsetCommitRequest", "TxnOffsetCommitRequest")


def _group(session: Session, group_id: str, op: int) -> bool:
    return session.allowed(R.GROUP, group_id, op)


def _txn(session: Session, txn_id: str, op: int = Op.WRITE) -> bool:
    return session.allowed(R.TRANSACTIONAL_ID, txn_id, op)


def _offsets_refused(ctx: RequestContext, topics: Iterable[Any], code: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in topics:
        out.append(
            {
                "name": topic_name(ctx, t),
                "topic_id": getattr(t, "topic_id", None),
                "partitions": [{"partition_index": p.partition_index, "error_code": code} for p in t.partitions],
            }
        )
    return out


# ---- groups -----------------------------------------------------------------------------------
def _topics_read_checked(session: Session, ctx: RequestContext, req: _OffsetCommitT) -> Verdict:
    """Read on each named topic: refused topics answered TOPIC_AUTHORIZATION_FAILED, the rest served."""
    ok, denied = split(req.topics, topic_allowed(session, ctx, Op.READ))
    if not denied:
        return None
    refused = _offsets_refused(ctx, denied, TOPIC_DENIED)
    if not ok:
        return Reply({"throttle_time": 0, "topics": refused})
    return Partial(dataclasses.replace(req, topics=tuple(ok)), extend("topics", refused))


@rule(8)
def offset_commit(session: Session, ctx: RequestContext, req: OffsetCommitRequest) -> Verdict:
    if not _group(session, req.group_id, Op.READ):
        return Reply({"throttle_time": 0, "topics": _offsets_refused(ctx, req.topics, GROUP_DENIED)})
    return _topics_read_checked(session, ctx, req)


@rule(9)  # req: group_id and topics in v0-7, groups in v8
def offset_fetch(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    """One group (v0-7) or several (v8+): Describe on each group, topics without Describe refused
    when named and left out when all are asked for."""

    def visible(resp: Any) -> dict[str, Any]:
        d = plain(resp)
        for g in d.get("groups") or [d]:
            if g.get("topics"):
                g["topics"] = [
                    t for t in g["topics"] if not t.get("name") or session.allowed(R.TOPIC, t["name"], Op.DESCRIBE)
                ]
        return d

    groups = getattr(req, "groups", None)
    if ctx.api_version >= 8:
        denied = [g for g in groups or () if not _group(session, g.group_id, Op.DESCRIBE)]
        if denied:
            ok = [g for g in cast("tuple[Any, ...]", groups) if g not in denied]  # not None: `denied` came from it
            refused = [{"group_id": g.group_id, "error_code": GROUP_DENIED, "topics": []} for g in denied]
            if not ok:
                return Reply({"throttle_time": 0, "groups": refused})
            merge_refused = extend("groups", refused)
            return Partial(dataclasses.replace(req, groups=tuple(ok)), lambda r: merge_refused(visible(r)))
        return Partial(req, visible)
    if not _group(session, req.group_id, Op.DESCRIBE):
        return Reply(
            {
                "throttle_time": 0,
                "error_code": GROUP_DENIED,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {"partition_index": i, "committed_offset": -1, "metadata": "", "error_code": GROUP_DENIED}
                            for i in t.partition_indexes
                        ],
                    }
                    for t in req.topics or ()
                ],
            }
        )
    return Partial(req, visible)


@rule(10)  # req: key in v0-3, coordinator_keys in v4+
def find_coordinator(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    key_type = getattr(req, "key_type", 0)
    if key_type == 2:  # a share coordinator key (v6+; before, the handler refuses it): brokers ask
        if ctx.api_version < 6 or cluster(session, Op.CLUSTER_ACTION):
            return None
        # Kafka's check throws: the whole request fails, every key refused
        refusal = {"node_id": -1, "host": "", "port": -1, "error_code": CLUSTER_DENIED}
        return Reply(
            {
                "throttle_time": 0,
                "coordinators": [
                    {"key": k, **refusal, "error_message": "Cluster authorization failed."}
                    for k in req.coordinator_keys
                ],
            }
        )
    resource, code = (R.TRANSACTIONAL_ID, TXN_DENIED) if key_type == 1 else (R.GROUP, GROUP_DENIED)
    if ctx.api_version < 4:
        if session.allowed(resource, req.key, Op.DESCRIBE):
            return None
        return Reply(
            {
                "throttle_time": 0,
                "error_code": code,
                "error_message": "Authorization failed.",
                "node_id": -1,
                "host": "",
                "port": -1,
            }
        )
    ok, denied = split(req.coordinator_keys, lambda k: session.allowed(resource, k, Op.DESCRIBE))
    if not denied:
        return None
    refused = [
        {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": "Authorization failed."}
        for k in denied
    ]
    if not ok:
        return Reply({"throttle_time": 0, "coordinators": refused})
    return Partial(dataclasses.replace(req, coordinator_keys=tuple(ok)), extend("coordinators", refused))


@rule(11, 12, 13, 14)  # JoinGroup, SyncGroup, Heartbeat, LeaveGroup
def membership(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    if _group(session, req.group_id, Op.READ):
        return None
    refusal: dict[str, Any] = {"throttle_time": 0, "error_code": GROUP_DENIED}
    if hasattr(req, "protocols"):  # JoinGroup
        refusal.update(generation_id=-1, member_id=getattr(req, "member_id", ""), leader="", members=[])
    elif hasattr(req, "assignments"):  # SyncGroup
        refusal["assignment"] = b""
    elif hasattr(req, "members") and not hasattr(req, "member_id"):  # LeaveGroup v3+
        refusal["members"] = []
    return Reply(refusal)


@rule(15)
def describe_groups(session: Session, ctx: RequestContext, req: DescribeGroupsRequest) -> Verdict:
    with_ops = bool(getattr(req, "include_authorized_operations", False))

    def with_operations(resp: Any) -> dict[str, Any]:
        d = plain(resp)
        for g in d.get("groups") or ():
            if g.get("error_code") in (0, E.none):
                g["authorized_operations"] = authorized_operations(session, R.GROUP, g["group_id"], GROUP_OPS)
        return d

    ok, denied = split(req.groups, lambda g: _group(session, g, Op.DESCRIBE))
    if not denied:
        return Partial(req, with_operations) if with_ops else None
    refused = [
        {
            "error_code": GROUP_DENIED,
            "group_id": g,
            "group_state": "",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
        }
        for g in denied
    ]
    if not ok:
        return Reply({"throttle_time": 0, "groups": refused})
    add_refused = extend("groups", refused)
    return Partial(
        dataclasses.replace(req, groups=tuple(ok)),
        (lambda r: add_refused(with_operations(r))) if with_ops else add_refused,
    )


@rule(16)
def list_groups(session: Session, ctx: RequestContext, req: ListGroupsRequest) -> Verdict:
    if cluster(session, Op.DESCRIBE):
        return None

    def visible(resp: Any) -> dict[str, Any]:
        d = plain(resp)
        d["groups"] = [g for g in d.get("groups") or () if _group(session, g["group_id"], Op.DESCRIBE)]
        return d

    return Partial(req, visible)


@rule(42)
def delete_groups(session: Session, ctx: RequestContext, req: DeleteGroupsRequest) -> Verdict:
    ok, denied = split(req.groups_names, lambda g: _group(session, g, Op.DELETE))
    if not denied:
        return None
    refused = [{"group_id": g, "error_code": GROUP_DENIED} for g in denied]
    if not ok:
        return Reply({"throttle_time": 0, "results": refused})
    return Partial(dataclasses.replace(req, groups_names=tuple(ok)), extend("results", refused))


@rule(47)
def offset_delete(session: Session, ctx: RequestContext, req: OffsetDeleteRequest) -> Verdict:
    if not _group(session, req.group_id, Op.DELETE):
        return Reply({"error_code": GROUP_DENIED, "throttle_time": 0, "topics": []})
    ok, denied = split(req.topics, topic_allowed(session, ctx, Op.READ))
    if not denied:
        return None
    refused = _offsets_refused(ctx, denied, TOPIC_DENIED)
    if not ok:
        return Reply({"error_code": 0, "throttle_time": 0, "topics": refused})
    return Partial(dataclasses.replace(req, topics=tuple(ok)), extend("topics", refused))


# ---- transactions -----------------------------------------------------------------------------
@rule(22)
def init_producer_id(session: Session, ctx: RequestContext, req: InitProducerIdRequest) -> Verdict:
    refused = {"throttle_time": 0, "producer_id": -1, "producer_epoch": -1}
    if req.transactional_id is not None:
        if _txn(session, req.transactional_id):
            return None
        return Reply({**refused, "error_code": TXN_DENIED})
    # rules run only where an authorizer is configured
    if cluster(session, Op.IDEMPOTENT_WRITE) or cast("Authorizer", session.security.authorizer).authorize_any(
        session.principal, session.host, R.TOPIC, Op.WRITE
    ):
        return None
    return Reply({**refused, "error_code": CLUSTER_DENIED})


@rule(24)  # req: v0-3 per topic, v4+ batched
def add_partitions_to_txn(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    if ctx.api_version >= 4:  # the broker-to-broker batched form
        return (
            None
            if cluster(session, Op.CLUSTER_ACTION)
            else Reply({"throttle_time": 0, "error_code": CLUSTER_DENIED, "results_by_transaction": []})
        )
    topics = req.v3_and_below_topics if hasattr(req, "v3_and_below_topics") else req.topics

    def answer(code_of: Callable[[Any], int]) -> Reply:
        return Reply(
            {
                "throttle_time": 0,
                "results_by_topic_v3_and_below": [
                    {
                        "name": t.name,
                        "results_by_partition": [
                            {"partition_index": p, "partition_error_code": code_of(t)} for p in t.partitions
                        ],
                    }
                    for t in topics
                ],
            }
        )

    # every v0-3 request names its transaction
    txn_id = cast("str", getattr(req, "v3_and_below_transactional_id", None) or getattr(req, "transactional_id", None))
    if not _txn(session, txn_id):
        return answer(lambda t: TXN_DENIED)
    denied = {t.name for t in topics if not session.allowed(R.TOPIC, t.name, Op.WRITE)}
    if not denied:
        return None
    return answer(lambda t: TOPIC_DENIED if t.name in denied else OP_NOT_ATTEMPTED)


@rule(25)
def add_offsets_to_txn(session: Session, ctx: RequestContext, req: AddOffsetsToTxnRequest) -> Verdict:
    if not _txn(session, req.transactional_id):
        return Reply({"throttle_time": 0, "error_code": TXN_DENIED})
    if not _group(session, req.group_id, Op.READ):
        return Reply({"throttle_time": 0, "error_code": GROUP_DENIED})
    return None


@rule(26)
def end_txn(session: Session, ctx: RequestContext, req: EndTxnRequest) -> Verdict:
    if _txn(session, req.transactional_id):
        return None
    return Reply({"throttle_time": 0, "error_code": TXN_DENIED, "producer_id": -1, "producer_epoch": -1})


@rule(27)
def write_txn_markers(session: Session, ctx: RequestContext, req: WriteTxnMarkersRequest) -> Verdict:
    if cluster(session, Op.CLUSTER_ACTION):
        return None
    return Reply(
        {
            "markers": [
                {
                    "producer_id": m.producer_id,
                    "topics": [
                        {
                            "name": t.name,
                            "partitions": [
                                {"partition_index": i, "error_code": CLUSTER_DENIED} for i in t.partition_indexes
                            ],
                        }
                        for t in m.topics
                    ],
                }
                for m in req.markers
            ]
        }
    )


@rule(28)
def txn_offset_commit(session: Session, ctx: RequestContext, req: TxnOffsetCommitRequest) -> Verdict:
    code: int | None = None
    if not _txn(session, req.transactional_id):
        code = TXN_DENIED
    elif not _group(session, req.group_id, Op.READ):
        code = GROUP_DENIED
    if code is not None:
        return Reply({"throttle_time": 0, "topics": _offsets_refused(ctx, req.topics, code)})
    return _topics_read_checked(session, ctx, req)


@rule(65)
def describe_transactions(session: Session, ctx: RequestContext, req: DescribeTransactionsRequest) -> Verdict:
    ok, denied = split(req.transactional_ids, lambda t: _txn(session, t, Op.DESCRIBE))
    if not denied:
        return None
    refused = [
        {
            "error_code": TXN_DENIED,
            "transactional_id": t,
            "transaction_state": "",
            "transaction_timeout": 0,
            "transaction_start_time": -1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
        for t in denied
    ]
    if not ok:
        return Reply({"throttle_time": 0, "transaction_states": refused})
    return Partial(dataclasses.replace(req, transactional_ids=tuple(ok)), extend("transaction_states", refused))


@rule(66)
def list_transactions(session: Session, ctx: RequestContext, req: ListTransactionsRequest) -> Verdict:
    def visible(resp: Any) -> dict[str, Any]:
        d = plain(resp)
        d["transaction_states"] = [
            t for t in d.get("transaction_states") or () if _txn(session, t["transactional_id"], Op.DESCRIBE)
        ]
        return d

    return Partial(req, visible)


# ---- configs, ACLs, credentials, cluster -------------------------------------------------------
_TOPIC_RESOURCE, _BROKER_RESOURCES = 2, (4, 8)


_GROUP_RESOURCE = 32


def _config_rule(op: int, field: str) -> Rule:
    # DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
    def check(session: Session, ctx: RequestContext, req: Any) -> Verdict:
        def allowed(r: Any) -> bool:
            if r.resource_type == _TOPIC_RESOURCE:
                return session.allowed(R.TOPIC, r.resource_name, op)
            if r.resource_type == _GROUP_RESOURCE:  # a group's configs: the group's own ACLs
                return session.allowed(R.GROUP, r.resource_name, op)
            return cluster(session, op)

        def denial(r: Any) -> int:
            return {_TOPIC_RESOURCE: TOPIC_DENIED, _GROUP_RESOURCE: GROUP_DENIED}.get(r.resource_type, CLUSTER_DENIED)

        ok, denied = split(req.resources, allowed)
        if not denied:
            return None
        refused = [
            {
                "error_code": denial(r),
                "error_message": "Authorization failed.",
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
            }
            for r in denied
        ]
        if field == "results":  # DescribeConfigs' results carry (no) configs; the alter answers have none
            for x in refused:
                x["configs"] = []
        if not ok:
            return Reply({"throttle_time": 0, field: refused})
        return Partial(dataclasses.replace(req, resources=tuple(ok)), extend(field, refused))

    return check


rule(32)(_config_rule(Op.DESCRIBE_CONFIGS, "results"))
rule(33, 44)(_config_rule(Op.ALTER_CONFIGS, "responses"))


@rule(29)
def describe_acls(session: Session, ctx: RequestContext, req: DescribeAclsRequest) -> Verdict:
    if cluster(session, Op.DESCRIBE):
        return None
    return Reply(
        {"throttle_time": 0, "error_code": CLUSTER_DENIED, "error_message": "Authorization failed.", "resources": []}
    )


@rule(30)
def create_acls(session: Session, ctx: RequestContext, req: CreateAclsRequest) -> Verdict:
    if cluster(session, Op.ALTER):
        return None
    return Reply(
        {
            "throttle_time": 0,
            "results": [
                {"error_code": CLUSTER_DENIED, "error_message": "Authorization failed."} for _ in req.creations
            ],
        }
    )


@rule(31)
def delete_acls(session: Session, ctx: RequestContext, req: DeleteAclsRequest) -> Verdict:
    if cluster(session, Op.ALTER):
        return None
    return Reply(
        {
            "throttle_time": 0,
            "filter_results": [
                {"error_code": CLUSTER_DENIED, "error_message": "Authorization failed.", "matching_acls": []}
                for _ in req.filters
            ],
        }
    )


@rule(50)
def describe_user_scram_credentials(
    session: Session, ctx: RequestContext, req: DescribeUserScramCredentialsRequest
) -> Verdict:
    if cluster(session, Op.DESCRIBE):
        return None
    return Reply(
        {"throttle_time": 0, "error_code": CLUSTER_DENIED, "error_message": "Authorization failed.", "results": []}
    )


@rule(51)
def alter_user_scram_credentials(
    session: Session, ctx: RequestContext, req: AlterUserScramCredentialsRequest
) -> Verdict:
    if cluster(session, Op.ALTER):
        return None
    changes: tuple[ScramCredentialDeletion | ScramCredentialUpsertion, ...] = (*req.deletions, *req.upsertions)
    users = dict.fromkeys(op.name for op in changes)
    return Reply(
        {
            "throttle_time": 0,
            "results": [
                {"user": u, "error_code": CLUSTER_DENIED, "error_message": "Authorization failed."} for u in users
            ],
        }
    )


@rule(60)
def describe_cluster(session: Session, ctx: RequestContext, req: DescribeClusterRequest) -> Verdict:
    """Every principal is answered, as Kafka does; the cluster's authorized operations (when asked
    for) are 0 without Describe on the cluster."""
    if not getattr(req, "include_cluster_authorized_operations", False):
        return None

    def with_operations(resp: Any) -> dict[str, Any]:
        d = plain(resp)
        if d.get("error_code") in (0, E.none):  # a refused endpoint type answers none, as Kafka
            d["cluster_authorized_operations"] = cluster_operations(session)
        return d

    return Partial(req, with_operations)


@rule(35)
def describe_log_dirs(session: Session, ctx: RequestContext, req: DescribeLogDirsRequest) -> Verdict:
    if cluster(session, Op.DESCRIBE):
        return None
    if ctx.api_version >= 3:
        return Reply({"throttle_time": 0, "error_code": CLUSTER_DENIED, "results": []})
    return Reply({"throttle_time": 0, "results": []})  # v1-2 carry no error code: nothing described


@rule(34)
def alter_replica_log_dirs(session: Session, ctx: RequestContext, req: AlterReplicaLogDirsRequest) -> Verdict:
    if cluster(session, Op.ALTER):
        return None
    refused: dict[str, list[dict[str, Any]]] = {}
    for d in req.dirs:
        for t in d.topics:
            refused.setdefault(t.name, []).extend(
                {"partition_index": p, "error_code": CLUSTER_DENIED} for p in t.partitions
            )
    return Reply({"throttle_time": 0, "results": [{"topic_name": n, "partitions": ps} for n, ps in refused.items()]})


@rule(75)
def describe_topic_partitions(session: Session, ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> Verdict:
    """The handler itself hides (listing) or refuses (named) topics the principal may not
    Describe, so that paging counts only what is answered."""
    return None


@rule(17, 18, 36)  # SaslHandshake, ApiVersions, SaslAuthenticate
def always(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    return None


# ---- APIs tidelog may route later: their rules are here so that no API is ever unguarded ----------
def _cluster_only(op: int, refusal: dict[str, Any]) -> Rule:
    def check(session: Session, ctx: RequestContext, req: Any) -> Verdict:
        return None if cluster(session, op) else Reply({"throttle_time": 0, **refusal})

    return check


rule(35)(_cluster_only(Op.DESCRIBE, {"error_code": CLUSTER_DENIED, "results": []}))  # DescribeLogDirs
rule(43)(_cluster_only(Op.ALTER, {"error_code": CLUSTER_DENIED, "replica_election_results": []}))  # ElectLeaders
rule(45)(
    _cluster_only(Op.ALTER, {"error_code": CLUSTER_DENIED, "error_message": "Authorization failed.", "responses": []})
)  # AlterPartitionReassignments
rule(46)(
    _cluster_only(Op.DESCRIBE, {"error_code": CLUSTER_DENIED, "error_message": "Authorization failed.", "topics": []})
)  # ListPartitionReassignments
rule(48)(
    _cluster_only(
        Op.DESCRIBE_CONFIGS, {"error_code": CLUSTER_DENIED, "error_message": "Authorization failed.", "entries": None}
    )
)  # DescribeClientQuotas


@rule(68)
def consumer_group_heartbeat(session: Session, ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> Verdict:
    """Read on the group; Describe on every topic named in the subscription (Kafka's KafkaApis).
    Topics a regex matches are filtered by the coordinator with the same Describe check."""
    code, message = None, "Authorization failed."
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
            "error_message": message,
            "member_id": None,
            "member_epoch": -1,
            "heartbeat_interval": 0,
            "assignment": None,
        }
    )


@rule(69)
def consumer_group_describe(session: Session, ctx: RequestContext, req: ConsumerGroupDescribeRequest) -> Verdict:
    """Describe on each group (GROUP_AUTHORIZATION_FAILED for the others); a group whose members
    use a topic the principal may not Describe is TOPIC_AUTHORIZATION_FAILED, as Kafka answers;
    authorized operations are the principal's own."""
    with_ops = bool(req.include_authorized_operations)

    def checked(resp: Any) -> dict[str, Any]:
        d = plain(resp)
        for g in d.get("groups") or ():
            if g.get("error_code") not in (0, E.none):
                continue
            topics = {
                tp["topic_name"]
                for m in g.get("members") or ()
                for a in (m.get("assignment"), m.get("target_assignment"))
                for tp in (a or {}).get("topic_partitions") or ()
            }
            if not all(session.allowed(R.TOPIC, t, Op.DESCRIBE) for t in topics):
                g.update(
                    error_code=TOPIC_DENIED,
                    error_message="The described group uses topics that the client is not authorized to describe.",
                    members=[],
                )
            elif with_ops:
                g["authorized_operations"] = authorized_operations(session, R.GROUP, g["group_id"], GROUP_OPS)
        return d

    ok, denied = split(req.group_ids, lambda g: _group(session, g, Op.DESCRIBE))
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
    add_refused = extend("groups", refused)
    return Partial(dataclasses.replace(req, group_ids=tuple(ok)), lambda r: add_refused(checked(r)))


@rule(71, 72)  # GetTelemetrySubscriptions, PushTelemetry: any authenticated client
def telemetry(session: Session, ctx: RequestContext, req: Any) -> Verdict:
    return None
