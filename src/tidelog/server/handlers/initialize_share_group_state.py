"""InitializeShareGroupState (key 83, v0; KIP-932, between brokers): the group coordinator gives a
share partition a fresh state - a start offset (-1: its leader picks it by the group's
`share.auto.offset.reset`) at a state epoch - at the share coordinator (`share.coordinator`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from ._share_state import per_partition

if TYPE_CHECKING:
    from kio.schema.initialize_share_group_state.v0.request import InitializeShareGroupStateRequest

    from ...share.coordinator import ShareCoordinator
    from ...wire.responses import InitializeShareGroupStatePartitionResult, InitializeShareGroupStateResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    share_coordinator: ShareCoordinator


async def handle(
    deps: Deps, ctx: RequestContext, request: InitializeShareGroupStateRequest
) -> InitializeShareGroupStateResponse:
    async def one(key: Any, p: Any) -> InitializeShareGroupStatePartitionResult:
        code = await deps.share_coordinator.initialize(key, p.state_epoch, p.start_offset)
        return {"partition": key[2], "error_code": E(code), "error_message": None}

    done = await per_partition(request.group_id, request.topics, one)
    return {"results": [{"topic_id": t, "partitions": ps} for t, ps in done]}


ROUTE = control_route(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, 0, handle)
