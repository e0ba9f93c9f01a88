"""AlterPartitionReassignments (key 45, v0-1; KIP-455): move a partition's replicas to a target
list, or cancel a move in progress (replicas null). In a cluster the target replicas are added
and fetch; once all are in sync the controller makes them the partition's replicas (leader moved
if it is not among them) and the others delete their copy (cluster/node.py `reassign`,
controller.py). v1's allow_replication_factor_change=false refuses a target of another size
(INVALID_REPLICATION_FACTOR, KIP-860). A single node can only "move" a partition to itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.alter_partition_reassignments.v1.request import AlterPartitionReassignmentsRequest

    from ..broker import Broker
    from ..connection import RequestContext


def handle(broker: Broker, ctx: RequestContext, request: AlterPartitionReassignmentsRequest) -> Any:
    if broker.cluster.clustered:
        return _clustered(broker, ctx, request)
    out = []
    for t in request.topics:
        parts = []
        topic = broker.registry.get(t.name)
        for p in t.partitions:
            if topic is None or not 0 <= p.partition_index < topic.partitions:
                code, msg = E.unknown_topic_or_partition.value, "The partition does not exist."
            elif p.replicas is None:
                code, msg = E.no_reassignment_in_progress.value, "No reassignment is in progress for this partition."
            elif list(p.replicas) != [broker.node_id]:
                code, msg = E.invalid_replica_assignment.value, f"Only broker {broker.node_id} exists."
            else:
                code, msg = 0, None
            parts.append({"partition_index": p.partition_index, "error_code": code, "error_message": msg})
        out.append({"name": t.name, "partitions": parts})
    return _response(out)


async def _clustered(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    cluster = broker.cluster
    allow_rf_change = getattr(request, "allow_replication_factor_change", True)
    out = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            target = None if p.replicas is None else tuple(int(b) for b in p.replicas)
            a = cluster.cache.topics.get(t.name)
            if (
                target is not None
                and not allow_rf_change
                and a is not None
                and 0 <= p.partition_index < a.partitions
                and len(target) != len(a.original(p.partition_index))
            ):
                code, msg = E.invalid_replication_factor.value, "The replication factor would change."
            else:
                code, msg = await cluster.state.reassign(t.name, p.partition_index, target)
            parts.append({"partition_index": p.partition_index, "error_code": code, "error_message": msg})
        out.append({"name": t.name, "partitions": parts})
    return _response(out)


def _response(topics: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "allow_replication_factor_change": True,
        "error_code": 0,
        "error_message": None,
        "responses": topics,
    }


ROUTE = control_route(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, handle)
