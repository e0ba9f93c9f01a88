"""CreatePartitions (key 37, v0-3): grow a topic's partition count."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.admin import MAX_NEW_PARTITIONS_PER_REQUEST, TOO_MANY_PER_REQUEST, Result
from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer, answered_after

if TYPE_CHECKING:
    from kio.schema.create_partitions.v3.request import CreatePartitionsRequest

    from ...core.admin import TopicAdmin
    from ...core.topics import TopicRegistry
    from ...wire.responses import CreatePartitionsResponse, CreatePartitionsTopicResult
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    registry: TopicRegistry
    admin: TopicAdmin


def handle(deps: Deps, ctx: RequestContext, request: CreatePartitionsRequest) -> Answer[CreatePartitionsResponse]:
    admin = deps.admin
    results: list[CreatePartitionsTopicResult] = []
    pending: list[Awaitable[None]] = []
    current = {t.name: deps.registry.get(t.name) for t in request.topics}
    added = sum(
        t.count - topic.partitions
        for t in request.topics
        if (topic := current[t.name]) is not None and t.count > topic.partitions
    )
    for t in request.topics:
        if added > MAX_NEW_PARTITIONS_PER_REQUEST:  # Kafka fails every topic of the request
            code, msg = TOO_MANY_PER_REQUEST
            results.append({"name": t.name, "error_code": code, "error_message": msg})
            continue
        code, msg = admin.check_partitions(t.name, t.count)
        if not code and t.assignments:
            code, msg = admin.check_new_partition_assignments([list(a.broker_ids) for a in t.assignments])
        entry: CreatePartitionsTopicResult = {"name": t.name, "error_code": code, "error_message": msg}
        if not code and not request.validate_only:
            pending.append(_set_partitions(admin.set_partitions(t.name, t.count), entry))
        results.append(entry)
    response: CreatePartitionsResponse = {"throttle_time": 0, "results": results}
    if pending:
        return answered_after(response, *pending)
    return response


async def _set_partitions(done: Awaitable[Result], entry: CreatePartitionsTopicResult) -> None:
    code, msg = await done
    entry.update({"error_code": code, "error_message": msg})


ROUTE = control_route(ApiKey.CREATE_PARTITIONS, 0, 3, handle)
