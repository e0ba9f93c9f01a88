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
    h = History()
    for i, off in enumerate([0, 2, 1]):
        h.send("p", f"v{i}")
        h.ack("p", f"v{i}", 0, off)
    h.final(0, [(0, "v0"), (1, "v2"), (2, "v1")])
    assert found(h)["nonmonotonic-send"]


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
