"""ListTransactions (key 66, v0-2): transactional ids known to the coordinator, filtered by
state names, producer ids, (v1) a minimum running time of their transactions and (v2, KIP-1152)
a regular expression the transactional id must match whole (null or "": no filter).

An expression that does not compile fails the request as Kafka does: INVALID_REGULAR_EXPRESSION
and nothing listed. Expressions are Python's `re`, which reads Java's common syntax alike."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.list_transactions.v2.request import ListTransactionsRequest

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
    regex = getattr(request, "transactional_id_pattern", None)
    pattern = None
    if regex:
        try:
            pattern = re.compile(regex)
        except (re.error, RecursionError, OverflowError):
            return {
                "throttle_time": 0,
                "error_code": E.invalid_regular_expression,
                "unknown_state_filters": [],
                "transaction_states": [],
            }
    unknown, found = txn.coordinator.list(request.state_filters, request.producer_id_filters, duration, pattern)
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


ROUTE = control_route(ApiKey.LIST_TRANSACTIONS, 0, 2, handle)
