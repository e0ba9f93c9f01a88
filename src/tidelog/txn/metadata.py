"""What the transaction coordinator keeps per transactional id (`TxnMetadata`, its record in
`__transaction_state` from `value()`), and what it writes through: the state store and the
marker writer (txn/service.py implements both over the broker)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..wire.errors import COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
from .epoch_bump import MAX_EPOCH
from .records import TxnLogValue
from .state import TxnState as S

__all__ = ["MAX_EPOCH", "MOVED", "MarkerWriter", "StateStore", "TopicPartition", "TxnMetadata"]

MOVED = (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE)  # a state write's errors a client retries on

TopicPartition = tuple[str, int]


class StateStore(Protocol):
    async def write(self, transactional_id: str, value: TxnLogValue | None) -> None: ...


class MarkerWriter(Protocol):
    async def write(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        partitions: list[TopicPartition],
        transaction_version: int = 0,
    ) -> None: ...


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = -1
    timeout_ms: int = 60000
    state: S = S.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_epoch: int = -1  # the epoch before the last bump (a retried InitProducerId)
    busy: bool = False
    prev_producer_id: int = -1  # the producer id before the last change (a retry after an overflow)
    next_producer_id: int = -1  # TV2: the id the producer moves to when this transaction completes
    client_txn_version: int = 0  # the transaction version of the client's last transaction

    def value(self, **changes: Any) -> TxnLogValue:
        parts: dict[str, list[int]] = {}
        for t, p in changes.get("partitions", self.partitions):
            parts.setdefault(t, []).append(p)
        return TxnLogValue(
            changes.get("producer_id", self.producer_id),
            changes.get("producer_epoch", self.producer_epoch),
            changes.get("timeout_ms", self.timeout_ms),
            changes.get("state", self.state),
            parts,
            changes.get("last_update_ms", self.last_update_ms),
            changes.get("start_ms", self.start_ms),
            changes.get("prev_producer_id", self.prev_producer_id),
            changes.get("next_producer_id", self.next_producer_id),
            changes.get("client_txn_version", self.client_txn_version),
        )
