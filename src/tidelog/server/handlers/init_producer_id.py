"""InitProducerId (key 22, v0-5): a producer id and epoch; for a transactional id, fences the
previous instance (epoch bump, its open transaction aborted). v3+ carry the producer's current
id and epoch (KIP-360); v4+ may answer PRODUCER_FENCED; v5 only tells that the client knows
TRANSACTION_ABORTABLE (KIP-890). Kafka 4.3.1's v6 (two-phase commit, KIP-939) is unstable there
and not advertised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route
from ._txn_util import fenced_for, guarded, millis

if TYPE_CHECKING:
    from kio.schema.init_producer_id.v5.request import InitProducerIdRequest

    from ...txn.service import TxnService
    from ...wire.responses import InitProducerIdResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService


async def handle(deps: Deps, ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    txn = deps.txn

    def answer(code: int, pid: int = -1, epoch: int = -1) -> InitProducerIdResponse:
        return {
            "throttle_time": 0,
            "error_code": fenced_for(code, ctx.api_version, 4),
            "producer_id": pid,
            "producer_epoch": epoch,
        }

    res = await guarded(
        "InitProducerId",
        txn.coordinator.init_producer_id(
            request.transactional_id,
            millis(request.transaction_timeout),
            getattr(request, "producer_id", -1),
            getattr(request, "producer_epoch", -1),
        ),
        lambda code: (code, -1, -1),
    )
    return answer(*res)


ROUTE = control_route(ApiKey.INIT_PRODUCER_ID, 0, 5, handle)
