"""Consumer groups without a network: the state table, __consumer_offsets formats (golden bytes),
the store's replay rules, Kafka's group -> partition rule, and the reset-offsets planner."""

import asyncio
import datetime as dt

import pytest

from tidelog.cli.groups import (
    ResetSpec,
    UsageError,
    parse_assignment,
    parse_duration,
    parse_instant,
    parse_topic_spec,
    plan_reset,
)
from tidelog.groups import records as R
from tidelog.groups.group import parse_subscription_topics
from tidelog.groups.state import TRANSITIONS, Event, IllegalTransition, next_state
from tidelog.groups.state import GroupState as S
from tidelog.groups.store import MemoryGroupLog, OffsetStore
from tidelog.log.errors import LogError

# ---- state machine -----------------------------------------------------------------------------

LEGAL = [
    (S.EMPTY, Event.REBALANCE, S.PREPARING_REBALANCE),
    (S.STABLE, Event.REBALANCE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, Event.REBALANCE, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, Event.JOIN_COMPLETE, S.COMPLETING_REBALANCE),
    (S.PREPARING_REBALANCE, Event.JOIN_COMPLETE_EMPTY, S.EMPTY),
    (S.COMPLETING_REBALANCE, Event.ASSIGNMENT_SYNCED, S.STABLE),
    (S.EMPTY, Event.LOADED_ACTIVE, S.STABLE),
] + [(s, Event.DELETED, S.DEAD) for s in S]


@pytest.mark.parametrize("state,event,target", LEGAL)
def test_legal_transitions(state, event, target):
    assert next_state(state, event) is target


def test_table_is_exactly_the_legal_set():
    assert {(s, e): t for s, e, t in LEGAL} == TRANSITIONS


@pytest.mark.parametrize("state", list(S))
@pytest.mark.parametrize("event", list(Event))
def test_everything_else_is_illegal(state, event):
    if (state, event) in TRANSITIONS:
        return
    with pytest.raises(IllegalTransition):
        next_state(state, event)


def test_kafka_valid_previous_states():
    # Kafka's GroupMetadata.validPreviousStates, read off the table.
    prev = {t: set() for t in S}
    for (s, _), t in TRANSITIONS.items():
        prev[t].add(s)
    assert prev[S.PREPARING_REBALANCE] == {S.EMPTY, S.STABLE, S.COMPLETING_REBALANCE}
    assert prev[S.COMPLETING_REBALANCE] == {S.PREPARING_REBALANCE}
    assert prev[S.STABLE] == {S.COMPLETING_REBALANCE, S.EMPTY}  # Empty -> Stable only when loading
    assert prev[S.EMPTY] == {S.PREPARING_REBALANCE}
    assert prev[S.DEAD] == set(S)


# ---- record formats --------------------------------------------------------------------------

KEY_BYTES = bytes.fromhex("000100016700017400000003")
VALUE_V3 = bytes.fromhex("0003000000000000000a0000000500026d6400000000000003e8")
VALUE_V1 = bytes.fromhex("0001000000000000000a000000000000000003e800000000000007d0")
GROUP_KEY = bytes.fromhex("000200026731")


def test_offset_key_golden():
    assert R.encode_offset_key(R.OffsetKey("g", "t", 3)) == KEY_BYTES
    assert R.decode_key(KEY_BYTES) == R.OffsetKey("g", "t", 3)
    assert R.decode_key(bytes.fromhex("000000016700017400000003")) == R.OffsetKey("g", "t", 3)


def test_offset_value_golden():
    v = R.OffsetValue(10, "md", 1000, leader_epoch=5)
    assert R.encode_offset_value(v) == VALUE_V3
    assert R.decode_offset_value(VALUE_V3) == v
    expiring = R.OffsetValue(10, "", 1000, expire_timestamp=2000)
    assert R.encode_offset_value(expiring) == VALUE_V1
    assert R.decode_offset_value(VALUE_V1) == expiring
    assert R.decode_offset_value(bytes.fromhex("0000000000000000000a000000000000000003e8")) == R.OffsetValue(
        10, "", 1000
    )
    with pytest.raises(R.RecordFormatError):
        R.decode_offset_value(bytes.fromhex("0004") + VALUE_V3[2:])


def test_group_key_and_value_golden():
    assert R.encode_group_key(R.GroupKey("g1")) == GROUP_KEY
    assert R.decode_key(GROUP_KEY) == R.GroupKey("g1")
    member = R.MemberValue("m-1", "cid", "/127.0.0.1", 30000, 10000, b"\x00\x01", b"\x02", "inst")
    value = R.GroupValue("consumer", 7, "range", "m-1", 1234, (member,))
    data = R.encode_group_value(value)
    expected = (
        bytes.fromhex("00030008")
        + b"consumer"
        + bytes.fromhex("000000070005")
        + b"range"
        + bytes.fromhex("0003")
        + b"m-1"
        + bytes.fromhex("00000000000004d2000000010003")
        + b"m-1"
        + bytes.fromhex("0004")
        + b"inst"
        + bytes.fromhex("0003")
        + b"cid"
        + bytes.fromhex("000a")
        + b"/127.0.0.1"
        + bytes.fromhex("00007530000027100000000200010000000102")
    )
    assert data == expected
    assert R.decode_group_value(data) == value


