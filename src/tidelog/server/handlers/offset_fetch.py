"""OffsetFetch (key 9, v0-10): committed offsets of a group (v8: of several groups at once; v9: with
the member id and epoch a consumer group's member (KIP-848) is checked by: UNKNOWN_MEMBER_ID,
STALE_MEMBER_EPOCH; v10: topics named by id, KIP-848).

Null topics (v2+) means every partition the group has committed; a partition with no commit
answers offset -1. v7+ require_stable turns partitions with pending transactional offsets into
UNSTABLE_OFFSET_COMMIT. v10, as Kafka's KafkaApis: an id this broker does not know answers
UNKNOWN_TOPIC_ID (offset -1) for each of its partitions after the known topics; all the group's
topics are answered by id, leaving out those whose topic no longer exists (no id to name them by).
A group-level error (the member check, the coordinator) answers no topics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.offset_fetch.v7.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV7
    from kio.schema.offset_fetch.v8.request import OffsetFetchRequest

    from ...core.topics import TopicRegistry
    from ...groups import GroupCoordinator
    from ...wire.responses import (
        OffsetFetchResponse,
        OffsetFetchResponseGroup,
        OffsetFetchResponseTopics,
    )
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator
    registry: TopicRegistry


FIRST_TOPIC_ID_VERSION = 10
NONE = 0


def _topics(topics: Sequence[Any] | None) -> list[tuple[str, list[int]]] | None:
    if topics is None:
        return None
    return [(t.name, list(t.partition_indexes)) for t in topics]


def handle(deps: Deps, ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    coordinator = deps.groups
    version = ctx.api_version
    stable = bool(getattr(request, "require_stable", False))
    if version >= 8:
        groups: list[OffsetFetchResponseGroup] = []
        for g in request.groups:
            member = (getattr(g, "member_id", None), getattr(g, "member_epoch", -1)) if version >= 9 else None
            if version >= FIRST_TOPIC_ID_VERSION:
                groups.append(_group_by_ids(deps, g, stable, member))
                continue
            err, topics = coordinator.fetch_offsets(g.group_id, _topics(g.topics), stable, member)
            # the same fields, as v8's nested message (whose topic name is not required: v10 has ids)
            topics8: list[OffsetFetchResponseTopics] = [
                {"name": t["name"], "partitions": t["partitions"]} for t in topics
            ]
            groups.append({"group_id": g.group_id, "topics": topics8, "error_code": err})
        return {"throttle_time": 0, "groups": groups}
    # v0-7: one group, at the top level (fields the v8 class lacks)
    group_id: str = getattr(request, "group_id")
    wanted: Sequence[OffsetFetchRequestTopicV7] | None = getattr(request, "topics")
    err, topics = coordinator.fetch_offsets(group_id, _topics(wanted), stable)
    if err:
        # no group-level error code before v2: reported per partition. From v2 Kafka answers the
        # group's error alone, with no partitions - which aiokafka (OffsetFetch v3, reading only
        # partition errors) takes for "nothing committed", and rewinds to its reset policy after
        # every coordinator move. tidelog reports the error in each asked partition too: clients
        # that read the group's error see the same answer, aiokafka retries
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": err}
                    for p in t.partition_indexes
                ],
            }
            for t in wanted or ()
        ]
    return {"throttle_time": 0, "topics": topics, "error_code": err}


def _group_by_ids(deps: Deps, g: Any, stable: bool, member: tuple[str | None, int] | None) -> OffsetFetchResponseGroup:
    """One group of a v10 request: topics by id, in and out."""
    registry = deps.registry
    wanted: list[tuple[str, list[int]]] | None = None
    ids: dict[str, Any] = {}  # name -> the id the request named it by
    unknown: list[OffsetFetchResponseTopics] = []
    if g.topics is not None:
        wanted = []
        for t in g.topics:
            topic = registry.by_id.get(t.topic_id) if t.topic_id is not None else None
            if topic is None:
                unknown.append(
                    {
                        "topic_id": t.topic_id,
                        "partitions": [
                            {
                                "partition_index": p,
                                "committed_offset": -1,
                                "committed_leader_epoch": -1,
                                "metadata": "",
                                "error_code": E.unknown_topic_id.value,
                            }
                            for p in t.partition_indexes
                        ],
                    }
                )
                continue
            wanted.append((topic.name, list(t.partition_indexes)))
            ids[topic.name] = t.topic_id
    err, topics = deps.groups.fetch_offsets(g.group_id, wanted, stable, member)
    if err:
        return {"group_id": g.group_id, "topics": [], "error_code": err}
    out: list[OffsetFetchResponseTopics] = []
    for t in topics:
        topic_id = ids.get(t["name"])
        if topic_id is None:  # every committed topic: by its id now, left out when it has none
            current = registry.get(t["name"])
            if current is None:
                continue
            topic_id = current.topic_id
        # the name stays beside the id for the authorizer's filter (v10 does not send it)
        out.append({"name": t["name"], "topic_id": topic_id, "partitions": t["partitions"]})
    return {"group_id": g.group_id, "topics": out + unknown, "error_code": NONE}


ROUTE = control_route(ApiKey.OFFSET_FETCH, 0, 10, handle)
