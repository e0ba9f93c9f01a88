"""DeleteRecords (key 21, v0-2): move a partition's log start offset forward. In a cluster only the
leader answers (NOT_LEADER_OR_FOLLOWER elsewhere); followers follow the leader's log start offset
from its fetch responses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...log.errors import LogError
from ...wire.apis import ApiKey
from ..router import control_route
from ._leadership import off_leader

if TYPE_CHECKING:
    from kio.schema.delete_records.v2.request import DeleteRecordsRequest

    from ...cluster.view import ClusterView
    from ...core.partitions import Partitions
    from ...wire.responses import DeleteRecordsPartitionResult, DeleteRecordsResponse, DeleteRecordsTopicResult
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    partitions: Partitions
    cluster: ClusterView


def handle(deps: Deps, ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    partitions = deps.partitions
    cluster = deps.cluster
    topics: list[DeleteRecordsTopicResult] = []
    for t in request.topics:
        parts: list[DeleteRecordsPartitionResult] = []
        for p in t.partitions:
            plog = partitions.get(t.name, p.partition_index)
            if off_leader(cluster, t.name, p.partition_index):
                parts.append(
                    {
                        "partition_index": p.partition_index,
                        "low_watermark": -1,
                        "error_code": E.not_leader_or_follower.value,
                    }
                )
                continue
            if plog is None:
                parts.append(
                    {
                        "partition_index": p.partition_index,
                        "low_watermark": -1,
                        "error_code": E.unknown_topic_or_partition.value,
                    }
                )
                continue
            try:  # -1: the high watermark; below the log start: nothing moves; the log's policy may refuse
                plog.delete_records(p.offset)
            except LogError as e:
                parts.append({"partition_index": p.partition_index, "low_watermark": -1, "error_code": e.error_code})
                continue
            parts.append(
                {"partition_index": p.partition_index, "low_watermark": plog.log_start_offset, "error_code": 0}
            )
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}


ROUTE = control_route(ApiKey.DELETE_RECORDS, 0, 2, handle)
