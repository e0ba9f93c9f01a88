"""ListOffsets (key 2, v0-11): offsets by time through the time index, and the sentinels.

-1 latest (high watermark; the last stable offset for read_committed, v2+), -2 earliest (log start
offset), -3 the offset of the largest timestamp (v7+, KIP-734), -4 earliest local (v8+, KIP-405:
the log start, nothing is tiered), -5 latest tiered (v9+, KIP-1005) and -6 earliest pending upload
(v11+, KIP-1023): no offset (-1), as Kafka answers for a topic without tiered storage. A negative
timestamp that is no sentinel, or one newer than the request's version, is UNSUPPORTED_VERSION
for its partition (Kafka's ReplicaManager, checked before the partition is looked up). v10's
timeout bounds Kafka's remote-storage lookups; tidelog has none and answers at once.
v0 answers `max_num_offsets` by segment, as Kafka did, using each segment's largest record
timestamp (never file times).
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


LATEST, EARLIEST, MAX_TS, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
# the first version that accepts each sentinel (Kafka's ReplicaManager.timestampMinSupportedVersion)
SENTINEL_MIN_VERSION = {
    LATEST: 1,
    EARLIEST: 1,
    MAX_TS: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
    EARLIEST_PENDING_UPLOAD: 11,
}
NOTHING_TIERED = (LATEST_TIERED, EARLIEST_PENDING_UPLOAD)  # no tiered storage: no such offset


def unsupported(timestamp: int, version: int) -> bool:
    """A negative timestamp no sentinel of this version names (v0 keeps its own rules)."""
    return version >= 1 and timestamp < 0 and version < SENTINEL_MIN_VERSION.get(timestamp, 99)


def handle(deps: Deps, ctx: RequestContext, req: codec.ListOffsetsRequest) -> codec.ListOffsetsResponse:
    partitions = deps.partitions

    def lookup(plog: PartitionLog, ts: int, committed: bool) -> tuple[int, int]:
        """(timestamp, offset) answered for one partition."""
        if ts in NOTHING_TIERED:
            return -1, -1
        found = plog.list_offset(ts, max_offset=plog.last_stable_offset if committed else None)
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
            if unsupported(p.timestamp, version):
                parts.append(
                    codec.ListOffsetsResponsePartition(
                        partition_index=p.partition_index, error_code=E.unsupported_version.value
                    )
                )
                continue
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
            timestamp, offset = lookup(plog, p.timestamp, committed)
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
