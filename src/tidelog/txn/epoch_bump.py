"""EndTxn under transaction version 2 (KIP-890 part 2): the decision table, pure.

With TV2 every EndTxn bumps the producer epoch: PrepareCommit/PrepareAbort is written with the
epoch + 1 (and the old epoch as the last one), the markers carry the bumped epoch, and EndTxn v5
answers the producer id and epoch to use for the next transaction. A producer whose epoch is
exhausted (32766 and up) is given a new producer id instead, at epoch 0, once the transaction
completes. Late requests of the ended epoch are then refused everywhere: the partitions'
producer state has the bumped epoch from the markers (INVALID_PRODUCER_EPOCH), the coordinator
answers PRODUCER_FENCED.

A retried EndTxn is recognised by its epoch: one below the current epoch (the bump was made), or
the last epoch of the previous producer id (the bump overflowed to a new id). Kafka's table for
the completed states (PF: PRODUCER_FENCED, ITS: INVALID_TXN_STATE, EB: a new bump)::

                     abort: retry / current     commit: retry / current
    Empty                   PF    / EB                  PF    / ITS
    CompleteAbort           NONE  / EB                  ITS   / ITS
    CompleteCommit          ITS   / EB                  NONE  / ITS

An Ongoing transaction is prepared with the current epoch only; a Prepare* state answers
CONCURRENT_TRANSACTIONS to a retry of the same outcome (the markers are being written).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.errors import (
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    NONE,
    PRODUCER_FENCED,
)
from .state import PREPARING
from .state import TxnState as S

MAX_EPOCH = 32767


def epoch_exhausted(epoch: int) -> bool:
    """No bump is left for this epoch (Kafka keeps 32767 for fencing)."""
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True, slots=True)
class Decision:
    """`code` alone (an error, or NONE for a retry already done), or `target`: the Prepare state
    to write with the bump; `empty`: nothing was added (an abort of an empty transaction)."""

    code: int = NONE
    target: S | None = None
    empty: bool = False


def decide(
    state: S,
    producer_id: int,
    producer_epoch: int,
    prev_producer_id: int,
    request_pid: int,
    request_epoch: int,
    commit: bool,
) -> Decision:
    """What EndTxn (TV2) does for an id in `state` held by (producer_id, producer_epoch)."""
    retry_on_overflow = prev_producer_id == request_pid and request_epoch == MAX_EPOCH - 1 and producer_epoch == 0
    retry_on_bump = producer_epoch == request_epoch + 1
    if producer_id != request_pid and not retry_on_overflow:
        return Decision(INVALID_PRODUCER_ID_MAPPING)
    if state in (S.ONGOING, S.EMPTY):
        valid = request_epoch == producer_epoch
    elif state in PREPARING:
        valid = retry_on_bump
    else:
        valid = retry_on_bump or retry_on_overflow or request_epoch == producer_epoch
    if not valid:
        return Decision(PRODUCER_FENCED)
    retry = retry_on_bump or retry_on_overflow
    if state == S.ONGOING:
        return Decision(target=S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    if state == S.EMPTY:
        return Decision(INVALID_TXN_STATE) if commit else Decision(target=S.PREPARE_ABORT, empty=True)
    if state == S.COMPLETE_COMMIT:
        if commit:
            return Decision(NONE if retry else INVALID_TXN_STATE)
        return Decision(INVALID_TXN_STATE) if retry else Decision(target=S.PREPARE_ABORT, empty=True)
    if state == S.COMPLETE_ABORT:
        if commit:
            return Decision(INVALID_TXN_STATE)
        return Decision(NONE) if retry else Decision(target=S.PREPARE_ABORT, empty=True)
    if state in PREPARING:
        same = (state == S.PREPARE_COMMIT) == commit
        return Decision(CONCURRENT_TRANSACTIONS if same else INVALID_TXN_STATE)
    return Decision(CONCURRENT_TRANSACTIONS)  # PrepareEpochFence (in memory, while fencing)
