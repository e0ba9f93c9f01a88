"""ListPartitionReassignments (key 46, v0; KIP-455): the reassignments in progress, with each
partition's current replicas and the replicas being added and removed; `topics` null lists all.
A single node never has one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest

    from ...cluster.view import ClusterView
    from ...wire.responses import (
        ListPartitionReassignmentsResponse,
        OngoingPartitionReassignment,
        OngoingTopicReassignment,
    )
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    cluster: ClusterView


def handle(
    deps: Deps, ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    moving = deps.cluster.reassignments()  # none on a single node
    wanted: dict[str, set[int]] | None = (
        None if request.topics is None else {t.name: set(t.partition_indexes) for t in request.topics}
    )
    topics: list[OngoingTopicReassignment] = []
    for name in sorted(moving):
        if wanted is not None and name not in wanted:
            continue
        parts: list[OngoingPartitionReassignment] = [
            {
                "partition_index": p,
                "replicas": list(replicas),
                "adding_replicas": list(adding),
                "removing_replicas": list(removing),
            }
            for p, (replicas, adding, removing) in sorted(moving[name].items())
            if wanted is None or p in wanted[name]
        ]
        if parts:
            topics.append({"name": name, "partitions": parts})
    return {"throttle_time": 0, "error_code": 0, "error_message": None, "topics": topics}


ROUTE = control_route(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, handle)
