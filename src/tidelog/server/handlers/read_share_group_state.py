"""ReadShareGroupState (key 84, v0; KIP-932, between brokers): a data partition's leader loads a
share partition's state from its share coordinator, at its leader epoch (which fences the previous
leader's writes). A share partition without state answers start offset -1 at state epoch -1."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...share.persister import ABSENT_EPOCH
from ...wire.apis import ApiKey
from ..router import control_route
from ._share_state import per_partition

if TYPE_CHECKING:
    from kio.schema.read_share_group_state.v0.request import ReadShareGroupStateRequest

    from ...share.coordinator import ShareCoordinator
    from ...wire.responses import ReadShareGroupStatePartitionResult, ReadShareGroupStateResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    share_coordinator: ShareCoordinator


async def handle(deps: Deps, ctx: RequestContext, request: ReadShareGroupStateRequest) -> ReadShareGroupStateResponse:
    async def one(key: Any, p: Any) -> ReadShareGroupStatePartitionResult:
        code, state = await deps.share_coordinator.read(key, p.leader_epoch)
        if code or state is None:
            return {
                "partition": key[2],
                "error_code": E(code),
                "error_message": None,
                "state_epoch": ABSENT_EPOCH,
                "start_offset": -1,
                "state_batches": [],
            }
        return {
            "partition": key[2],
            "error_code": E.none,
            "error_message": None,
            "state_epoch": state.state_epoch,
            "start_offset": state.start_offset,
            "state_batches": [
                {
                    "first_offset": b.first_offset,
                    "last_offset": b.last_offset,
                    "delivery_state": b.delivery_state,
                    "delivery_count": b.delivery_count,
                }
                for b in state.batches
            ],
        }

    done = await per_partition(request.group_id, request.topics, one)
    return {"results": [{"topic_id": t, "partitions": ps} for t, ps in done]}


ROUTE = control_route(ApiKey.READ_SHARE_GROUP_STATE, 0, 0, handle)
