"""ListTransactions (key 66, v0-1): transactional ids known to the coordinator, filtered by
state names, producer ids and (v1) a minimum running time of Ongoing transactions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.list_transactions.v1.request import ListTransactionsRequest

    from ...txn.service import TxnService
    from ...wire.responses import ListTransactionsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService


def handle(deps: Deps, ctx: RequestContext, request: ListTransactionsRequest) -> ListTransactionsResponse:
    txn = deps.txn
    duration = getattr(request, "duration_filter", -1)
    unknown, found = txn.coordinator.list(request.state_filters, request.producer_id_filters, duration)
    return {
        "throttle_time": 0,
        "error_code": 0,
        "unknown_state_filters": unknown,
        "transaction_states": [
            {
                "transactional_id": m.transactional_id,
                "producer_id": m.producer_id,
                "transaction_state": m.state.kafka_name,
            }
            for m in found
        ],
    }


ROUTE = control_route(ApiKey.LIST_TRANSACTIONS, 0, 1, handle)
