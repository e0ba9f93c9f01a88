"""Faults a replicated partition must survive (issue 21, "done when" 2-4), on one etcd and three
real brokers: divergent logs after an unclean-looking handover (KIP-101), a zombie leader paused
past its etcd session, and NOT_ENOUGH_REPLICAS_AFTER_APPEND while an acks=all write waits."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from cluster_process import Cluster
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from test_replication import describe, leader_of, raw_produce, read_all, wait_for

pytestmark = pytest.mark.timeout(300)


def new_topic(c: Cluster, min_isr: int) -> str:
    name = f"f-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": str(min_isr)})])[name].result(15)
    wait_for(lambda: len(describe(c, name)[0]["isr"]) == 3 and describe(c, name)[0]["leader"] > 0, 30, "full ISR")
    return name


def produce_acked(c: Cluster, topic: str, values: list[str], acks: str) -> list[str]:
    acked: list[str] = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": acks, "linger.ms": 0, "message.timeout.ms": 30000})
    for v in values:
        p.produce(
            topic,
            v.encode(),
            partition=0,
            on_delivery=lambda err, msg: None if err else acked.append(msg.value().decode()),
        )
    p.flush(40)
    return acked


def files_of(c: Cluster, node: int, topic: str) -> dict[str, bytes]:
    d = c.brokers[node].data_dir / f"{topic}-0"
    return {
        f.name: f.read_bytes()
        for f in sorted(d.iterdir())
        if f.suffix in (".log", ".index", ".timeindex", ".txnindex") or f.name == "leader-epoch-checkpoint"
    }


def log_ends(c: Cluster) -> dict[int, int]:
    """Where each broker's log file ends now (what it logs later starts there)."""
    return {i: b.log_path.stat().st_size for i, b in c.brokers.items()}


