"""ReadShareGroupStateSummary (key 87, v0-1; KIP-932, between brokers): a share partition's start
offset, epochs and (v1) delivery-complete count, for DescribeShareGroupOffsets at the group
coordinator. Answered from the share coordinator's memory; no state: start offset -1."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...share.persister import ABSENT_EPOCH
from ...wire.apis import ApiKey
from ..router import control_route
from ._share_state import per_partition

if TYPE_CHECKING:
    from kio.schema.read_share_group_state_summary.v1.request import ReadShareGroupStateSummaryRequest

    from ...share.coordinator import ShareCoordinator
    from ...wire.responses import ReadShareGroupStateSummaryPartitionResult, ReadShareGroupStateSummaryResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    share_coordinator: ShareCoordinator


async def handle(
    deps: Deps, ctx: RequestContext, request: ReadShareGroupStateSummaryRequest
) -> ReadShareGroupStateSummaryResponse:
    async def one(key: Any, p: Any) -> ReadShareGroupStateSummaryPartitionResult:
        code, found = deps.share_coordinator.summary(key)
        if code or found is None:
            return {
                "partition": key[2],
                "error_code": E(code),
                "error_message": None,
                "state_epoch": ABSENT_EPOCH,
                "leader_epoch": -1,
                "start_offset": -1,
                "delivery_complete_count": -1,
            }
        return {
            "partition": key[2],
            "error_code": E.none,
            "error_message": None,
            "state_epoch": found.state_epoch,
            "leader_epoch": found.leader_epoch,
            "start_offset": found.start_offset,
            "delivery_complete_count": found.delivery_complete_count,
        }

    done = await per_partition(request.group_id, request.topics, one)
    return {"results": [{"topic_id": t, "partitions": ps} for t, ps in done]}


ROUTE = control_route(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1, handle)