def test_group_value_v0_reads_session_as_rebalance_timeout():
    v0 = (
        bytes.fromhex("00000001")
        + b"c"
        + bytes.fromhex("00000002ffffffff000000010001")
        + b"m"
        + bytes.fromhex("0001")
        + b"c"
        + bytes.fromhex("0001")
        + b"h"
        + bytes.fromhex("000013880000000000000000")
    )
    g = R.decode_group_value(v0)
    assert g.protocol is None and g.leader is None and g.generation == 2
    assert g.members[0].session_timeout == 5000 and g.members[0].rebalance_timeout == 5000
    assert g.members[0].group_instance_id is None


@pytest.mark.parametrize(
    "group,hash_",
    [("", 0), ("a", 97), ("hello", 99162322), ("polygenelubricants", -(1 << 31)), ("\U0001f600", 0xD83D * 31 + 0xDE00)],
)
def test_java_string_hash(group, hash_):
    assert R.java_string_hash(group) == hash_


def test_partition_for_follows_kafka():
    assert R.partition_for("polygenelubricants", 50) == 0  # abs(Integer.MIN_VALUE) is 0 in Utils.abs
    assert R.partition_for("hello", 50) == 99162322 % 50
    h = R.java_string_hash("my-group")
    assert R.partition_for("my-group", 50) == abs(h) % 50


# ---- store replay ------------------------------------------------------------------------------


def run(coro):
    return asyncio.run(coro)


def test_store_replays_last_write_and_tombstones():
    log = MemoryGroupLog()
    s = OffsetStore(log, 50)
    run(s.commit("g", {("t", 0): R.OffsetValue(1, "", 10), ("t", 1): R.OffsetValue(2, "", 10)}))
    run(s.commit("g", {("t", 0): R.OffsetValue(5, "x", 20)}))
    run(s.delete_offsets("g", [("t", 1)]))
    run(s.store_group("g", R.GroupValue("consumer", 3, "range", None)))
    run(s.commit("h", {("t", 0): R.OffsetValue(9, "", 10)}))
    run(s.delete_group("h"))
    # everything went to the group's own partition
    assert set(log.partitions) == {R.partition_for("g", 50), R.partition_for("h", 50)}
    again = OffsetStore(log, 50)
    again.load()
    assert again.offsets == {"g": {("t", 0): R.OffsetValue(5, "x", 20)}}
    assert again.groups == {"g": R.GroupValue("consumer", 3, "range", None)}


def test_transactional_offsets_visible_only_after_commit_marker():
    log = MemoryGroupLog()
    s = OffsetStore(log, 3)
    run(s.stage(42, 0, "g", {("t", 0): R.OffsetValue(7, "", 1)}))
    run(s.stage(43, 0, "g", {("t", 1): R.OffsetValue(8, "", 1)}))
    assert s.committed("g") == {} and s.has_pending("g", ("t", 0))
    run(s.complete(42, 0, commit=True))
    run(s.complete(43, 0, commit=False))
    assert s.committed("g") == {("t", 0): R.OffsetValue(7, "", 1)}
    assert not s.has_pending("g", ("t", 1))
    replayed = OffsetStore(log, 3)
    replayed.load()
    assert replayed.offsets == s.offsets and replayed.pending == {}
    # staged but never completed (a crash before the marker): still pending, invisible
    run(s.stage(44, 0, "g", {("t", 2): R.OffsetValue(1, "", 1)}))
    crashed = OffsetStore(log, 3)
    crashed.load()
    assert ("t", 2) not in crashed.committed("g") and crashed.has_pending("g", ("t", 2))


class UnknownOutcomeLog(MemoryGroupLog):
    """A log whose next append lands but answers an error, as a coordinator write does that is on
    the leader's log but not yet replicated when its wait ends (its outcome unknown)."""

    fail_next = False

    def append(self, *args, **kwargs):
        super().append(*args, **kwargs)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("not replicated in time")


def test_a_marker_is_written_where_nothing_is_staged_in_memory():
    """Simulation seed 3069: an exactly-once copier's TxnOffsetCommit landed in the log but its
    write answered an error, so the coordinator's memory did not stage it; the transaction was
    fenced and aborted, and its ABORT marker, finding nothing staged, was not written. The next
    transaction's COMMIT marker then made the orphaned offsets committed on replay: offsets of an
    aborted transaction, whose copied records were aborted - records skipped. As Kafka (and as
    the data partitions do), the marker is written whatever memory holds."""
    log = UnknownOutcomeLog()
    s = OffsetStore(log, 1)
    log.fail_next = True
    with pytest.raises(RuntimeError):
        run(s.stage(42, 0, "g", {("t", 2): R.OffsetValue(69, "", 1)}))  # in the log, not in memory
    run(s.complete_partition(42, 0, False, 0))  # the fenced transaction's abort
    run(s.stage(42, 2, "g", {("t", 0): R.OffsetValue(70, "", 1)}))  # the next transaction
    run(s.complete_partition(42, 2, True, 0))
    replayed = OffsetStore(log, 1)
    replayed.load()
    assert replayed.committed("g") == s.committed("g") == {("t", 0): R.OffsetValue(70, "", 1)}


