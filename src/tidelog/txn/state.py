"""The transaction coordinator's state machine (KIP-98): states and the transition table.

One transactional id moves through these states; `check_transition` is the only place that
decides whether a move is legal. The byte values are the ones Kafka stores in
`__transaction_state` (the `TransactionStatus` of its transaction log value).

| to                  | allowed from                                   |
|---------------------|------------------------------------------------|
| Empty               | Empty, CompleteCommit, CompleteAbort           |
| Ongoing             | Ongoing, Empty, CompleteCommit, CompleteAbort  |
| PrepareCommit       | Ongoing                                        |
| PrepareAbort        | Ongoing, PrepareEpochFence; Empty, CompleteCommit, CompleteAbort (1) |
| CompleteCommit      | PrepareCommit                                  |
| CompleteAbort       | PrepareAbort                                   |
| Dead                | Empty, CompleteCommit, CompleteAbort           |
| PrepareEpochFence   | Ongoing                                        |

(1) Transaction version 2 (KIP-890) lets a producer abort with nothing added: EndTxn v5 bumps
its epoch then, which fences its previous epoch's late requests.

PrepareEpochFence is held in memory only, while an Ongoing transaction is aborted with a bumped
epoch (a new producer with the same transactional id, or the transaction timeout).
"""

from __future__ import annotations

import enum


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name Kafka's admin APIs use (ListTransactions, DescribeTransactions)."""
        return _NAMES[self]

    @classmethod
    def from_kafka_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {v: k for k, v in _NAMES.items()}

S = TxnState
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

COMPLETED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})
PREPARING = frozenset({S.PREPARE_COMMIT, S.PREPARE_ABORT})


class IllegalTransition(RuntimeError):
    pass


def check_transition(current: TxnState, target: TxnState) -> None:
    """Raise IllegalTransition unless `current -> target` is in the table."""
    if current not in VALID_PREVIOUS[target]:
        raise IllegalTransition(f"transaction state {current.kafka_name} cannot move to {target.kafka_name}")
