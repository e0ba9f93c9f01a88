"""AlterPartitionReassignments (key 45, v0-1; KIP-455): move a partition's replicas to a target
list, or cancel a move in progress (replicas null). In a cluster the target replicas are added
and fetch; once all are in sync the controller makes them the partition's replicas (leader moved
if it is not among them) and the others delete their copy (cluster/node.py `reassign`,
controller.py). v1's allow_replication_factor_change=false refuses a target of another size
(INVALID_REPLICATION_FACTOR, KIP-860). A single node can only "move" a partition to itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.alter_partition_reassignments.v1.request import AlterPartitionReassignmentsRequest

    from ...cluster.view import ClusterView
    from ...wire.responses import (
        AlterPartitionReassignmentsResponse,
        ReassignablePartitionResponse,
        ReassignableTopicResponse,
    )
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    cluster: ClusterView


async def handle(
    deps: Deps, ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    cluster = deps.cluster
    allow_rf_change = bool(getattr(request, "allow_replication_factor_change", True))
    out: list[ReassignableTopicResponse] = []
    for t in request.topics:
        parts: list[ReassignablePartitionResponse] = []
        for p in t.partitions:
            target = None if p.replicas is None else tuple(int(b) for b in p.replicas)
            code, msg = await cluster.reassign(t.name, p.partition_index, target, allow_rf_change)
            parts.append({"partition_index": p.partition_index, "error_code": code, "error_message": msg})
        out.append({"name": t.name, "partitions": parts})
    return _response(out)


def _response(topics: list[ReassignableTopicResponse]) -> AlterPartitionReassignmentsResponse:
    return {
        "throttle_time": 0,
        "allow_replication_factor_change": True,
        "error_code": 0,
        "error_message": None,
        "responses": topics,
    }


ROUTE = control_route(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, handle)
