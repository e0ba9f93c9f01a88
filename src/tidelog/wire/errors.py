"""Kafka's error codes, from one place: kio's `ErrorCode` enum, and the codes the log, groups and
transactions code compares with as plain ints (their hot paths and state machines keep ints)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "code"]


def code(error: ErrorCode) -> int:
    return int(error.value)


NONE = code(ErrorCode.none)
UNKNOWN_TOPIC_OR_PARTITION = code(ErrorCode.unknown_topic_or_partition)
COORDINATOR_NOT_AVAILABLE = code(ErrorCode.coordinator_not_available)
COORDINATOR_LOAD_IN_PROGRESS = code(ErrorCode.coordinator_load_in_progress)
NOT_COORDINATOR = code(ErrorCode.not_coordinator)
TRANSACTION_COORDINATOR_FENCED = code(ErrorCode.transaction_coordinator_fenced)
INVALID_TOPIC_EXCEPTION = code(ErrorCode.invalid_topic_exception)
OUT_OF_ORDER_SEQUENCE_NUMBER = code(ErrorCode.out_of_order_sequence_number)
INVALID_PRODUCER_EPOCH = code(ErrorCode.invalid_producer_epoch)
INVALID_TXN_STATE = code(ErrorCode.invalid_txn_state)
INVALID_PRODUCER_ID_MAPPING = code(ErrorCode.invalid_producer_id_mapping)
INVALID_TRANSACTION_TIMEOUT = code(ErrorCode.invalid_transaction_timeout)
CONCURRENT_TRANSACTIONS = code(ErrorCode.concurrent_transactions)
OPERATION_NOT_ATTEMPTED = code(ErrorCode.operation_not_attempted)
UNKNOWN_PRODUCER_ID = code(ErrorCode.unknown_producer_id)
PRODUCER_FENCED = code(ErrorCode.producer_fenced)
TRANSACTIONAL_ID_NOT_FOUND = code(ErrorCode.transactional_id_not_found)
TRANSACTION_ABORTABLE = code(ErrorCode.transaction_abortable)
NOT_ENOUGH_REPLICAS = code(ErrorCode.not_enough_replicas)
UNKNOWN_TOPIC_ID = code(ErrorCode.unknown_topic_id)
NETWORK_EXCEPTION = code(ErrorCode.network_exception)