def logged_since(c: Cluster, marks: dict[int, int], needles: list[str]) -> set[int]:
    """The brokers whose log, past `marks`, holds any of `needles`."""
    found = set()
    for i, start in marks.items():
        with open(c.brokers[i].log_path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        if any(n in text for n in needles):
            found.add(i)
    return found


def wait_logged(c: Cluster, marks: dict[int, int], needles: list[str], timeout: float, what: str) -> None:
    """Until every broker has logged one of `needles` past `marks`."""
    try:
        wait_for(lambda: logged_since(c, marks, needles) == set(marks), timeout, what)
    except AssertionError as e:
        missing = sorted(set(marks) - logged_since(c, marks, needles))
        raise AssertionError(f"{e}: nothing like {needles} from brokers {missing}\n{c.logs('etcd', 'lease')}") from None


def test_divergent_old_leader_truncates_and_converges_byte_for_byte(cluster):
    c = cluster
    topic = new_topic(c, min_isr=1)
    committed = produce_acked(c, topic, [f"a-{i}" for i in range(50)], "all")
    assert len(committed) == 50
    old = leader_of(c, topic, 0)
    followers = [b for b in c.brokers if b != old]
    for b in followers:
        c.pause(b)
    try:
        r = raw_produce(c.brokers[old].bootstrap, topic, 1, b"only-on-the-old-leader")
        assert r.error_code.value == 0 and r.base_offset == 50, r  # acks=1: on the leader alone
        for i in range(5):
            assert raw_produce(c.brokers[old].bootstrap, topic, 1, b"lost-%d" % i).error_code.value == 0
        c.brokers[old].kill()
    finally:
        for b in followers:
            c.resume(b)
    wait_for(lambda: leader_of(c, topic, 0) in followers, 30, "a follower elected")
    new = leader_of(c, topic, 0)
    r = raw_produce(c.brokers[new].bootstrap, topic, -1, b"new-leader-0", timeout_ms=20000)
    # A follower may still receive what answered its last fetch before the pause (in flight in
    # the socket), never more: the new leader writes at an offset the old leader already used.
    assert r.error_code.value == 0 and 50 <= r.base_offset <= 51, r
    carried = ["only-on-the-old-leader", *[f"lost-{i}" for i in range(5)]][: r.base_offset - 50]
    more = produce_acked(c, topic, [f"b-{i}" for i in range(20)], "all")
    assert len(more) == 20
    c.brokers[old].start()
    wait_for(lambda: len(describe(c, topic)[0]["isr"]) == 3, 40, "the old leader back in the ISR")
    wait_for(
        lambda: (
            files_of(c, old, topic)
            == files_of(c, new, topic)
            == files_of(c, followers[0], topic)
            == files_of(c, followers[1], topic)
        ),
        20,
        "the three replicas byte for byte identical",
    )
    values = [v.decode() for v in read_all(c, topic, 1)[0]]
    assert values == committed + carried + ["new-leader-0"] + more  # the old leader's other writes are gone


def test_zombie_leader_acknowledges_nothing_after_its_session(cluster):
    c = cluster
    topic = new_topic(c, min_isr=2)
    committed = produce_acked(c, topic, [f"z-{i}" for i in range(30)], "all")
    zombie = leader_of(c, topic, 0)
    result: list = []

    def write_to_zombie() -> None:
        result.append(raw_produce(c.brokers[zombie].bootstrap, topic, -1, b"zombie-write", timeout_ms=15000))

    c.pause(zombie)
    try:
        t = threading.Thread(target=write_to_zombie)
        t.start()  # the request waits in the paused broker's socket
        wait_for(lambda: leader_of(c, topic, 0) not in (zombie, -1), 30, "a new leader while the old one is paused")
        after = produce_acked(c, topic, [f"n-{i}" for i in range(10)], "all")
        assert len(after) == 10
    finally:
        c.resume(zombie)
    t.join(40)
    assert result and result[0].error_code.value != 0, result  # not acknowledged
    wait_for(lambda: len(describe(c, topic)[0]["isr"]) == 3, 40, "the zombie back as a follower")
    st = describe(c, topic)[0]
    assert st["leader"] != zombie
    values = [v.decode() for v in read_all(c, topic, 1)[0]]
    assert values == committed + after  # nothing acknowledged lost, the zombie's write gone


def test_not_enough_replicas_after_append(cluster):
    c = cluster
    topic = new_topic(c, min_isr=2)
    leader = leader_of(c, topic, 0)
    followers = [b for b in c.brokers if b != leader]
    for b in followers:
        c.pause(b)
    try:
        t0 = time.monotonic()
        r = raw_produce(c.brokers[leader].bootstrap, topic, -1, b"waits", timeout_ms=60000)
        assert r.error_code.value == 20, r  # NOT_ENOUGH_REPLICAS_AFTER_APPEND: appended, ISR fell below min
        assert time.monotonic() - t0 < 55
        r = raw_produce(c.brokers[leader].bootstrap, topic, -1, b"refused")
        assert r.error_code.value == 19, r  # NOT_ENOUGH_REPLICAS: now refused before appending
    finally:
        for b in followers:
            c.resume(b)
    wait_for(lambda: len(describe(c, topic)[0]["isr"]) == 3, 40, "the ISR full again")
    r = raw_produce(c.brokers[leader_of(c, topic, 0)].bootstrap, topic, -1, b"fine", timeout_ms=20000)
    assert r.error_code.value == 0, r


def test_etcd_away_brokers_keep_serving_the_last_known_state(cluster):
    c = cluster
    topic = new_topic(c, min_isr=2)
    before = produce_acked(c, topic, [f"e-{i}" for i in range(20)], "all")
    state = describe(c, topic)[0]
    session_s = int(c.brokers[1].overrides["broker.session.timeout.ms"]) / 1000
    marks = log_ends(c)
    c.etcd.pause()
    paused = time.monotonic()
    try:
        # longer than a broker session: nobody can renew a lease (each broker says so once a
        # keepalive failed a whole session after its last success)
        wait_logged(c, marks, ["etcd unreachable for a whole session"], 60, "a whole session without etcd")
        assert time.monotonic() - paused >= session_s
        during = produce_acked(c, topic, [f"d-{i}" for i in range(20)], "all")
        assert len(during) == 20  # the ISR is whole: acks=all needs no etcd
        assert describe(c, topic)[0] == state  # no election, no ISR change
    finally:
        marks = log_ends(c)
        c.etcd.resume()
    # etcd answers again: every broker has a live lease (renewed, or registered again after etcd
    # expired it), and the partition is led with its whole ISR
    wait_logged(
        c,
        marks,
        ["etcd answers again; lease", "registered again after the lease loss"],
        60,
        "every broker's lease back after etcd resumed",
    )
    wait_for(
        lambda: describe(c, topic)[0]["leader"] > 0 and len(describe(c, topic)[0]["isr"]) == 3,
        40,
        "the partition led with its whole ISR after etcd resumed",
    )
    after = produce_acked(c, topic, [f"a-{i}" for i in range(20)], "all")
    assert len(after) == 20
    assert [v.decode() for v in read_all(c, topic, 1)[0]] == before + during + after
