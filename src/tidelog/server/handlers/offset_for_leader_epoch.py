"""OffsetForLeaderEpoch (key 23, v0-4): from each partition's leader epoch cache (KIP-101/279).

For a requested epoch the answer is the largest epoch at or below it and that epoch's end offset
(the next epoch's start, or the log end offset for the latest epoch). Clients use it to validate
their position after a leader change (KIP-320); followers use it to find where to truncate. In
cluster mode only the leader answers (NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.offset_for_leader_epoch.v4.request import OffsetForLeaderEpochRequest

    from ...cluster.view import ClusterView
    from ...core.partitions import Partitions
    from ...wire.responses import EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    partitions: Partitions
    cluster: ClusterView


def handle(deps: Deps, ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    partitions = deps.partitions
    cluster = deps.cluster
    topics: list[OffsetForLeaderTopicResult] = []
    for t in request.topics:
        parts: list[EpochEndOffset] = []
        for p in t.partitions:
            code, _leader = cluster.leader_check(t.topic, p.partition, getattr(p, "current_leader_epoch", -1))
            if code == E.not_leader_or_follower.value and not cluster.replicated(t.topic, p.partition):
                code = E.unknown_topic_or_partition.value
            if code:
                parts.append({"error_code": code, "partition": p.partition, "leader_epoch": -1, "end_offset": -1})
                continue
            plog = partitions.get(t.topic, p.partition)
            if plog is None:
                parts.append(
                    {
                        "error_code": E.unknown_topic_or_partition.value,
                        "partition": p.partition,
                        "leader_epoch": -1,
                        "end_offset": -1,
                    }
                )
            elif p.leader_epoch < 0:
                parts.append({"error_code": 0, "partition": p.partition, "leader_epoch": -1, "end_offset": -1})
            else:
                epoch, end = plog.epoch_end(p.leader_epoch)
                parts.append({"error_code": 0, "partition": p.partition, "leader_epoch": epoch, "end_offset": end})
        topics.append({"topic": t.topic, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}


ROUTE = control_route(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, handle)
