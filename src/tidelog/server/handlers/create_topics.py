"""CreateTopics (key 19, v0-7): validate_only, configs, partitions, replication factor 1/-1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...core.admin import MAX_NEW_PARTITIONS_PER_REQUEST, TOO_MANY_PER_REQUEST
from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer, answered_after

if TYPE_CHECKING:
    from kio.schema.create_topics.v7.request import CreateTopicsRequest

    from ...core.admin import Created, TopicAdmin
    from ...core.config import BrokerConfig
    from ...wire.responses import CreatableTopicResult, CreateTopicsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    admin: TopicAdmin
    config: BrokerConfig


SOURCE_DYNAMIC_TOPIC, SOURCE_DEFAULT = 1, 5


def handle(deps: Deps, ctx: RequestContext, request: CreateTopicsRequest) -> Answer[CreateTopicsResponse]:
    admin = deps.admin
    results: list[CreatableTopicResult] = []
    pending: list[Awaitable[None]] = []
    validate_only = getattr(request, "validate_only", False)
    # A name given more than once is created from none of its entries and answered once, after the
    # others, INVALID_REQUEST (Kafka's ControllerApis.createTopics); its partitions do not count.
    counts = Counter(t.name for t in request.topics)
    too_many = (
        sum(max(_requested(t, deps.config["num.partitions"]), 0) for t in request.topics if counts[t.name] == 1)
        > MAX_NEW_PARTITIONS_PER_REQUEST
    )
    if too_many:  # Kafka fails every entry of the request, repeated names included
        topics = [_entry(t.name, *TOO_MANY_PER_REQUEST) for t in request.topics]
        return {"throttle_time": 0, "topics": topics}
    for t in request.topics:
        if counts[t.name] > 1:
            continue
        entry = _entry(t.name)
        results.append(entry)
        partitions: int = t.num_partitions
        rf: int = t.replication_factor
        if t.assignments:
            error = _assignment_error(t, set(admin.live_brokers()))
            if error is not None:
                entry.update({"error_code": error[0], "error_message": error[1]})
                continue
            partitions = len(t.assignments)
        if partitions == -1:
            partitions = deps.config["num.partitions"]
        configs = {c.name: c.value for c in t.configs}
        code, msg = admin.check_create(t.name, partitions, rf, configs)
        if code:
            entry.update({"error_code": code, "error_message": msg})
            continue
        if not validate_only:
            replicas: list[tuple[int, ...]] | None = (
                [tuple(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)]
                if t.assignments
                else None
            )
            pending.append(_create(entry, admin.create_topic(t.name, partitions, rf, configs, replicas)))
        overrides = {k for k, v in configs.items() if v is not None}
        entry.update(
            {
                "num_partitions": partitions,
                "replication_factor": len(t.assignments[0].broker_ids)
                if t.assignments
                else admin.replication_factor(rf),
                "configs": _described(admin.new_topic_configs(configs), overrides),
            }
        )
    results.extend(
        _entry(name, E.invalid_request.value, "Duplicate topic name.") for name, n in counts.items() if n > 1
    )
    response: CreateTopicsResponse = {"throttle_time": 0, "topics": results}
    if pending:
        return answered_after(response, *pending)
    return response


def _entry(name: str, code: int = 0, message: str | None = None) -> CreatableTopicResult:
    """A topic's result: an error with nothing else, or a success filled in by the caller."""
    return {
        "name": name,
        "topic_id": None,
        "error_code": code,
        "error_message": message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }


def _assignment_error(t: Any, live: set[int]) -> tuple[int, str] | None:
    """Why a topic's replica assignments cannot be used, as Kafka's controller answers, or None:
    they come with a partition count or replication factor, name a broker twice or one not
    alive, differ in length, or do not number the partitions 0..n-1."""
    if t.num_partitions != -1 or t.replication_factor != -1:
        return E.invalid_request.value, "Both numPartitions or replicationFactor and replicasAssignments were set."
    width = len(t.assignments[0].broker_ids)
    bad = (
        any(
            len(a.broker_ids) != width or len(set(a.broker_ids)) != width or not set(a.broker_ids) <= live
            for a in t.assignments
        )
        or not width
    )
    if bad or sorted(a.partition_index for a in t.assignments) != list(range(len(t.assignments))):
        return (
            E.invalid_replica_assignment.value,
            f"Replica assignments must name live brokers ({sorted(live)}), each once and as many for every "
            "partition, one per partition 0..n-1.",
        )
    return None


def _described(effective: dict[str, Any], overrides: set[str]) -> list[Any]:
    """CreateTopics v5+'s configs of a new topic: every effective value, its source."""
    return [
        {
            "name": k,
            "value": v,
            "read_only": False,
            "config_source": SOURCE_DYNAMIC_TOPIC if k in overrides else SOURCE_DEFAULT,
            "is_sensitive": False,
        }
        for k, v in sorted(effective.items())
    ]


async def _create(entry: CreatableTopicResult, created: Awaitable[Created]) -> None:
    """The entry of a topic being created, completed once this broker has it (core/admin.py)."""
    code, msg, topic = await created
    if code:
        entry.update(
            {"error_code": code, "error_message": msg, "num_partitions": -1, "replication_factor": -1, "configs": []}
        )
    elif topic is not None:
        entry["topic_id"] = topic.topic_id


def _requested(topic: Any, default: int) -> int:
    """The partitions a CreateTopics entry asks for, counted as Kafka does for its per-request limit."""
    if topic.assignments:
        return len(topic.assignments)
    return default if topic.num_partitions == -1 else topic.num_partitions


ROUTE = control_route(ApiKey.CREATE_TOPICS, 0, 7, handle)
