"""OffsetCommit (key 8, v0-10): store committed offsets in __consumer_offsets.

v1 carries a per-partition commit timestamp, v2-4 a request-level retention time (kept as the
record's expire timestamp), v6+ the leader epoch, v7+ group_instance_id; v9 is the version a member
of a consumer group (KIP-848) must use: its generation field is the member epoch. v10 names topics
by id (KIP-848) and answers by id: as Kafka's KafkaApis, an id this broker does not know is
UNKNOWN_TOPIC_ID for each of its partitions whatever the group says (a partition that does not
exist keeps UNKNOWN_TOPIC_OR_PARTITION likewise: `groups.offsets`), and the group is not asked
when no topic is known."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...groups.records import OffsetValue
from ...log.clock import wall_clock_ms
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.offset_commit.v10.request import OffsetCommitRequest

    from ...core.topics import TopicRegistry
    from ...groups import GroupCoordinator
    from ...wire.responses import OffsetCommitResponse, OffsetCommitResponseTopic
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator
    registry: TopicRegistry


FIRST_TOPIC_ID_VERSION = 10


def _names(deps: Deps, topics: Any, version: int) -> list[str | None]:
    """Each request topic's name: v10 resolves its id (None: an id this broker does not know)."""
    if version < FIRST_TOPIC_ID_VERSION:
        return [t.name for t in topics]
    by_id = deps.registry.by_id
    out: list[str | None] = []
    for t in topics:
        topic = by_id.get(t.topic_id) if t.topic_id is not None else None
        out.append(topic.name if topic is not None else None)
    return out


async def handle(deps: Deps, ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    coordinator = deps.groups
    version = ctx.api_version
    now = wall_clock_ms()
    retention = getattr(request, "retention_time", -1) if 2 <= version <= 4 else -1
    if hasattr(retention, "total_seconds"):  # kio reads it as a timedelta
        retention = int(retention.total_seconds() * 1000)
    names = _names(deps, request.topics, version)
    offsets: dict[tuple[str, int], OffsetValue] = {}
    for t, name in zip(request.topics, names):
        if name is None:
            continue
        for p in t.partitions:
            ts = getattr(p, "commit_timestamp", -1)
            ts = now if ts is None or ts < 0 else ts
            offsets[(name, p.partition_index)] = OffsetValue(
                offset=p.committed_offset,
                metadata=p.committed_metadata or "",
                commit_timestamp=ts,
                leader_epoch=getattr(p, "committed_leader_epoch", -1),
                expire_timestamp=ts + retention if retention is not None and retention >= 0 else -1,
            )
    results: dict[tuple[str, int], int] = {}
    if offsets:  # as Kafka: no topic known, no group asked
        results = await coordinator.commit_offsets(
            request.group_id,
            getattr(request, "generation_id_or_member_epoch", -1),
            getattr(request, "member_id", ""),
            getattr(request, "group_instance_id", None),
            offsets,
            version,
        )

    def code(name: str | None, partition: int) -> int:
        return E.unknown_topic_id.value if name is None else results[(name, partition)]

    topics: list[OffsetCommitResponseTopic] = []
    for t, name in zip(request.topics, names):
        topic_id: uuid.UUID | None = getattr(t, "topic_id", None)
        topics.append(
            {
                "name": name or "",
                "topic_id": topic_id,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": code(name, p.partition_index)}
                    for p in t.partitions
                ],
            }
        )
    return {"throttle_time": 0, "topics": topics}


ROUTE = control_route(ApiKey.OFFSET_COMMIT, 0, 10, handle)
