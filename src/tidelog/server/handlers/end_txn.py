"""EndTxn (key 26, v0-5): commit or abort the producer's transaction. Answered once the markers
are written to every partition of the transaction. v2+ may answer PRODUCER_FENCED. v5 is
transaction version 2 (KIP-890 part 2): the coordinator bumps the epoch of every transaction it
ends and answers the producer id and epoch to continue with (txn/epoch_bump.py); v0-4 keep the
epoch (their answer has no producer id or epoch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route
from ._txn_util import fenced_for, guarded

if TYPE_CHECKING:
    from kio.schema.end_txn.v5.request import EndTxnRequest

    from ...txn.service import TxnService
    from ...wire.responses import EndTxnResponse
    from ..connection import RequestContext

FIRST_BUMPING_VERSION = 5  # Kafka's TransactionVersion.transactionVersionForEndTxn: TV2 from v5


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService


async def handle(deps: Deps, ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    coordinator = deps.txn.coordinator
    args = (request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed))
    if ctx.api_version >= FIRST_BUMPING_VERSION:
        code, pid, epoch = await guarded("EndTxn", coordinator.end_txn_bumping(*args), lambda c: (c, -1, -1))
    else:
        code = await guarded("EndTxn", coordinator.end_txn(*args), lambda c: c)
        pid, epoch = -1, -1
    return {
        "throttle_time": 0,
        "error_code": fenced_for(code, ctx.api_version, 2),
        "producer_id": pid,
        "producer_epoch": epoch,
    }


ROUTE = control_route(ApiKey.END_TXN, 0, 5, handle)
