"""AddOffsetsToTxn (key 25, v0-4): the `__consumer_offsets` partition of a group joins the
producer's transaction, so TxnOffsetCommit may stage offsets there. v2+ may answer PRODUCER_FENCED;
v4 only tells that the client knows TRANSACTION_ABORTABLE (KIP-890). Clients running transaction
version 2 skip it: TxnOffsetCommit v5 adds the partition itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.topics import OFFSETS_TOPIC
from ...wire.apis import ApiKey
from ..router import control_route
from ._txn_util import fenced_for, guarded

if TYPE_CHECKING:
    from kio.schema.add_offsets_to_txn.v4.request import AddOffsetsToTxnRequest

    from ...txn.service import TxnService
    from ...wire.responses import AddOffsetsToTxnResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService


async def handle(deps: Deps, ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    txn = deps.txn
    store = txn.groups.store
    partition = store.partition_for(request.group_id) if store is not None else 0
    tp = (OFFSETS_TOPIC, partition)
    results = await guarded(
        "AddOffsetsToTxn",
        txn.coordinator.add_partitions(request.transactional_id, request.producer_id, request.producer_epoch, [tp]),
        lambda code: {tp: code},
    )
    return {"throttle_time": 0, "error_code": fenced_for(results[tp], ctx.api_version, 2)}


ROUTE = control_route(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, handle)
