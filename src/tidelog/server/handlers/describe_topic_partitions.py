"""DescribeTopicPartitions (key 75, v0; Kafka 3.7+, KIP-966): topics and their partitions, paged.

Topics are answered in name order: the named ones, or every topic the principal may Describe
when none is named. At most min(ResponsePartitionLimit, `max.request.partition.size.limit`)
partitions are returned; when more remain, NextCursor names the topic and partition to ask for
next, and a request's Cursor resumes there (a cursor naming a topic outside the named ones is an
INVALID_REQUEST, as Kafka). A named topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION,
one the principal may not Describe TOPIC_AUTHORIZATION_FAILED; each topic carries its authorized
operations (all of them without an authorizer). Each partition's leader, leader epoch, replicas,
ISR and offline replicas are the cluster view's, as Metadata answers them (a single node leads
every partition at epoch 0); a partition without a live leader is LEADER_NOT_AVAILABLE. The
eligible-leader fields (ELR) are empty, as Kafka answers while ELR is not enabled.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...core.acls import Operation as Op
from ...core.acls import ResourceType as R
from ...core.topics import topic_name_error
from ...wire.apis import ApiKey
from ..router import control_route
from ..security.rules import TOPIC_OPS, authorized_operations

if TYPE_CHECKING:
    from kio.schema.describe_topic_partitions.v0.request import DescribeTopicPartitionsRequest

    from ...cluster.view import ClusterView
    from ...core.config import BrokerConfig
    from ...core.topics import TopicRegistry
    from ...wire.responses import (
        Cursor,
        DescribeTopicPartitionsResponse,
        DescribeTopicPartitionsResponsePartition,
        DescribeTopicPartitionsResponseTopic,
    )
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    registry: TopicRegistry
    config: BrokerConfig
    cluster: ClusterView


ZERO_UUID = uuid.UUID(int=0)
ALL_TOPIC_OPERATIONS = sum(1 << int(op) for op in TOPIC_OPS)


def handle(deps: Deps, ctx: RequestContext, request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    registry = deps.registry
    broker_limit = deps.config["max.request.partition.size.limit"]
    session = ctx.connection.security
    if session is not None and session.security.authorizer is None:
        session = None

    def may_describe(name: str) -> bool:
        return session is None or session.allowed(R.TOPIC, name, Op.DESCRIBE)

    def operations(name: str) -> int:
        return ALL_TOPIC_OPERATIONS if session is None else authorized_operations(session, R.TOPIC, name, TOPIC_OPS)

    def failed(name: str, code: int) -> DescribeTopicPartitionsResponseTopic:
        return {
            "error_code": code,
            "name": name,
            "topic_id": ZERO_UUID,
            "is_internal": False,
            "partitions": [],
            "topic_authorized_operations": -2147483648,
        }

    cursor = request.cursor
    if request.topics:
        names: list[str] = sorted({t.name for t in request.topics})
        if cursor is not None and cursor.topic_name not in names:
            return {
                "throttle_time": 0,
                "next_cursor": None,
                "topics": [failed(n, E.invalid_request.value) for n in names],
            }
    else:
        names = sorted(n for n in registry.topics if may_describe(n))
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    limit = max(0, min(request.response_partition_limit, broker_limit))
    topics: list[DescribeTopicPartitionsResponseTopic] = []
    next_cursor: Cursor | None = None
    for name in names:
        topic = registry.get(name)
        if topic is None or not may_describe(name):
            if request.topics:
                code = (
                    E.invalid_topic_exception.value
                    if topic is None and topic_name_error(name)
                    else E.unknown_topic_or_partition.value
                    if topic is None
                    else E.topic_authorization_failed.value
                )
                topics.append(failed(name, code))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        if start >= topic.partitions:
            continue
        if limit <= 0:
            next_cursor = {"topic_name": name, "partition_index": start}
            break
        end = min(topic.partitions, start + limit)
        limit -= end - start
        topics.append(
            {
                "error_code": 0,
                "name": name,
                "topic_id": topic.topic_id,
                "is_internal": topic.internal,
                "partitions": [_partition(deps.cluster, name, p) for p in range(start, end)],
                "topic_authorized_operations": operations(name),
            }
        )
        if end < topic.partitions:
            next_cursor = {"topic_name": name, "partition_index": end}
            break
    return {"throttle_time": 0, "topics": topics, "next_cursor": next_cursor}


def _partition(cluster: ClusterView, topic: str, p: int) -> DescribeTopicPartitionsResponsePartition:
    pv = cluster.partition(topic, p)
    return {
        "error_code": 0 if pv.leader >= 0 else E.leader_not_available.value,
        "partition_index": p,
        "leader_id": pv.leader,
        "leader_epoch": pv.leader_epoch,
        "replica_nodes": list(pv.replicas),
        "isr_nodes": list(pv.isr),
        "eligible_leader_replicas": [],
        "last_known_elr": [],
        "offline_replicas": list(pv.offline),
    }


ROUTE = control_route(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, handle)
