"""WriteShareGroupState (key 85, v0-1; KIP-932, between brokers): a share partition's leader
writes its whole state to the share coordinator, fenced by its leader epoch and the state epoch
it loaded (FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...share import state_records as SS
from ...wire.apis import ApiKey
from ..router import control_route
from ._share_state import per_partition

if TYPE_CHECKING:
    from kio.schema.write_share_group_state.v1.request import WriteShareGroupStateRequest

    from ...share.coordinator import ShareCoordinator
    from ...wire.responses import WriteShareGroupStatePartitionResult, WriteShareGroupStateResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    share_coordinator: ShareCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: WriteShareGroupStateRequest) -> WriteShareGroupStateResponse:
    async def one(key: Any, p: Any) -> WriteShareGroupStatePartitionResult:
        batches = [
            SS.StateBatch(b.first_offset, b.last_offset, int(b.delivery_state), b.delivery_count)
            for b in p.state_batches
        ]
        code = await deps.share_coordinator.write(key, p.state_epoch, p.leader_epoch, p.start_offset, batches)
        return {"partition": key[2], "error_code": E(code), "error_message": None}

    done = await per_partition(request.group_id, request.topics, one)
    return {"results": [{"topic_id": t, "partitions": ps} for t, ps in done]}


ROUTE = control_route(ApiKey.WRITE_SHARE_GROUP_STATE, 0, 1, handle)
