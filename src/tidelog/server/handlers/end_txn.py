"""EndTxn (key 26, v0-4): commit or abort the producer's transaction. Answered once the markers
are written to every partition of the transaction. v2+ may answer PRODUCER_FENCED."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route
from ._txn_util import fenced_for, guarded

if TYPE_CHECKING:
    from kio.schema.end_txn.v4.request import EndTxnRequest

    from ...txn.service import TxnService
    from ...wire.responses import EndTxnResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService


async def handle(deps: Deps, ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    txn = deps.txn
    code = await guarded(
        "EndTxn",
        txn.coordinator.end_txn(
            request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed)
        ),
        lambda c: c,
    )
    return {"throttle_time": 0, "error_code": fenced_for(code, ctx.api_version, 2)}


ROUTE = control_route(ApiKey.END_TXN, 0, 4, handle)
