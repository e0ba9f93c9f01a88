"""DeleteShareGroupState (key 86, v0; KIP-932, between brokers): the group coordinator deletes a
share partition's state (a deleted group, deleted offsets) at its share coordinator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from ._share_state import per_partition

if TYPE_CHECKING:
    from kio.schema.delete_share_group_state.v0.request import DeleteShareGroupStateRequest

    from ...share.coordinator import ShareCoordinator
    from ...wire.responses import DeleteShareGroupStatePartitionResult, DeleteShareGroupStateResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    share_coordinator: ShareCoordinator


async def handle(
    deps: Deps, ctx: RequestContext, request: DeleteShareGroupStateRequest
) -> DeleteShareGroupStateResponse:
    async def one(key: Any, p: Any) -> DeleteShareGroupStatePartitionResult:
        return {"partition": key[2], "error_code": E(await deps.share_coordinator.delete(key)), "error_message": None}

    done = await per_partition(request.group_id, request.topics, one)
    return {"results": [{"topic_id": t, "partitions": ps} for t, ps in done]}


ROUTE = control_route(ApiKey.DELETE_SHARE_GROUP_STATE, 0, 0, handle)
