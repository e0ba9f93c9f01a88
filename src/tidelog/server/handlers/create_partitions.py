"""CreatePartitions (key 37, v0-3): grow a topic's partition count."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...core.admin import MAX_NEW_PARTITIONS_PER_REQUEST, TOO_MANY_PER_REQUEST
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.create_partitions.v3.request import CreatePartitionsRequest

    from ..broker import Broker
    from ..connection import RequestContext


def handle(broker: Broker, ctx: RequestContext, request: CreatePartitionsRequest) -> Any:
    admin = broker.admin
    results = []
    pending: list[Any] = []
    current = {t.name: broker.registry.get(t.name) for t in request.topics}
    added = sum(
        t.count - current[t.name].partitions
        for t in request.topics
        if current[t.name] is not None and t.count > current[t.name].partitions
    )
    for t in request.topics:
        if added > MAX_NEW_PARTITIONS_PER_REQUEST:  # Kafka fails every topic of the request
            code, msg = TOO_MANY_PER_REQUEST
            results.append({"name": t.name, "error_code": code, "error_message": msg})
            continue
        code, msg = admin.check_partitions(t.name, t.count)
        if not code and t.assignments and not admin.clustered:
            if any(list(a.broker_ids) != [broker.node_id] for a in t.assignments):
                code, msg = E.invalid_replica_assignment.value, f"Only broker {broker.node_id} exists."
        entry = {"name": t.name, "error_code": code, "error_message": msg}
        if not code and not request.validate_only:
            if admin.clustered:
                pending.append(_set_partitions(broker, t.name, t.count, entry))
            else:
                admin.add_partitions(t.name, t.count)
        results.append(entry)
    response = {"throttle_time": 0, "results": results}
    if pending:
        return _after(pending, response)
    return response


async def _set_partitions(broker: Broker, name: str, count: int, entry: dict[str, Any]) -> None:
    code, msg = await broker.cluster.state.set_partitions(name, count)
    entry.update(error_code=code, error_message=msg)


async def _after(pending: list[Any], response: dict[str, Any]) -> dict[str, Any]:
    await asyncio.gather(*pending)
    return response


ROUTE = control_route(ApiKey.CREATE_PARTITIONS, 0, 3, handle)
