"""The history checker (tests/history.py) finds each anomaly class it names, and none in a clean
history: the checker the cluster tests rely on cannot pass by construction."""

from __future__ import annotations

from history import History


def clean() -> History:
    h = History()
    for i in range(4):
        h.send("p", f"v{i}")
        h.ack("p", f"v{i}", 0, i)
    h.final(0, [(i, f"v{i}") for i in range(4)])
    for i in range(4):
        h.poll("c", 0, i, f"v{i}")
    return h


def found(h: History) -> dict:
    return {k: v for k, v in h.check().items() if v}


def test_clean_history_has_no_anomaly():
    assert found(clean()) == {}


def test_lost_write():
    h = clean()
    h.final(0, [(0, "v0"), (1, "v1"), (3, "v3")])
    assert found(h) == {"lost-write": [("v2", 0, 2)]}


def test_duplicate_and_inconsistent_offsets():
    h = clean()
    h.final(0, [(0, "v0"), (1, "v1"), (2, "v2"), (3, "v3"), (4, "v1")])
    assert found(h)["duplicate"] == [("v1", [(0, 1), (0, 4)])]
    h2 = clean()
    h2.poll("c2", 0, 2, "other")
    assert found(h2)["inconsistent-offsets"] == [(0, 2, ["other", "v2"])]


def test_nonmonotonic_send():
    for unordered, expect in ((frozenset(), True), (frozenset({"p"}), False), (frozenset({"q"}), True)):
        h = History(unordered=unordered)  # a producer named unordered may be reordered
        for i, off in enumerate([0, 2, 1]):
            h.send("p", f"v{i}")
            h.ack("p", f"v{i}", 0, off)
        h.final(0, [(0, "v0"), (1, "v2"), (2, "v1")])
        assert bool(h.check()["nonmonotonic-send"]) is expect, unordered


def test_nonmonotonic_poll_and_skip_and_reassign():
    h = clean()
    h.poll("d", 0, 2, "v2")
    h.poll("d", 0, 1, "v1")  # backwards
    assert found(h)["nonmonotonic-poll"] == [("d", 0, 2, 1)]
    h = clean()
    h.poll("d", 0, 0, "v0")
    h.poll("d", 0, 3, "v3")  # skipped 1 and 2
    assert found(h)["poll-skip"] == [("d", 0, 0, 3, 1)]
    h = clean()
    h.poll("d", 0, 3, "v3")
    h.reassign("d")  # a seek: the next poll may go anywhere
    h.poll("d", 0, 0, "v0")
    assert found(h) == {}


def test_aborted_read():
    h = clean()
    h.aborted("v2")
    assert found(h)["aborted-read"] == [("c", 0, 2, "v2")]


def test_lost_write_past_the_end_of_a_complete_final_read():
    h = clean()
    h.send("p", "v4")
    h.ack("p", "v4", 0, 4)  # acknowledged at the tail, which the final log no longer has
    assert found(h) == {}  # a read that may have stopped early: offset 4 is past what was read
    h.final(0, [(i, f"v{i}") for i in range(4)], complete=True)
    assert found(h) == {"lost-write": [("v4", 0, 4)]}


def test_non_idempotent_producer_never_writes_a_value_twice():
    h = clean()
    h.send("nr", "n0")
    h.fail("nr", "n0")  # retries=0: told it failed; it may be in the log, once
    h.send("nr", "n1")
    h.fail("nr", "n1")
    h.final(0, [*((i, f"v{i}") for i in range(4)), (4, "n0")], complete=True)
    assert found(h) == {}  # a failed write once in the log, another absent: both fine
    h.final(0, [*((i, f"v{i}") for i in range(4)), (4, "n0"), (5, "n0")], complete=True)
    assert found(h) == {"duplicate": [("n0", [(0, 4), (0, 5)])]}
    assert h.by_client() == {"duplicate": {"nr": 1}}


