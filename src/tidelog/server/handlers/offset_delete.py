"""OffsetDelete (key 47, v0): drop committed offsets of partitions the group does not consume."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.offset_delete.v0.request import OffsetDeleteRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import OffsetDeleteResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    coordinator = deps.groups
    tps: list[tuple[str, int]] = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    err, results = await coordinator.delete_offsets(request.group_id, tps)
    return {
        "error_code": err,
        "throttle_time": 0,
        "topics": []
        if err
        else [
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


ROUTE = control_route(ApiKey.OFFSET_DELETE, 0, 0, handle)
