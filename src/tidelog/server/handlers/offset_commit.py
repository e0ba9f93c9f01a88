"""OffsetCommit (key 8, v0-9): store committed offsets in __consumer_offsets.

v1 carries a per-partition commit timestamp, v2-4 a request-level retention time (kept as the
record's expire timestamp), v6+ the leader epoch, v7+ group_instance_id; v9 is the version a member
of a consumer group (KIP-848) must use: its generation field is the member epoch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...groups.records import OffsetValue
from ...log.clock import wall_clock_ms
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.offset_commit.v8.request import OffsetCommitRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import OffsetCommitResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    coordinator = deps.groups
    version = ctx.api_version
    now = wall_clock_ms()
    retention = getattr(request, "retention_time", -1) if 2 <= version <= 4 else -1
    if hasattr(retention, "total_seconds"):  # kio reads it as a timedelta
        retention = int(retention.total_seconds() * 1000)
    offsets: dict[tuple[str, int], OffsetValue] = {}
    for t in request.topics:
        for p in t.partitions:
            ts = getattr(p, "commit_timestamp", -1)
            ts = now if ts is None or ts < 0 else ts
            offsets[(t.name, p.partition_index)] = OffsetValue(
                offset=p.committed_offset,
                metadata=p.committed_metadata or "",
                commit_timestamp=ts,
                leader_epoch=getattr(p, "committed_leader_epoch", -1),
                expire_timestamp=ts + retention if retention is not None and retention >= 0 else -1,
            )
    results = await coordinator.commit_offsets(
        request.group_id,
        getattr(request, "generation_id_or_member_epoch", -1),
        getattr(request, "member_id", ""),
        getattr(request, "group_instance_id", None),
        offsets,
        version,
    )
    return {
        "throttle_time": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": results[(t.name, p.partition_index)]}
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ],
    }


ROUTE = control_route(ApiKey.OFFSET_COMMIT, 0, 9, handle)