def test_a_transactional_write_of_an_ended_transaction_is_fenced():
    """Simulation seed 5384: an exactly-once copier's TxnOffsetCommit (producer epoch 4) was held
    up in the network while the copier was re-initialised - its transaction aborted, marker
    written at epoch 5, the producer at epoch 6. When the old request arrived, the coordinator
    staged its offsets, and the copier's next transaction's COMMIT marker made them committed:
    the position of copies that had been aborted, source records skipped. A transactional write
    older than the latest epoch the partition saw for its producer is refused, also after a
    coordinator reloads the partition."""
    log = MemoryGroupLog()
    s = OffsetStore(log, 1)
    run(s.stage(42, 4, "g", {("t", 0): R.OffsetValue(320, "", 1)}))
    run(s.complete_partition(42, 5, False, 0))  # aborted: the producer re-initialised
    with pytest.raises(LogError) as late:
        run(s.stage(42, 4, "g", {("t", 0): R.OffsetValue(340, "", 1)}))  # the held-up request
    assert late.value.error_code == 47  # INVALID_PRODUCER_EPOCH
    run(s.stage(42, 6, "g", {("t", 1): R.OffsetValue(342, "", 1)}))  # the next transaction
    run(s.complete_partition(42, 6, True, 0))
    assert s.committed("g") == {("t", 1): R.OffsetValue(342, "", 1)}
    moved = OffsetStore(log, 1)  # the next coordinator replays the partition
    moved.load()
    assert moved.committed("g") == {("t", 1): R.OffsetValue(342, "", 1)}
    with pytest.raises(LogError):
        run(moved.stage(42, 5, "g", {("t", 0): R.OffsetValue(340, "", 1)}))


# ---- consumer protocol parsing -----------------------------------------------------------------


def test_subscription_and_assignment_parsing():
    sub = bytes.fromhex("0001000000020001") + b"a" + bytes.fromhex("0002") + b"bb" + bytes.fromhex("ffffffff")
    assert parse_subscription_topics(sub) == {"a", "bb"}
    assert parse_subscription_topics(b"\x00") is None
    asg = bytes.fromhex("0000000000010001") + b"a" + bytes.fromhex("000000020000000000000003ffffffff")
    assert parse_assignment(asg) == [("a", 0), ("a", 3)]


# ---- reset-offsets planning --------------------------------------------------------------------


def test_parse_duration_and_instant():
    assert parse_duration("PT2H") == dt.timedelta(hours=2)
    assert parse_duration("P1DT30M") == dt.timedelta(days=1, minutes=30)
    assert parse_duration("-PT1.5S") == -dt.timedelta(seconds=1.5)
    for bad in ("2H", "P", "PT", "PTXH"):
        with pytest.raises(UsageError):
            parse_duration(bad)
    now = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    assert parse_instant("-PT30M", now) == int(now.timestamp() * 1000) - 30 * 60_000
    assert parse_instant("2026-01-01T10:00:00Z") == int(dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC).timestamp() * 1000)
    assert (
        parse_instant("2026-01-01T10:00:00.250+02:00")
        == int(dt.datetime(2026, 1, 1, 8, tzinfo=dt.UTC).timestamp() * 1000) + 250
    )
    with pytest.raises(UsageError):
        parse_instant("yesterday")
    assert parse_topic_spec("t") == ("t", None)
    assert parse_topic_spec("t:2,0") == ("t", [0, 2])


def test_plan_reset_clamps_like_kafka():
    tps = [("t", 0), ("t", 1)]
    lo, hi = {("t", 0): 10, ("t", 1): 0}, {("t", 0): 100, ("t", 1): 5}
    cur = {("t", 0): 50}
    assert plan_reset(ResetSpec("to-offset", 60), tps, cur, lo, hi, {}) == {("t", 0): 60, ("t", 1): 5}
    assert plan_reset(ResetSpec("to-earliest"), tps, cur, lo, hi, {}) == lo
    assert plan_reset(ResetSpec("to-latest"), tps, cur, lo, hi, {}) == hi
    assert plan_reset(ResetSpec("shift-by", -45), [("t", 0)], cur, lo, hi, {}) == {("t", 0): 10}
    with pytest.raises(UsageError):
        plan_reset(ResetSpec("shift-by", 1), tps, cur, lo, hi, {})
    # by time: the found offset, or the log end when no record is at or after the time
    assert plan_reset(ResetSpec("to-datetime", 1), tps, cur, lo, hi, {("t", 0): 42, ("t", 1): -1}) == {
        ("t", 0): 42,
        ("t", 1): 5,
    }
