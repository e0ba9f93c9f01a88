"""AddPartitionsToTxn (key 24, v0-4): partitions join the producer's transaction (Ongoing).
v4 batches several transactions and may only verify (`verify_only`, KIP-890): then a partition
not in the Ongoing transaction gets INVALID_TXN_STATE. v2+ may answer PRODUCER_FENCED."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ...wire.errors import INVALID_TXN_STATE, NONE
from ..router import control_route
from ._txn_util import fenced_for, guarded

if TYPE_CHECKING:
    from kio.schema.add_partitions_to_txn.v4.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic

    from ...txn.service import TxnService
    from ...wire.responses import (
        AddPartitionsToTxnPartitionResult,
        AddPartitionsToTxnResponse,
        AddPartitionsToTxnResult,
        AddPartitionsToTxnTopicResult,
    )
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService


async def handle(deps: Deps, ctx: RequestContext, request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    txn = deps.txn
    coordinator = txn.coordinator

    async def one(
        txn_id: str,
        pid: int,
        epoch: int,
        topics: Sequence[AddPartitionsToTxnTopic],
        version: int,
        verify_only: bool = False,
    ) -> list[AddPartitionsToTxnTopicResult]:
        tps: list[tuple[str, int]] = [(t.name, p) for t in topics for p in t.partitions]
        if verify_only and (moved := coordinator.status(txn_id)):
            results = {tp: moved for tp in tps}
        elif verify_only:
            results = {
                tp: coordinator.verify(pid, epoch, tp)
                if coordinator.txns.get(txn_id) is not None
                else INVALID_TXN_STATE
                for tp in tps
            }
        else:
            results = await guarded(
                "AddPartitionsToTxn",
                coordinator.add_partitions(txn_id, pid, epoch, tps),
                lambda code: {tp: code for tp in tps},
            )
        by_topic: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
        for (t, p), code in results.items():
            by_topic.setdefault(t, []).append(
                {"partition_index": p, "partition_error_code": fenced_for(code, version, 2)}
            )
        return [{"name": t, "results_by_partition": parts} for t, parts in by_topic.items()]

    v = ctx.api_version
    if v >= 4:
        out: list[AddPartitionsToTxnResult] = []
        for tr in request.transactions:
            out.append(
                {
                    "transactional_id": tr.transactional_id,
                    "topic_results": await one(
                        tr.transactional_id, tr.producer_id, tr.producer_epoch, tr.topics, v, tr.verify_only
                    ),
                }
            )
        return {"throttle_time": 0, "error_code": NONE, "results_by_transaction": out}
    return {
        "throttle_time": 0,
        "results_by_topic_v3_and_below": await one(
            getattr(request, "v3_and_below_transactional_id"),  # v0-3 (the v5 class has `transactions`)
            getattr(request, "v3_and_below_producer_id"),
            getattr(request, "v3_and_below_producer_epoch"),
            getattr(request, "v3_and_below_topics"),
            v,
        ),
    }


ROUTE = control_route(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 4, handle)
