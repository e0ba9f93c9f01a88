"""AddPartitionsToTxn (key 24, v0-5): partitions join the producer's transaction (Ongoing).
v0-3 come from clients; v4+ from partition leaders (Kafka asks them for CLUSTER_ACTION): they
batch several transactions and either only verify (`verify_only`, KIP-890 part 1: a partition
not in the transaction gets TRANSACTION_ABORTABLE, as Kafka's coordinator answers) or add the
partitions a Produce v12+ / TxnOffsetCommit v5 of a transaction version 2 client writes to
(KIP-890 part 2: the transaction is marked as run at version 2). A partition that does not
exist fails the whole transaction's list (UNKNOWN_TOPIC_OR_PARTITION, the others
OPERATION_NOT_ATTEMPTED). v2+ may answer PRODUCER_FENCED; v5 only tells that the sender knows
TRANSACTION_ABORTABLE."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ...wire.errors import NONE, OPERATION_NOT_ATTEMPTED, UNKNOWN_TOPIC_OR_PARTITION
from ..router import control_route
from ._txn_util import fenced_for, guarded

if TYPE_CHECKING:
    from kio.schema.add_partitions_to_txn.v5.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic

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
        unknown = {tp for tp in tps if not coordinator.partition_exists(*tp)}
        if unknown and version >= 4:
            results = {tp: UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else OPERATION_NOT_ATTEMPTED for tp in tps}
        elif verify_only:
            results = coordinator.verify_request(txn_id, pid, epoch, tps)
        else:
            results = await guarded(
                "AddPartitionsToTxn",
                # v4+ come from brokers for clients of transaction version 2 (Kafka's
                # TransactionVersion.transactionVersionForAddPartitionsToTxn)
                coordinator.add_partitions(txn_id, pid, epoch, tps, 2 if version >= 4 else 0),
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


ROUTE = control_route(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, handle)