def txn_history() -> History:
    h = History()
    for t, outcome in enumerate(("committed", "aborted", "unknown", "unknown")):
        vals = [f"t{t}-{q}" for q in range(2)]
        for q, v in enumerate(vals):
            h.send("tx", v)
            h.ack("tx", v, q, t)
        h.txn("tx", vals, outcome)
    return h


def test_transactions_whole_in_a_read_committed_final_log():
    h = txn_history()
    # committed t0 whole, aborted t1 absent, unknown t2 committed whole, unknown t3 aborted whole
    h.final(0, [(0, "t0-0"), (2, "t2-0")], read_committed=True, complete=True)
    h.final(1, [(0, "t0-1"), (2, "t2-1")], read_committed=True, complete=True)
    assert found(h) == {}
    h.poll("rc", 0, 1, "t1-0")
    assert found(h) == {"aborted-read": [("rc", 0, 1, "t1-0")]}


def test_transactions_lost_partial_and_aborted_in_the_final_log():
    h = txn_history()
    h.final(0, [(0, "t0-0"), (1, "t1-0"), (2, "t2-0")], read_committed=True, complete=True)
    h.final(1, [(3, "t3-1")], read_committed=True, complete=True)
    got = found(h)
    assert got["txn-lost"] == [("tx", 0, "1 of 2 missing", ["t0-1"])]
    assert got["txn-partial"] == [("tx", 2, "1 of 2 missing", ["t2-1"]), ("tx", 3, "1 of 2 missing", ["t3-0"])]
    assert got["aborted-read"] == [("final", 0, 1, "t1-0")]
    assert "lost-write" not in got  # values of transactions: the txn classes say it
    assert h.by_client(got) == {"aborted-read": {"tx": 1}, "txn-lost": {"tx": 1}, "txn-partial": {"tx": 2}}


def test_read_uncommitted_final_log_may_hold_aborted_values():
    h = txn_history()
    h.final(0, [(0, "t0-0"), (1, "t1-0")])
    h.final(1, [(0, "t0-1"), (1, "t1-1")])
    assert found(h) == {}  # not read_committed: neither aborted-read nor the transaction rules apply


def test_only_librdkafkas_own_resends_explain_a_retries_0_duplicate():
    """The nemesis counts a duplicate of the retries=0 producer apart only when librdkafka logged
    re-sending that many records of the partition after dropping a broker (ResentBatches)."""
    import logging

    from nemesis_clients import ResentBatches

    rb = ResentBatches("t")

    def line(msg: str) -> None:
        rb.emit(logging.LogRecord("rk", logging.DEBUG, "", 0, "%s", (msg,), None))

    line(
        "MSGSET [rdkafka#producer-2] [thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [0]: MessageSet with 2 message(s) "
        "(MsgId 0, BaseSeq -1) encountered error: Local: Broker handle destroyed without termination "
        "(actions Refresh,MsgNotPersisted)"
    )
    line(
        "MSGSET [rdkafka#producer-2] [thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [1]: MessageSet with 9 message(s) "
        "(MsgId 0, BaseSeq -1) encountered error: Broker: Not leader for partition (actions Refresh)"
    )
    line(
        "MSGSET [rdkafka#producer-2] [thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: tx [1]: MessageSet with 9 message(s) "
        "(MsgId 0, BaseSeq -1) encountered error: Local: Broker handle destroyed without termination"
    )
    assert (rb.batches, dict(rb.count)) == (1, {0: 2})
    a, b = ("n0", [(0, 4), (0, 9)]), ("n1", [(0, 5), (0, 10)])
    acks = {"n0": (0, 9), "n1": (0, 10), "n2": (0, 11), "n3": (1, 7), "n4": (0, 6)}
    assert rb.explained([a, b], acks) == [a, b]
    assert rb.explained([a, b, ("n2", [(0, 6), (0, 11)])], acks) == []  # more than it re-sent there
    assert rb.explained([("n3", [(1, 3), (1, 7)])], acks) == []  # nothing re-sent on partition 1
    assert rb.explained([("n4", [(0, 6), (0, 12)])], acks) == []  # acknowledged at the first copy
