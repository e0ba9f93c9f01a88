"""Metadata (key 3, v0-13): live brokers, the controller, each partition's leader, epoch, replicas,
ISR and offline replicas (a single node leads every partition); auto-creates topics per config.

v13 adds a top-level error code (KIP-1102, for REBOOTSTRAP_REQUIRED): like Kafka's brokers, which
set it only in the error answer of a request that failed as a whole, tidelog answers 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from kio.schema.errors import ErrorCode as E

from ...core.topics import topic_name_error
from ...wire.apis import ApiKey
from ..router import control_route
from ..security.rules import CLUSTER_OPS, TOPIC_OPS

if TYPE_CHECKING:
    from kio.schema.metadata.v12.request import MetadataRequest

    from ...cluster.view import ClusterView
    from ...core.admin import TopicAdmin
    from ...core.topics import Topic, TopicRegistry
    from ...wire.responses import (
        MetadataResponse,
        MetadataResponseBroker,
        MetadataResponsePartition,
        MetadataResponseTopic,
    )
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    cluster: ClusterView
    registry: TopicRegistry
    admin: TopicAdmin


ALL_CLUSTER_OPERATIONS = sum(1 << int(op) for op in CLUSTER_OPS)
ALL_TOPIC_OPERATIONS = sum(1 << int(op) for op in TOPIC_OPS)


def broker_entries(cluster: ClusterView, listener_name: str) -> list[MetadataResponseBroker]:
    """The live brokers as a client of `listener_name` reaches them (one, on a single node)."""
    return cluster.brokers(listener_name)


def topic_entry(deps: Deps, topic: Topic) -> MetadataResponseTopic:
    view = deps.cluster
    parts: list[MetadataResponsePartition] = []
    for p in range(topic.partitions):
        pv = view.partition(topic.name, p)
        parts.append(
            {
                # a partition without a live leader: LEADER_NOT_AVAILABLE, as Kafka
                "error_code": 0 if pv.leader >= 0 else E.leader_not_available.value,
                "partition_index": p,
                "leader_id": pv.leader,
                "leader_epoch": pv.leader_epoch,
                "replica_nodes": list(pv.replicas),
                "isr_nodes": list(pv.isr),
                "offline_replicas": list(pv.offline),
            }
        )
    return {
        "error_code": 0,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.internal,
        "partitions": parts,
    }


def handle(deps: Deps, ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    registry = deps.registry
    version = ctx.api_version
    requested = request.topics
    allow_auto = getattr(request, "allow_auto_topic_creation", True)
    topics: list[MetadataResponseTopic] = []
    refused = False
    if requested is None or (version == 0 and not requested):
        topics = [topic_entry(deps, t) for t in sorted(registry.topics.values(), key=lambda t: t.name)]
    elif refused := version < 12 and any(t.name is None or getattr(t, "topic_id", None) is not None for t in requested):
        # v10-11 requests carry topic ids and nullable names, but their responses cannot name a
        # topic by id (names are not nullable before v12): Kafka answers INVALID_REQUEST for
        # every topic, a null name as "".
        topics = [
            {"error_code": E.invalid_request.value, "name": t.name or "", "topic_id": t.topic_id, "partitions": []}
            for t in requested
        ]
    else:
        for item in requested:
            name = getattr(item, "name", None)
            topic_id = getattr(item, "topic_id", None)
            topic = None
            if topic_id is not None:
                # by id, whatever the name says: Kafka's Java client sends "" with an id (KafkaApis
                # looks a request's topics up by id as soon as one is given)
                topic = registry.by_id.get(topic_id)
                if topic is None:
                    topics.append(
                        {"error_code": E.unknown_topic_id.value, "name": None, "topic_id": topic_id, "partitions": []}
                    )
                    continue
            else:
                # a v12 topic with neither name nor id looks up None: no topic, INVALID_TOPIC_EXCEPTION below
                topic = registry.get(name)  # type: ignore[arg-type]
                if topic is None:
                    if topic_name_error(name or ""):
                        topics.append({"error_code": E.invalid_topic_exception.value, "name": name, "partitions": []})
                        continue
                    code: int = E.unknown_topic_or_partition.value
                    if allow_auto:
                        # a legal topic name (topic_name_error above): a non-empty str
                        topic, code = deps.admin.auto_create(cast(str, name))
                    if topic is None:
                        topics.append({"error_code": code, "name": name, "partitions": []})
                        continue
            topics.append(topic_entry(deps, topic))
    if getattr(request, "include_topic_authorized_operations", False) and not refused:
        # v8+: every topic operation on each topic answered by name (not an unknown topic id), as
        # Kafka answers without an authorizer (the authorizer's rule replaces them with the
        # principal's own)
        for entry in topics:
            if entry.get("name") is not None:
                entry["topic_authorized_operations"] = ALL_TOPIC_OPERATIONS
    response: MetadataResponse = {
        "throttle_time": 0,
        "brokers": broker_entries(deps.cluster, ctx.connection.listener_name),
        "cluster_id": registry.cluster_id,
        "controller_id": deps.cluster.controller_id(),
        "topics": topics,
        "error_code": 0,  # v13
    }
    if getattr(request, "include_cluster_authorized_operations", False):
        # v8-10; without an authorizer every operation is allowed (the authorizer's rule
        # replaces this with the principal's own)
        response["cluster_authorized_operations"] = ALL_CLUSTER_OPERATIONS
    return response


ROUTE = control_route(ApiKey.METADATA, 0, 13, handle)
