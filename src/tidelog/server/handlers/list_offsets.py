"""ListOffsets (key 2, v0-8): offsets by time through the time index, and the sentinels.

-1 latest (high watermark; the last stable offset for read_committed, v2+), -2 earliest (log start
offset), -3 the last stable offset on v2-6 (KIP-98) and the offset of the largest timestamp on v7+
(KIP-734), -4 earliest local (v8). v0 answers `max_num_offsets` by segment, as Kafka did, using
each segment's largest record timestamp (never file times).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire import list_offsets as codec
from ..router_hot import hot_route

if TYPE_CHECKING:
    from ...cluster.view import ClusterView
    from ...core.partitions import Partitions
    from ...log.log import PartitionLog
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    partitions: Partitions
    cluster: ClusterView


LATEST, EARLIEST, LAST_STABLE_OR_MAX_TS, EARLIEST_LOCAL = -1, -2, -3, -4


def handle(deps: Deps, ctx: RequestContext, req: codec.ListOffsetsRequest) -> codec.ListOffsetsResponse:
    partitions = deps.partitions

    def lookup(plog: PartitionLog, ts: int, version: int, committed: bool) -> tuple[int, int]:
        """(timestamp, offset) answered for one partition."""
        lso = plog.last_stable_offset
        if ts == LAST_STABLE_OR_MAX_TS and version < 7:
            return -1, lso
        found = plog.list_offset(ts, max_offset=lso if committed else None)
        if found is None:
            return -1, -1
        offset, timestamp = found
        return timestamp, offset

    version = ctx.api_version
    cluster = deps.cluster
    committed = version >= 2 and req.isolation_level == 1
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code, leader = cluster.leader_check(t.name, p.partition_index, getattr(p, "current_leader_epoch", -1))
            if code == E.not_leader_or_follower.value and not cluster.replicated(t.name, p.partition_index):
                code = E.unknown_topic_or_partition.value
            if leader is not None and p.timestamp == LATEST and not leader.latest_available():
                code = E.offset_not_available.value  # KIP-207: the new leader's HW is not there yet
            if code or leader is None:
                parts.append(codec.ListOffsetsResponsePartition(partition_index=p.partition_index, error_code=code))
                continue
            epoch = leader.leader_epoch
            plog = partitions.get(t.name, p.partition_index)
            if plog is None:
                parts.append(
                    codec.ListOffsetsResponsePartition(
                        partition_index=p.partition_index, error_code=E.unknown_topic_or_partition.value
                    )
                )
                continue
            if version == 0:
                offsets = plog.offsets_before(p.timestamp, p.max_num_offsets)
                parts.append(
                    codec.ListOffsetsResponsePartition(
                        partition_index=p.partition_index, old_style_offsets=list(offsets)
                    )
                )
                continue
            timestamp, offset = lookup(plog, p.timestamp, version, committed)
            parts.append(
                codec.ListOffsetsResponsePartition(
                    partition_index=p.partition_index,
                    timestamp=timestamp,
                    offset=offset,
                    leader_epoch=epoch if offset >= 0 else -1,
                )
            )
        topics.append(codec.ListOffsetsResponseTopic(name=t.name, partitions=parts))
    return codec.ListOffsetsResponse(topics=topics)


ROUTE = hot_route(codec, handle)
