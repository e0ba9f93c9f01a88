"""tidelog.share.partition: the share-partition state machine (KIP-932), rule by rule as Kafka 4.3.1's
SharePartition, then a hypothesis state machine against a per-offset reference model."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tidelog.share.partition import SharePartition
from tidelog.share.partition_types import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    AckBatch,
    AckType,
    AcquiredRange,
    RecordState,
    StateBatch,
)

A, S = RecordState.AVAILABLE, RecordState.ACQUIRED
K, X = RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
ACCEPT, RELEASE, REJECT, GAP, RENEW = AckType.ACCEPT, AckType.RELEASE, AckType.REJECT, AckType.GAP, AckType.RENEW


def log_batches(first: int, last: int, size: int) -> list[tuple[int, int]]:
    return [(o, min(o + size - 1, last)) for o in range(first, last + 1, size)]


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, tuple(types))


def states(sp: SharePartition) -> list[tuple[int, int, RecordState, int, str]]:
    return [(r.first_offset, r.last_offset, r.state, r.delivery_count, r.member_id) for r in sp.ranges()]


def R(first: int, last: int, count: int = 1) -> AcquiredRange:
    return AcquiredRange(first, last, count)


# ---- acquisition -----------------------------------------------------------------------------------------
def test_acquire_new_records_locks_them() -> None:
    sp = SharePartition(0, lock_ms=1000)
    assert sp.fetch_offset() == 0 and sp.end_offset == 0 and sp.next_deadline() is None
    assert sp.acquire("m", [(0, 4), (5, 9)], 100, now_ms=50) == [R(0, 9)]
    assert states(sp) == [(0, 9, S, 1, "m")]
    assert sp.start_offset == 0 and sp.end_offset == 10 and sp.fetch_offset() == 10
    assert sp.next_deadline() == 1050
    assert sp.acquired_by("m") == 10 and sp.in_flight() == 10 and sp.members() == ["m"]
    assert sp.acquire("m", [], 10, 0) == [] and sp.acquire("m", [(10, 12)], 0, 0) == []


def test_max_records_is_soft_up_to_the_log_batch_end() -> None:
    sp = SharePartition(0)
    # the 7th record (offset 6) lies in log batch 5-9: the whole batch is acquired
    assert sp.acquire("m", log_batches(0, 19, 5), 7, 0) == [R(0, 9)]
    assert sp.end_offset == 10
    # record_limit mode: exactly max_records; the rest of the in-flight batch stays available
    sp = SharePartition(0)
    assert sp.acquire("m", log_batches(0, 19, 5), 7, 0, record_limit=True) == [R(0, 6)]
    assert states(sp) == [(0, 6, S, 1, "m"), (7, 9, A, 0, "")]
    assert sp.end_offset == 10 and sp.fetch_offset() == 7
    assert sp.acquire("n", log_batches(5, 19, 5), 2, 0, record_limit=True) == [R(7, 8)]


def test_new_records_are_cut_into_batches_of_batch_size() -> None:
    sp = SharePartition(0)
    got = sp.acquire("m", log_batches(0, 29, 5), 100, 0, batch_size=10)
    assert got == [R(0, 9), R(10, 19), R(20, 29)]


def test_an_in_flight_batch_is_acquired_whole_past_max_records() -> None:
    sp = SharePartition(0)
    sp.acquire("m", log_batches(0, 19, 10), 100, 0, batch_size=10)  # in-flight batches 0-9 and 10-19
    assert sp.acknowledge("m", [ack(0, 19, RELEASE)], 0) == [0]
    # max_records 3: the first in-flight batch is acquired whole, the limit stops before the next
    assert sp.acquire("n", log_batches(0, 19, 10), 3, 0) == [R(0, 9, 2)]
    assert sp.fetch_offset() == 10


def test_fetch_from_the_middle_of_a_batch_acquires_from_the_first_fetched_batch() -> None:
    sp = SharePartition(0)
    sp.acquire("m", [(0, 9)], 100, 0)
    assert sp.acknowledge("m", [ack(0, 9, *([ACCEPT] * 3 + [RELEASE] * 7))], 0) == [0]
    assert sp.start_offset == 3 and sp.fetch_offset() == 3
    # the log answers the whole batch 0-9 for a read at 3: offsets below SPSO are not acquired
    assert sp.acquire("n", [(0, 9)], 100, 0) == [R(3, 9, 2)]


def test_two_members_never_hold_the_same_offset() -> None:
    sp = SharePartition(0)
    assert sp.acquire("a", [(0, 4)], 100, 0) == [R(0, 4)]
    assert sp.acquire("b", [(0, 4), (5, 9)], 100, 0) == [R(5, 9)]  # 0-4 are a's
    assert sp.acknowledge("b", [ack(0, 4, ACCEPT)], 0) == [INVALID_RECORD_STATE]
    assert sp.acknowledge("a", [ack(0, 0, RELEASE)], 0) == [0]
    assert sp.acquire("b", [(0, 4), (5, 9)], 100, 0) == [R(0, 0, 2)]  # only the released one
    assert sp.acquired_by("a") == 4 and sp.acquired_by("b") == 6


def test_max_in_flight_stops_new_records_but_not_redelivery() -> None:
    sp = SharePartition(0, max_in_flight=10)
    assert sp.acquire("m", log_batches(0, 99, 4), 6, 0) == [R(0, 7)]  # 6 -> end of batch 4-7
    # 8 in flight: room for 2; the batch holding the 2nd goes whole (in flight may exceed the limit)
    assert sp.acquire("m", log_batches(8, 99, 4), 100, 0) == [R(8, 11)]
    assert sp.in_flight() == 12 and not sp.can_acquire()
    assert sp.acquire("m", log_batches(12, 99, 4), 100, 0) == []
    # full, but offsets below the end are redelivered: at most end - fetch offset, not past the end
    sp.acknowledge("m", [ack(6, 6, RELEASE)], 0)
    assert sp.can_acquire() and sp.fetch_offset() == 6
    assert sp.acquire("n", log_batches(4, 99, 4), 100, 0) == [R(6, 6, 2)]
    assert sp.end_offset == 12
    # the window moves: room again
    sp.acknowledge("m", [ack(0, 5, ACCEPT)], 0)
    assert sp.start_offset == 6 and sp.in_flight() == 6 and sp.can_acquire()


def test_stale_available_offsets_before_the_first_fetched_batch_are_archived() -> None:
    sp = SharePartition(0)
    sp.acquire("m", log_batches(0, 9, 5), 100, 0)
    sp.acknowledge("m", [ack(0, 9, RELEASE)], 0)
    # compaction removed 0-4: the read at 0 returns batch 5-9 first
    assert sp.acquire("n", [(5, 9)], 100, 0) == [R(5, 9, 2)]
    assert sp.start_offset == 5 and sp.delivery_complete_count() == 0
    delta = sp.take_changes()
    assert delta is not None and delta.start_offset == 5


def test_holes_are_skipped_and_not_delivered() -> None:
    sp = SharePartition(0)
    sp.acquire("m", [(0, 4)], 100, 0)
    assert sp.acquire("m", [(8, 9)], 100, 0) == [R(8, 9)]  # 5-7 are not in the log
    assert sp.state_of(6) is None and sp.end_offset == 10
    # an acknowledgement ending in a hole is malformed; one spanning it ignores it
    assert sp.acknowledge("m", [ack(3, 6, ACCEPT)], 0) == [INVALID_REQUEST]
    assert sp.acknowledge("m", [ack(0, 8, ACCEPT)], 0) == [0]
    assert sp.start_offset == 9
    sp.acknowledge("m", [ack(9, 9, ACCEPT)], 0)
    assert sp.start_offset == sp.end_offset == 10 and sp.ranges() == []


def test_new_fetch_on_an_empty_window_starts_where_the_log_starts() -> None:
    sp = SharePartition(5)
    assert sp.acquire("m", [(0, 9)], 100, 0) == [R(5, 9)]  # a read inside a batch
    sp.acknowledge("m", [ack(5, 9, ACCEPT)], 0)
    assert sp.acquire("m", [(20, 24)], 100, 0) == [R(20, 24)]  # 10-19 are gone
    assert sp.start_offset == 20


def test_aborted_transactions_are_archived_and_not_returned() -> None:
    sp = SharePartition(0)
    got = sp.acquire("m", [(0, 4), (5, 9), (10, 14)], 100, 0, aborted=[(5, 9)])
    assert got == [R(0, 4), R(10, 14)]
    assert states(sp) == [(0, 4, S, 1, "m"), (5, 9, X, 1, ""), (10, 14, S, 1, "m")]
    sp.acknowledge("m", [ack(0, 4, ACCEPT)], 0)
    assert sp.start_offset == 10


# ---- acknowledgement -------------------------------------------------------------------------------------
def test_acknowledge_types() -> None:
    sp = SharePartition(0, lock_ms=1000)
    sp.acquire("m", [(0, 9)], 100, 0)
    assert sp.acknowledge("m", [ack(0, 9, ACCEPT, ACCEPT, REJECT, GAP, RELEASE, RELEASE, ACCEPT, 1, 1, 1)], 5) == [0]
    assert states(sp) == [(4, 5, A, 1, ""), (6, 9, K, 1, "")]
    assert sp.start_offset == 4 and sp.fetch_offset() == 4
    assert sp.delivery_complete_count() == 4  # 6-9 (0-3 are below SPSO)
    assert sp.next_deadline() is None


def test_release_keeps_the_delivery_count_and_archives_at_the_limit() -> None:
    sp = SharePartition(0, delivery_limit=2)
    sp.acquire("m", [(0, 1)], 100, 0)
    sp.acknowledge("m", [ack(0, 1, RELEASE)], 0)
    assert states(sp) == [(0, 1, A, 1, "")]
    assert sp.acquire("m", [(0, 1)], 100, 0) == [R(0, 1, 2)]
    sp.acknowledge("m", [ack(0, 1, RELEASE)], 0)  # delivered twice: archived
    assert sp.ranges() == [] and sp.start_offset == 2


def test_acknowledge_errors_change_nothing_of_their_batch() -> None:
    sp = SharePartition(0)
    sp.acquire("a", [(0, 4)], 100, 0)
    sp.acquire("b", [(5, 9)], 100, 0)
    before = states(sp)
    codes = sp.acknowledge(
        "a",
        [
            ack(3, 6, ACCEPT),  # 5-6 are b's
            ack(7, 8, ACCEPT, ACCEPT, ACCEPT),  # 3 types for 2 offsets
            ack(12, 14, ACCEPT),  # past the end
            ack(9, 8, ACCEPT),  # first > last
            ack(9, 9, 7),  # unknown type
            ack(9, 9),  # no type
        ],
        0,
    )
    assert codes == [INVALID_RECORD_STATE] + [INVALID_REQUEST] * 5
    assert states(sp) == before and sp.take_changes() is None
    # a batch below the previous batch's last is malformed; equal is allowed (as Kafka)
    assert sp.acknowledge("a", [ack(3, 4, RELEASE), ack(2, 2, ACCEPT)], 0) == [0, INVALID_REQUEST]
    assert sp.acknowledge("a", [ack(0, 1, ACCEPT), ack(1, 2, ACCEPT)], 0) == [0, INVALID_RECORD_STATE]
    # not acquired (available, acknowledged) -> INVALID_RECORD_STATE
    assert sp.acknowledge("a", [ack(3, 3, ACCEPT)], 0) == [INVALID_RECORD_STATE]
    # all below SPSO: done, nothing to do
    assert sp.start_offset == 2 and sp.acknowledge("b", [ack(0, 1, REJECT)], 0) == [0]
    # a batch reaching below SPSO acknowledges what is in flight
    sp.acquire("a", [(0, 4)], 100, 0)
    assert sp.acknowledge("a", [ack(0, 4, ACCEPT)], 0) == [0]
    assert sp.start_offset == 5
    # nothing in flight
    empty = SharePartition(7)
    assert empty.acknowledge("a", [ack(7, 8, ACCEPT)], 0) == [INVALID_RECORD_STATE]


def test_acknowledge_per_batch_or_atomic() -> None:
    sp = SharePartition(0)
    sp.acquire("a", [(0, 9)], 100, 0)
    codes = sp.acknowledge("a", [ack(0, 1, ACCEPT), ack(2, 3, 7), ack(4, 5, ACCEPT)], 0)
    assert codes == [0, INVALID_REQUEST, 0] and sp.start_offset == 2
    # atomic (Kafka's): the first error undoes the whole call
    before = states(sp)
    codes = sp.acknowledge("a", [ack(2, 3, ACCEPT), ack(6, 6, RENEW), ack(7, 7, 7)], 10, atomic=True)
    assert codes == [INVALID_REQUEST] * 3 and states(sp) == before and sp.start_offset == 2
    assert sp.next_deadline() == 30_000
    assert sp.acknowledge("a", [ack(2, 3, ACCEPT), ack(6, 9, REJECT)], 0, atomic=True) == [0, 0]
    assert sp.ranges() == [] and sp.start_offset == 10


def test_renew_extends_the_lock() -> None:
    sp = SharePartition(0, lock_ms=1000)
    sp.acquire("m", [(0, 3)], 100, 0)
    assert sp.acknowledge("m", [ack(0, 3, RENEW, ACCEPT, RENEW, RENEW)], 600) == [0]
    assert [(r.first_offset, r.last_offset, r.deadline_ms) for r in sp.ranges()] == [
        (0, 0, 1600),
        (1, 1, -1),
        (2, 3, 1600),
    ]
    assert sp.expire(1000) == 0 and sp.next_deadline() == 1600
    assert sp.expire(1600) == 3
    assert sp.take_changes() is not None
    sp.renew_enabled = False
    sp.acquire("m", [(0, 3)], 100, 2000)
    assert sp.acknowledge("m", [ack(0, 3, RENEW)], 2000) == [INVALID_RECORD_STATE]


# ---- lock expiry, members, start moves -------------------------------------------------------------------
def test_lock_expiry_with_explicit_times() -> None:
    sp = SharePartition(0, lock_ms=1000, delivery_limit=2)
    sp.acquire("a", [(0, 4)], 100, now_ms=0)
    sp.acquire("b", [(5, 9)], 100, now_ms=400)
    assert sp.next_deadline() == 1000
    assert sp.expire(999) == 0
    assert sp.expire(1000) == 5 and sp.next_deadline() == 1400
    assert states(sp) == [(0, 4, A, 1, ""), (5, 9, S, 1, "b")]
    assert sp.acknowledge("a", [ack(0, 4, ACCEPT)], 1001) == [INVALID_RECORD_STATE]
    assert sp.acquire("a", [(0, 4)], 100, 2000) == [R(0, 4, 2)]
    assert sp.expire(5000) == 10  # 0-4 at the limit: archived
    assert states(sp) == [(5, 9, A, 1, "")] and sp.start_offset == 5 and sp.next_deadline() is None


def test_release_member() -> None:
    sp = SharePartition(0, delivery_limit=1)
    sp.acquire("a", [(0, 4)], 100, 0)
    sp.acquire("b", [(5, 9)], 100, 0)
    assert sp.release_member("c", 0) == 0
    assert sp.release_member("b", 0) == 5  # delivered once, limit 1: archived
    assert states(sp) == [(0, 4, S, 1, "a"), (5, 9, X, 1, "")]
    assert sp.acquired_by("b") == 0 and sp.delivery_complete_count() == 5


def test_move_start() -> None:
    sp = SharePartition(0)
    sp.acquire("a", [(0, 9)], 100, 0)
    sp.acknowledge("a", [ack(5, 6, RELEASE)], 0)
    sp.move_start(3)
    assert sp.start_offset == 3 and states(sp) == [(3, 4, S, 1, "a"), (5, 6, A, 1, ""), (7, 9, S, 1, "a")]
    assert sp.acknowledge("a", [ack(0, 4, ACCEPT)], 0) == [0]  # 0-2 ignored
    assert sp.start_offset == 5
    sp.move_start(4)  # not forward: nothing
    assert sp.start_offset == 5
    sp.move_start(25)
    assert sp.start_offset == sp.end_offset == 25 and sp.ranges() == [] and sp.acquired_by("a") == 0
    assert sp.acquire("a", [(20, 29)], 100, 0) == [R(25, 29)]
    delta = sp.take_changes()
    assert delta is not None and delta.start_offset == 25


# ---- throttling near the delivery limit -------------------------------------------------------------------
def _redeliver(sp: SharePartition, batches: list[tuple[int, int]], times: int) -> None:
    for _ in range(times):
        got = sp.acquire("m", batches, 1000, 0, batch_size=10)
        sp.acknowledge("m", [ack(r.first_offset, r.last_offset, RELEASE) for r in got], 0)


def test_throttling_halves_batches_and_delivers_the_last_attempt_alone() -> None:
    sp = SharePartition(0, delivery_limit=5)  # throttled from delivery count 3 on
    batches = [(0, 9)]
    _redeliver(sp, batches, 3)
    assert states(sp) == [(0, 9, A, 3, "")]
    assert sp.acquire("m", batches, 1000, 0) == [R(0, 4, 4)]  # 10 >> 1
    assert sp.acquire("m", batches, 1000, 0) == [R(5, 9, 4)]
    sp.acknowledge("m", [ack(0, 9, RELEASE)], 0)
    # delivery count 4 = limit - 1: each offset alone
    assert sp.acquire("m", batches, 1000, 0) == [R(0, 0, 5)]
    assert sp.acquire("m", batches, 1000, 0) == [R(1, 1, 5)]
    sp.acknowledge("m", [ack(0, 1, RELEASE)], 0)  # at the limit: archived
    assert sp.start_offset == 2 and sp.delivery_complete_count() == 0


def test_a_throttled_batch_is_only_acquired_first() -> None:
    sp = SharePartition(0, delivery_limit=5)
    batches = log_batches(0, 19, 10)
    sp.acquire("m", batches, 1000, 0, batch_size=10)  # in-flight batches 0-9 and 10-19
    sp.acknowledge("m", [ack(0, 9, RELEASE), ack(10, 19, ACCEPT)], 0)
    sp.acquire("m", batches, 1000, 0, batch_size=10)
    sp.acknowledge("m", [ack(0, 9, RELEASE)], 0)
    sp.acquire("m", batches, 1000, 0, batch_size=10)
    sp.acknowledge("m", [ack(0, 9, RELEASE)], 0)  # 0-9 delivered 3 times
    sp2 = SharePartition(0, delivery_limit=5, state_batches=[StateBatch(0, 9, 0, 1), StateBatch(10, 19, 0, 3)])
    assert sp2.acquire("m", batches, 1000, 0) == [R(0, 9, 2)]  # stops before the throttled batch
    assert sp2.acquire("m", batches, 1000, 0) == [R(10, 14, 4)]
    assert sp.acquire("m", batches, 1000, 0) == [R(0, 4, 4)]


# ---- persistence -----------------------------------------------------------------------------------------
def test_state_batches_and_changes() -> None:
    sp = SharePartition(0)
    assert sp.take_changes() is None
    sp.acquire("m", log_batches(0, 19, 5), 100, 0)
    assert sp.take_changes() is None  # acquisitions are not written
    sp.acknowledge("m", [ack(5, 9, ACCEPT), ack(12, 12, RELEASE)], 0)
    delta = sp.take_changes()
    assert delta is not None
    assert delta.start_offset == 0 and delta.delivery_complete_count == 5
    assert delta.state_batches == (StateBatch(5, 9, 2, 1), StateBatch(12, 12, 0, 1))
    assert sp.take_changes() is None
    # the whole window; ACQUIRED written as AVAILABLE with its delivery count
    assert sp.state_batches() == [
        StateBatch(0, 4, 0, 1),
        StateBatch(5, 9, 2, 1),
        StateBatch(10, 19, 0, 1),
    ]
    sp.acknowledge("m", [ack(0, 4, REJECT)], 0)
    delta = sp.take_changes()
    assert delta is not None and delta.start_offset == 10 and delta.state_batches == ()


def test_restore_from_state_batches() -> None:
    batches = [StateBatch(8, 9, 2, 1), StateBatch(10, 14, 0, 2), StateBatch(20, 24, 4, 5), StateBatch(25, 29, 0, 1)]
    sp = SharePartition(10, state_batches=batches, delivery_limit=5)  # 8-9 below the start: trimmed
    assert sp.start_offset == 10 and sp.end_offset == 30
    assert states(sp) == [(10, 14, A, 2, ""), (15, 19, A, 0, ""), (20, 24, X, 5, ""), (25, 29, A, 1, "")]
    assert [r.fetched for r in sp.ranges()] == [True, False, True, True]
    assert sp.delivery_complete_count() == 5 and sp.fetch_offset() == 10
    # the gap 15-19 was never written: acquired as new records, up to the end of the log batch
    # holding the 7th record (16-18)
    assert sp.acquire("m", log_batches(10, 29, 3), 7, 0) == [R(10, 14, 3), R(15, 18)]
    assert sp.state_batches()[1:2] == [StateBatch(15, 18, 0, 1)]
    again = SharePartition(sp.start_offset, state_batches=sp.state_batches())
    assert [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in again.ranges()] == [
        (10, 14, A, 3),
        (15, 18, A, 1),
        (19, 19, A, 0),
        (20, 24, X, 5),
        (25, 29, A, 1),
    ]
    # restored records are available again, with the counts written
    assert SharePartition(0, state_batches=[StateBatch(0, 4, 2, 1)]).start_offset == 5
    with pytest.raises(ValueError):
        SharePartition(0, state_batches=[StateBatch(5, 9, 0, 1), StateBatch(9, 12, 0, 1)])
    with pytest.raises(ValueError):
        SharePartition(0, state_batches=[StateBatch(5, 9, 3, 1)])


def test_a_gap_of_restored_state_missing_from_the_log_is_archived() -> None:
    sp = SharePartition(10, state_batches=[StateBatch(20, 24, 0, 1)])
    assert sp.fetch_offset() == 10
    assert sp.acquire("m", [(20, 24)], 100, 0) == [R(20, 24, 2)]  # 10-19 no longer exist
    assert sp.start_offset == 20 and sp.delivery_complete_count() == 0


def test_memory_stays_bounded_by_the_window() -> None:
    sp = SharePartition(0, max_in_flight=200)
    now = 0
    for i in range(2000):
        now += 1
        got = sp.acquire(f"m{i % 3}", log_batches(sp.fetch_offset(), sp.fetch_offset() + 49, 5), 17, now)
        for r in got:
            t = [ACCEPT, RELEASE, REJECT][(r.first_offset // 5) % 3]
            assert sp.acknowledge(f"m{i % 3}", [ack(r.first_offset, r.last_offset, t)], now) == [0]
        sp.take_changes()
    assert sp.start_offset > 1000
    assert len(sp.ranges()) < 100 and sp.in_flight() <= 250 and len(sp._deadlines) < 300


def test_changes_stay_exact_when_not_taken_for_long() -> None:
    sp = SharePartition(0, max_in_flight=10_000)
    sp.acquire("m", [(0, 999)], 1000, 0)
    assert sp.can_acquire() and sp.state_counts()[S] == 1000
    sp.acknowledge("m", [ack(o, o, ACCEPT if o % 2 else RELEASE) for o in range(1, 1000, 3)], 0)
    delta = sp.take_changes()
    assert delta is not None and delta.start_offset == 0
    written = {
        o: (b.delivery_state, b.delivery_count)
        for b in delta.state_batches
        for o in range(b.first_offset, b.last_offset + 1)
    }
    assert all(written[o] == ((2 if o % 2 else 0), 1) for o in range(1, 1000, 3))
    assert sp.state_counts() == {A: 166, S: 667, K: 167, X: 0}
    # many scattered changes on few runs: the list of changed spans collapses to the window
    sp = SharePartition(0, delivery_limit=100)
    for n in range(1, 4):
        assert sp.acquire("m", [(0, 99)], 100, 0) == [R(0, 99, n)]
        sp.acknowledge("m", [ack(o, o, RELEASE) for o in range(1, 100, 2)], 0)
        sp.acknowledge("m", [ack(o, o, RELEASE) for o in range(0, 100, 2)], 0)
        assert len(sp.ranges()) == 1
    assert len(sp._dirty) <= 2
    delta = sp.take_changes()
    assert delta is not None and delta.state_batches == (StateBatch(0, 99, 0, 3),)


# ---- hypothesis: the state machine against a per-offset model --------------------------------------------
MEMBERS = ("m1", "m2", "m3")
LOG_END = 90
LOCK_MS = 1000


class Rec:
    __slots__ = ("state", "count", "owner", "deadline", "fetched")

    def __init__(self, state: RecordState, count: int, owner: str = "", deadline: int = -1, fetched: bool = True):
        self.state, self.count, self.owner, self.deadline, self.fetched = state, count, owner, deadline, fetched

    def key(self) -> tuple[RecordState, int, str, int, bool]:
        return (self.state, self.count, self.owner, self.deadline, self.fetched)


class Model:
    """One record per in-flight offset: the obvious rules."""

    def __init__(self, start: int, limit: int, batches: list[StateBatch]) -> None:
        self.start, self.end, self.limit = start, start, limit
        self.recs: dict[int, Rec] = {}
        prev = start - 1
        for b in batches:
            if b.last_offset < start:
                continue
            first = max(b.first_offset, start)
            for o in range(prev + 1, first):
                self.recs[o] = Rec(A, 0, fetched=False)
            for o in range(first, b.last_offset + 1):
                self.recs[o] = Rec(RecordState(b.delivery_state), b.delivery_count)
            prev = b.last_offset
            self.end = prev + 1
        self.advance()

    def advance(self) -> None:
        while self.recs:
            o = min(self.recs)
            if self.recs[o].state not in (K, X):
                self.start = o
                return
            del self.recs[o]
        self.start = self.end

    def release(self, o: int) -> None:
        r = self.recs[o]
        r.state = X if r.count >= self.limit else A
        r.owner, r.deadline = "", -1

    def ack_code(self, member: str, b: AckBatch) -> int:
        if b.last_offset < self.start:
            return 0
        if not self.recs:
            return INVALID_RECORD_STATE
        if b.last_offset not in self.recs:
            return INVALID_REQUEST
        for o in range(max(b.first_offset, self.start), b.last_offset + 1):
            r = self.recs.get(o)
            if r is not None and (r.state is not S or r.owner != member):
                return INVALID_RECORD_STATE
        return 0

    def apply_ack(self, b: AckBatch, now: int) -> None:
        for o in range(max(b.first_offset, self.start), b.last_offset + 1):
            r = self.recs.get(o)
            if r is None:
                continue
            t = b.ack_types[0] if len(b.ack_types) == 1 else b.ack_types[o - b.first_offset]
            if t == ACCEPT:
                r.state, r.owner, r.deadline = K, "", -1
            elif t == RELEASE:
                self.release(o)
            elif t == RENEW:
                r.deadline = now + LOCK_MS
            else:
                r.state, r.owner, r.deadline = X, "", -1


class SharePartitionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0

    @initialize(
        start=st.integers(0, 8),
        limit=st.sampled_from([1, 2, 3, 5]),
        max_in_flight=st.sampled_from([6, 20, 1000]),
        sizes=st.lists(st.integers(1, 6), min_size=40, max_size=40),
        restored=st.lists(
            st.tuples(st.integers(0, 3), st.integers(1, 5), st.sampled_from([0, 2, 4]), st.integers(0, 4)),
            max_size=4,
        ),
    )
    def setup(
        self,
        start: int,
        limit: int,
        max_in_flight: int,
        sizes: list[int],
        restored: list[tuple[int, int, int, int]],
    ) -> None:
        self.log: list[tuple[int, int]] = []
        o = 0
        for n in sizes:
            if o >= LOG_END:
                break
            self.log.append((o, min(o + n, LOG_END) - 1))
            o += n
        batches = []
        cursor = max(0, start - 3)
        for gap, length, state, count in restored:
            first = cursor + gap
            batches.append(StateBatch(first, first + length - 1, state, count))
            cursor = first + length
        self.sp = SharePartition(
            start, lock_ms=LOCK_MS, delivery_limit=limit, max_in_flight=max_in_flight, state_batches=batches
        )
        self.model = Model(start, limit, batches)
        self.persisted = {
            o: (b.delivery_state, b.delivery_count)
            for b in batches
            for o in range(max(b.first_offset, start), b.last_offset + 1)
        }

    def _log_from(self, offset: int, count: int) -> list[tuple[int, int]]:
        k = next((i for i, (f, la) in enumerate(self.log) if la >= offset), len(self.log))
        return self.log[k : k + count]

    @rule(
        member=st.sampled_from(MEMBERS),
        n_batches=st.integers(1, 4),
        max_records=st.integers(1, 12),
        batch_size=st.none() | st.integers(1, 8),
        skip_first=st.booleans(),
        dt=st.integers(0, 300),
    )
    def acquire(
        self, member: str, n_batches: int, max_records: int, batch_size: int | None, skip_first: bool, dt: int
    ) -> None:
        self.now += dt
        m = self.model
        fo = self.sp.fetch_offset()
        batches = self._log_from(fo, n_batches)
        if skip_first and len(batches) > 1:
            batches = batches[1:]  # the first batch was compacted away
        if not batches:
            return
        base, last_in_log = batches[0][0], batches[-1][1]
        full = self.sp.in_flight() >= self.sp.max_in_flight
        old_end = m.end
        got = self.sp.acquire(member, batches, max_records, self.now, batch_size=batch_size)
        if fo < base:
            for o in range(fo, base):
                r = m.recs.get(o)
                if r is not None and r.state is A:
                    r.state, r.fetched = X, True
        prev = -1
        for a in got:
            assert prev < a.first_offset <= a.last_offset
            prev = a.last_offset
            for o in range(a.first_offset, a.last_offset + 1):
                assert max(base, m.start) <= o <= last_in_log
                r = m.recs.get(o)
                assert r is None or r.state is A, (o, r and r.key())
                assert not (full and o >= old_end)
                count = 1 if r is None else r.count + 1
                assert a.delivery_count == count
                m.recs[o] = Rec(S, count, member, self.now + LOCK_MS)
            m.end = max(m.end, a.last_offset + 1)
        # progress: an acquirable fetch offset inside the batches read is acquired
        r0 = m.recs.get(fo)
        acquirable = (r0 is not None and r0.state is A) or (r0 is None and fo >= old_end and not full)
        if base <= fo <= last_in_log and acquirable and fo >= m.start:
            assert got, "nothing acquired"
        m.advance()

    @rule(
        member=st.sampled_from(MEMBERS),
        spans=st.lists(st.tuples(st.integers(-3, 12), st.integers(0, 6)), min_size=1, max_size=3),
        types=st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=1, max_size=3),
        per_offset=st.booleans(),
        atomic=st.booleans(),
        dt=st.integers(0, 300),
    )
    def acknowledge(
        self,
        member: str,
        spans: list[tuple[int, int]],
        types: list[int],
        per_offset: bool,
        atomic: bool,
        dt: int,
    ) -> None:
        self.now += dt
        m = self.model
        acks: list[AckBatch] = []
        first = m.start - 3
        for i, (gap, length) in enumerate(spans):
            first = max(0, first + gap) if i == 0 else acks[-1].last_offset + 1 + max(0, gap)
            last = first + length
            t = (
                tuple(types[(o + i) % len(types)] for o in range(length + 1))
                if per_offset
                else (types[i % len(types)],)
            )
            acks.append(AckBatch(first, last, t))
        self.sp.expire(self.now)
        self._expire_model()
        codes = self.sp.acknowledge(member, acks, self.now, atomic=atomic)
        expected: list[int] = []
        snapshot = {o: Rec(*r.key()) for o, r in m.recs.items()}
        for b in acks:
            c = m.ack_code(member, b)
            expected.append(c)
            if c == 0:
                m.apply_ack(b, self.now)
            elif atomic:
                m.recs = snapshot
                expected = [c] * len(acks)
                break
        assert codes == expected
        m.advance()

    def _expire_model(self) -> int:
        n = 0
        for o, r in self.model.recs.items():
            if r.state is S and r.deadline <= self.now:
                self.model.release(o)
                n += 1
        self.model.advance()
        return n

    @rule(dt=st.integers(0, 1500))
    def expire(self, dt: int) -> None:
        self.now += dt
        assert self.sp.expire(self.now) == self._expire_model()

    @rule(member=st.sampled_from(MEMBERS))
    def release_member(self, member: str) -> None:
        n = 0
        for o, r in self.model.recs.items():
            if r.state is S and r.owner == member:
                self.model.release(o)
                n += 1
        self.model.advance()
        assert self.sp.release_member(member, self.now) == n

    @precondition(lambda self: self.model.end > 0)
    @rule(delta=st.integers(-1, 6))
    def move_start(self, delta: int) -> None:
        m = self.model
        offset = m.start + delta
        self.sp.move_start(offset)
        if offset > m.start:
            m.recs = {o: r for o, r in m.recs.items() if o >= offset}
            m.start = offset
            m.end = max(m.end, offset)
            m.advance()

    @invariant()
    def same_state(self) -> None:
        sp, m = self.sp, self.model
        got: dict[int, tuple[RecordState, int, str, int, bool]] = {}
        prev = sp.start_offset - 1
        for r in sp.ranges():
            assert prev < r.first_offset <= r.last_offset < sp.end_offset
            prev = r.last_offset
            assert (r.state is S) == (r.member_id != "") == (r.deadline_ms >= 0)
            for o in range(r.first_offset, r.last_offset + 1):
                got[o] = (r.state, r.delivery_count, r.member_id, r.deadline_ms, r.fetched)
        assert got == {o: r.key() for o, r in m.recs.items()}
        assert (sp.start_offset, sp.end_offset) == (m.start, m.end)
        assert sp.in_flight() == m.end - m.start
        if m.recs:
            assert m.recs[m.start].state in (A, S)
        avail = [o for o, r in m.recs.items() if r.state is A]
        assert sp.fetch_offset() == (min(avail) if avail else m.end)
        assert sp.delivery_complete_count() == sum(r.state in (K, X) for r in m.recs.values())
        for member in MEMBERS:
            assert sp.acquired_by(member) == sum(r.owner == member for r in m.recs.values())
        deadlines = [r.deadline for r in m.recs.values() if r.state is S]
        assert sp.next_deadline() == (min(deadlines) if deadlines else None)
        counts = sp.state_counts()
        assert sum(counts.values()) == len(m.recs)

    @invariant()
    def persisted_state_follows(self) -> None:
        sp, m = self.sp, self.model
        delta = sp.take_changes()
        if delta is not None:
            assert delta.start_offset == m.start
            assert delta.delivery_complete_count == sp.delivery_complete_count()
            for b in delta.state_batches:
                for o in range(b.first_offset, b.last_offset + 1):
                    self.persisted[o] = (b.delivery_state, b.delivery_count)
        for o, r in m.recs.items():
            if r.fetched and r.state is not S:
                assert self.persisted.get(o) == (int(r.state), r.count), (o, r.key())

    @invariant()
    def restores_from_its_state_batches(self) -> None:
        sp, m = self.sp, self.model
        written = sp.state_batches()
        again = SharePartition(sp.start_offset, state_batches=written, delivery_limit=m.limit)
        end = written[-1].last_offset + 1 if written else sp.start_offset
        assert again.start_offset == m.start and again.end_offset == max(end, m.start)
        for o in range(m.start, end):
            r, g = m.recs.get(o), again.state_of(o)
            assert g is not None
            if r is not None and r.fetched:
                assert (g.state, g.delivery_count, g.fetched) == (A if r.state is S else r.state, r.count, True)
            else:
                assert (g.state, g.delivery_count, g.fetched) == (A, 0, False)


TestSharePartitionMachine = SharePartitionMachine.TestCase
TestSharePartitionMachine.settings = settings(
    max_examples=120,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
