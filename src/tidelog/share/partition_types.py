"""The values a share partition (`partition.SharePartition`) takes and gives: record states and
acknowledgement types with Kafka's ids, the ranges a fetch acquires, the state batches a share
coordinator persists (ShareSnapshot / ShareUpdate), and the two error codes an acknowledgement
answers with. Plain frozen data, no behaviour."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tidelog.wire.errors import ErrorCode, code

__all__ = [
    "INVALID_RECORD_STATE",
    "INVALID_REQUEST",
    "AckBatch",
    "AckType",
    "AcquiredRange",
    "InFlightRange",
    "RecordState",
    "StateBatch",
    "StateDelta",
]

INVALID_RECORD_STATE = code(ErrorCode.invalid_record_state)
INVALID_REQUEST = code(ErrorCode.invalid_request)


class RecordState(enum.IntEnum):
    """A record's state; the values are Kafka's ids (`RecordState.id`, and the persisted delivery
    states 0, 2 and 4)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(enum.IntEnum):
    """Acknowledgement types of ShareFetch / ShareAcknowledge (`AcknowledgeType` ids; 0 is a gap)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # KIP-1222 (ShareFetch / ShareAcknowledge v2): extend the acquisition lock


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """Offsets acquired by one `acquire` call (ShareFetch's AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Persisted state of a run of offsets (the share coordinator's StateBatch)."""

    first_offset: int
    last_offset: int
    delivery_state: int  # 0 available, 2 acknowledged, 4 archived
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """An acknowledgement batch: one type for the whole range, or one type per offset."""

    first_offset: int
    last_offset: int
    ack_types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StateDelta:
    """What to write after some calls (a ShareUpdate): SPSO, the delivery complete count, and the
    state batches of the offsets changed since the last `take_changes`."""

    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class InFlightRange:
    """A run of in-flight offsets in one state, for describe and tests."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int
    member_id: str  # "" unless ACQUIRED
    deadline_ms: int  # -1 unless ACQUIRED
    fetched: bool  # False: a gap of restored state, never fetched since (acquired as new records)
