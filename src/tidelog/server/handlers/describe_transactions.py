"""DescribeTransactions (key 65, v0): state, producer id and epoch, timeout, start time and
partitions of each transactional id; TRANSACTIONAL_ID_NOT_FOUND for unknown ids. A transaction
that has not started reports start time 0 (Kafka sends -1, which kio-based readers cannot parse
as a timestamp; clients show both as "not started")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ...wire.errors import TRANSACTIONAL_ID_NOT_FOUND
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest

    from ...txn.service import TxnService
    from ...wire.responses import DescribeTransactionsResponse, TransactionState
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService


def handle(deps: Deps, ctx: RequestContext, request: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    txn = deps.txn

    def describe(txn_id: str) -> TransactionState:
        meta = txn.coordinator.txns.get(txn_id)
        if meta is None:
            return {
                "error_code": txn.coordinator.status(txn_id) or TRANSACTIONAL_ID_NOT_FOUND,
                "transactional_id": txn_id,
                "transaction_state": "",
                "transaction_timeout": 0,
                "transaction_start_time": 0,
                "producer_id": -1,
                "producer_epoch": -1,
                "topics": [],
            }
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(meta.partitions):
            by_topic.setdefault(t, []).append(p)
        return {
            "error_code": 0,
            "transactional_id": txn_id,
            "transaction_state": meta.state.kafka_name,
            "transaction_timeout": meta.timeout_ms,
            "transaction_start_time": max(meta.start_ms, 0),
            "producer_id": meta.producer_id,
            "producer_epoch": meta.producer_epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    return {"throttle_time": 0, "transaction_states": [describe(t) for t in request.transactional_ids]}


ROUTE = control_route(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, handle)
