"""Consumer groups that really consume (needs Produce, Fetch and ListOffsets): a mixed group of
confluent-kafka, kafka-python and aiokafka consumers sharing a 6-partition topic, kcat -G,
committed offsets surviving a broker restart, and rewinding a group by time with
`tidelog groups reset-offsets` checked against a scan of what was produced."""

from __future__ import annotations

import collections
import datetime as dt
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.interop

FAST = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "5",
}

WORKER = textwrap.dedent('''
    """One group member; prints "partition offset" for each record once its commit succeeded.

    A failed commit (rebalance, broker restart) seeks back to the record, so it is delivered again
    to whoever owns the partition next: printed records are exactly the committed ones."""
    import asyncio, signal, sys
    kind, bootstrap, group, topic = sys.argv[1:5]
    SESSION_MS = 15000  # longer than a broker restart on a busy machine
    stop = False

    def on_term(*_):
        global stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)

    def out(p, o):
        print(p, o, flush=True)

    def log(*a):
        print(*a, file=sys.stderr, flush=True)

    if kind == "confluent":
        from confluent_kafka import Consumer, KafkaException, TopicPartition
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "broker.address.family": "v4",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "partition.assignment.strategy": "roundrobin", "session.timeout.ms": SESSION_MS,
                      "heartbeat.interval.ms": 250, "fetch.wait.max.ms": 100})
        c.subscribe([topic], on_assign=lambda _c, ps: log("assigned", [p.partition for p in ps]))
        while not stop:
            m = c.poll(0.1)
            if m is None or m.error():
                continue
            try:
                c.commit(message=m, asynchronous=False)
            except KafkaException as e:
                log("commit failed", m.partition(), m.offset(), e)
                try:
                    c.seek(TopicPartition(topic, m.partition(), m.offset()))
                except KafkaException as e2:
                    log("seek failed", e2)
                continue
            out(m.partition(), m.offset())
        c.close()
    elif kind == "kafka-python":
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata
        c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                          auto_offset_reset="earliest", partition_assignment_strategy=[RoundRobinPartitionAssignor],
                          session_timeout_ms=SESSION_MS, heartbeat_interval_ms=250, fetch_max_wait_ms=100)
        while not stop:
            try:
                batches = c.poll(timeout_ms=100)
            except KafkaError as e:  # e.g. ECONNREFUSED while the broker restarts: poll again, as an app would
                log("poll failed", repr(e))
                continue
            for tp, recs in batches.items():
                for r in recs:
                    try:
                        c.commit({tp: OffsetAndMetadata(r.offset + 1, "", -1)})
                    except KafkaError as e:
                        log("commit failed", tp.partition, r.offset, repr(e))
                        try:
                            c.seek(tp, r.offset)
                        except Exception as e2:  # revoked meanwhile
                            log("seek failed", repr(e2))
                        break
                    out(tp.partition, r.offset)
        c.close()
    else:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
        from aiokafka.errors import KafkaError

        class Rebalances(ConsumerRebalanceListener):
            """aiokafka rebalances in the background: the revocation waits for the batch being
            processed, so no record is committed after a new owner read the committed offsets."""

            def __init__(self, lock):
                self.lock = lock

            async def on_partitions_revoked(self, revoked):
                async with self.lock:
                    pass

            async def on_partitions_assigned(self, assigned):
                log("assigned", sorted(tp.partition for tp in assigned))

        async def main():
            lock = asyncio.Lock()
            c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                 auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
                                 heartbeat_interval_ms=250, fetch_max_wait_ms=100)
            c.subscribe([topic], listener=Rebalances(lock))
            await c.start()
            try:
                while not stop:
                    async with lock:
                        batches = await c.getmany(timeout_ms=100)
                        for tp, recs in batches.items():
                            for r in recs:
                                try:
                                    await c.commit({tp: r.offset + 1})
                                except KafkaError as e:
                                    log("commit failed", tp.partition, r.offset, repr(e))
                                    try:
                                        c.seek(tp, r.offset)
                                    except Exception as e2:  # revoked meanwhile
                                        log("seek failed", repr(e2))
                                    break
                                out(tp.partition, r.offset)
                    await asyncio.sleep(0)
            finally:
                await c.stop()

        asyncio.run(main())
''')


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin_of(b) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4"})


def make_topic(b, partitions: int = 6) -> str:
    name = unique("ct")
    admin = admin_of(b)  # keep the handle alive until the result arrives
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return name


def produce(b, topic: str, count: int, partitions: int = 6, timestamps=None, start: int = 0) -> list[tuple]:
    """Produce `count` records round-robin over partitions; returns (partition, offset, timestamp)."""
    p = Producer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "linger.ms": 5})
    acked: list[tuple] = []

    def report(err, msg):
        assert err is None, err
        acked.append((msg.partition(), msg.offset(), msg.timestamp()[1]))

    for i in range(start, start + count):
        kw = {} if timestamps is None else {"timestamp": timestamps(i)}
        p.produce(
            topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % partitions, on_delivery=report, **kw
        )
    assert p.flush(20) == 0
    return acked


def committed(b, group: str) -> dict[int, int]:
    admin = admin_of(b)
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


class Worker:
    """A group member in its own process: one of the WORKER kinds, or kcat -G (`kcat` = its path)."""

    def __init__(self, kind: str, b, group: str, topic: str, out: Path, kcat: str | None = None) -> None:
        self.kind = kind
        self.out = out
        self.file = open(out, "w")
        self.err = open(out.with_suffix(".err"), "w")
        if kind == "kcat":
            # librdkafka's auto commit, stored as records are printed and committed on revoke and close.
            cmd = [
                kcat,
                "-b",
                b.bootstrap,
                "-G",
                group,
                "-q",
                "-u",
                "-f",
                "%p %o\\n",
                "-X",
                "auto.offset.reset=earliest",
                "-X",
                "broker.address.family=v4",
                "-X",
                "partition.assignment.strategy=roundrobin",
                "-X",
                "session.timeout.ms=6000",
                "-X",
                "heartbeat.interval.ms=250",
                "-X",
                "auto.commit.interval.ms=100",
                "-X",
                "fetch.wait.max.ms=100",
                topic,
            ]
        else:
            cmd = [sys.executable, "-c", WORKER, kind, b.bootstrap, group, topic]
        self.proc = subprocess.Popen(cmd, stdout=self.file, stderr=self.err)

    def seen(self) -> list[tuple[int, int]]:
        lines = self.out.read_text().splitlines()
        return [tuple(map(int, line.split())) for line in lines if line.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.file.close()
        self.err.close()


def wait_for(cond, timeout: float, what: str, diagnose=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n{diagnose()}")


def holds_for(cond, seconds: float, what: str, diagnose=lambda: "") -> None:
    """`cond` stays true for `seconds`, polled, failing as soon as it does not: a quiet period in
    which something must not happen (a record delivered again), not a wait for something."""
    deadline = time.monotonic() + seconds
    while True:
        if not cond():
            raise AssertionError(f"{what} stopped holding\n{diagnose()}")
        if time.monotonic() >= deadline:
            return
        time.sleep(0.1)  # the poll interval of this watch


def seen_once(workers, expected: set) -> bool:
    """Every record the workers printed is one of `expected`, and none was printed twice."""
    seen = collections.Counter(rec for w in workers for rec in w.seen())
    return set(seen) <= expected and all(n == 1 for n in seen.values())


def test_mixed_group_consumes_every_record_exactly_once(broker_factory, kcat, tmp_path):
    """2 confluent-kafka + 2 kafka-python + kcat -G share 6 partitions; aiokafka joins late, kcat
    leaves, then the broker restarts under the running group. Every record is consumed exactly
    once (workers print a record only once its commit succeeded; kcat auto-commits on revoke and
    close), and the committed offsets end at the log ends. About 30 s."""
    b = broker_factory(FAST)
    topic, group = make_topic(b), unique("mixed")
    produced = produce(b, topic, 300)
    kinds = ["confluent", "confluent", "kafka-python", "kafka-python", "kcat"]
    workers = [Worker(k, b, group, topic, tmp_path / f"w{i}.txt", kcat) for i, k in enumerate(kinds)]

    def total() -> int:
        return sum(len(w.seen()) for w in workers)

    def diagnose() -> str:
        return (
            "\n".join(
                f"{w.kind}: {len(w.seen())} seen; {w.out.with_suffix('.err').read_text()[-600:]}" for w in workers
            )
            + "\n"
            + b.log()[-3000:]
        )

    try:
        wait_for(lambda: total() >= 100, 60, "the first records", diagnose)
        wait_for(lambda: group_shape(b, group) == ("STABLE", 5), 60, "five members", diagnose)
        late = Worker("aiokafka", b, group, topic, tmp_path / "late.txt")  # joins late
        workers.append(late)
        wait_for(lambda: group_shape(b, group) == ("STABLE", 6), 60, "the late join", diagnose)
        produced += produce(b, topic, 300, start=300)
        wait_for(lambda: total() >= 600, 60, "records after the late join", diagnose)
        # kcat leaves (it commits what it printed, then LeaveGroup). It would not survive the
        # restart anyway: kcat exits when all brokers are down.
        workers[4].stop()
        assert workers[4].proc.returncode == 0, diagnose()
        wait_for(lambda: group_shape(b, group) == ("STABLE", 5), 60, "the leave", diagnose)
        produced += produce(b, topic, 300, start=600)
        wait_for(lambda: total() >= len(produced), 90, "every record after the leave", diagnose)
        ends = dict(collections.Counter(p for p, _, _ in produced))
        assert committed(b, group) == ends
        running = workers[:4] + [late]
        counts = [len(w.seen()) for w in running]
        b.restart()  # the running group resumes where it was
        assert committed(b, group) == ends
        produced += produce(b, topic, 300, start=900)
        wait_for(lambda: total() >= len(produced), 90, "every record after the restart", diagnose)
        assert all(len(w.seen()) > n for w, n in zip(running, counts)), diagnose()  # all five resumed
        # every record is in: none may come again (a member re-reading after a rebalance)
        expected = {(p, o) for p, o, _ in produced}
        holds_for(lambda: seen_once(workers, expected), 1.0, "every record consumed exactly once", diagnose)
    finally:
        for w in workers:
            w.stop()
    seen = collections.Counter(rec for w in workers for rec in w.seen())
    expected = {(p, o) for p, o, _ in produced}
    assert set(seen) == expected
    dupes = {k: n for k, n in seen.items() if n > 1}
    assert not dupes, f"consumed more than once: {sorted(dupes)[:10]}\n{diagnose()}"
    by_kind = collections.Counter(w.kind for w in workers if w.seen())
    assert by_kind == {"confluent": 2, "kafka-python": 2, "aiokafka": 1, "kcat": 1}, diagnose()
    ends = collections.Counter(p for p, _, _ in produced)
    assert committed(b, group) == dict(ends)


def group_shape(b, group: str) -> tuple[str, int]:
    admin = admin_of(b)  # keep the handle alive until the result arrives
    d = admin.describe_consumer_groups([group])[group].result(10)
    return d.state.name, len(d.members)


def test_kcat_balanced_consumer_commits_and_resumes(broker_factory, kcat):
    b = broker_factory(FAST)
    topic, group = make_topic(b), unique("kcat")
    produce(b, topic, 60)

    def run_kcat() -> list[tuple[int, int]]:
        out = subprocess.run(
            [
                kcat,
                "-b",
                b.bootstrap,
                "-G",
                group,
                "-X",
                "auto.offset.reset=earliest",
                "-e",
                "-q",
                "-f",
                "%p %o\\n",
                "-X",
                "broker.address.family=v4",
                "-X",
                "session.timeout.ms=6000",
                "-X",
                "heartbeat.interval.ms=250",
                topic,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return [tuple(map(int, line.split())) for line in out.stdout.splitlines() if line.strip()]

    first = run_kcat()
    assert sorted(first) == sorted((i % 6, i // 6) for i in range(60))
    assert committed(b, group) == {p: 10 for p in range(6)}
    produce(b, topic, 12, start=60)
    second = run_kcat()  # resumes at the committed offsets: only the new records
    assert sorted(second) == sorted((i % 6, 10 + (i - 60) // 6) for i in range(60, 72))


def test_group_resumes_at_committed_offsets_after_restart(broker_factory):
    b = broker_factory(FAST)
    topic, group = make_topic(b), unique("restart")
    produce(b, topic, 60)
    conf = {
        "bootstrap.servers": b.bootstrap,
        "group.id": group,
        "broker.address.family": "v4",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 250,
    }
    c = Consumer(conf)
    c.subscribe([topic])
    got: list = []
    deadline = time.monotonic() + 30
    while len(got) < 30 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append((m.partition(), m.offset()))
            c.commit(message=m, asynchronous=False)
    c.close()
    before = committed(b, group)
    assert sum(before.values()) == len(got) == 30
    b.restart()
    assert committed(b, group) == before
    admin = admin_of(b)
    listed = {g.group_id: g.state.name for g in admin.list_consumer_groups().result(10).valid}
    assert listed[group] == "EMPTY"
    c = Consumer(conf)
    c.subscribe([topic])
    rest: list = []
    deadline = time.monotonic() + 30
    while len(rest) < 30 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            rest.append((m.partition(), m.offset()))
    c.close()
    assert sorted(got + rest) == sorted((i % 6, i // 6) for i in range(60))
    first_after = {}
    for p, o in rest:
        first_after.setdefault(p, o)
    assert {p: o for p, o in first_after.items()} == {p: before.get(p, 0) for p in first_after}


def test_active_member_survives_restart_without_rebalance(broker_factory):
    b = broker_factory(FAST)
    topic, group = make_topic(b, 2), unique("live")
    c = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": group,
            "broker.address.family": "v4",
            "enable.auto.commit": False,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 250,
            "auto.offset.reset": "earliest",
        }
    )
    assigned = []
    c.subscribe([topic], on_assign=lambda _c, ps: assigned.append(sorted(p.partition for p in ps)))
    deadline = time.monotonic() + 20
    while not assigned and time.monotonic() < deadline:
        c.poll(0.1)
    admin = admin_of(b)
    member = admin.describe_consumer_groups([group])[group].result(10).members[0].member_id
    b.restart()
    produce(b, topic, 10, partitions=2)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.offset())
    admin = admin_of(b)
    d = admin.describe_consumer_groups([group])[group].result(10)
    c.close()
    assert len(got) == 10
    assert d.state.name == "STABLE" and [m.member_id for m in d.members] == [member]
    assert assigned == [[0, 1]]  # the group was restored: no second assignment


def _tidelog(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tidelog", *args], capture_output=True, text=True, timeout=60)


def test_reset_offsets_to_datetime_rewinds_to_first_record_at_or_after(broker_factory):
    b = broker_factory(FAST)
    topic, group = make_topic(b), unique("rewind")
    # From eight hours ago, one record every 2 minutes, each stamped up to an hour later: timestamps
    # are not monotonic within a partition (12 minutes apart), so "first at or after" is not "first
    # after the last before". The newest is still an hour old.
    base = int(time.time() * 1000) - 8 * 3600_000
    produced = produce(b, topic, 180, timestamps=lambda i: base + i * 120_000 + (i * 2654435761) % 3_600_000)
    # The group has consumed everything.
    admin = admin_of(b)
    ends = collections.Counter(p for p, _, _ in produced)
    admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, n) for p, n in ends.items()])]
    )[group].result(10)
    target = base + 2 * 3600_000 + 17_000  # "two hours after the start"
    iso = dt.datetime.fromtimestamp(target / 1000, dt.UTC).isoformat(timespec="milliseconds")
    scan = {}
    for p, o, ts in sorted(produced):
        if ts >= target and p not in scan:
            scan[p] = o
    bootstrap = ["--bootstrap-server", b.bootstrap]

    dry = _tidelog(
        "groups", "reset-offsets", *bootstrap, "--group", group, "--topic", topic, "--to-datetime", iso, "--dry-run"
    )
    assert dry.returncode == 0, dry.stderr
    rows = [line.split() for line in dry.stdout.splitlines()[1:]]
    assert {(int(r[2]), int(r[3]), int(r[4])) for r in rows} == {(p, ends[p], scan[p]) for p in range(6)}
    assert committed(b, group) == dict(ends)  # --dry-run changed nothing
    plain = _tidelog("groups", "reset-offsets", *bootstrap, "--group", group, "--topic", topic, "--to-earliest")
    assert plain.returncode == 0 and "--execute" in plain.stderr
    assert committed(b, group) == dict(ends)  # neither does leaving out --execute
    assert any(ts < target and o > scan[p_] for p_, o, ts in produced)  # late records after the answer

    # Refused while the group has an active member.
    c = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": group,
            "broker.address.family": "v4",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 250,
        }
    )
    assigned = []
    c.subscribe([topic], on_assign=lambda _c, ps: assigned.extend(ps))
    deadline = time.monotonic() + 20
    while not assigned and time.monotonic() < deadline:
        c.poll(0.1)
    refused = _tidelog(
        "groups", "reset-offsets", *bootstrap, "--group", group, "--topic", topic, "--to-datetime", iso, "--execute"
    )
    assert refused.returncode == 1 and "inactive" in refused.stderr and "Stable" in refused.stderr
    assert committed(b, group) == dict(ends)
    c.close()

    done = _tidelog(
        "groups", "reset-offsets", *bootstrap, "--group", group, "--topic", topic, "--to-datetime", iso, "--execute"
    )
    assert done.returncode == 0, done.stderr
    assert committed(b, group) == scan
    # The next poll starts at exactly the first record at or after the time, on every partition.
    c = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": group,
            "broker.address.family": "v4",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 250,
        }
    )
    c.subscribe([topic])
    first: dict[int, tuple[int, int]] = {}
    deadline = time.monotonic() + 30
    while len(first) < 6 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            first.setdefault(m.partition(), (m.offset(), m.timestamp()[1]))
    c.close()
    assert {p: o for p, (o, _) in first.items()} == scan
    assert all(ts >= target for _, ts in first.values())

    # Other specs: shift, earliest, by-duration (everything is older than 1 minute: to the log end).
    shift = _tidelog(
        "groups",
        "reset-offsets",
        *bootstrap,
        "--group",
        group,
        "--topic",
        f"{topic}:0,1",
        "--shift-by",
        "-5",
        "--execute",
    )
    assert shift.returncode == 0, shift.stderr
    assert committed(b, group) == {**scan, 0: scan[0] - 5, 1: scan[1] - 5}
    assert (
        _tidelog(
            "groups", "reset-offsets", *bootstrap, "--group", group, "--topic", topic, "--to-earliest", "--execute"
        ).returncode
        == 0
    )
    assert committed(b, group) == {p: 0 for p in range(6)}
    assert (
        _tidelog(
            "groups",
            "reset-offsets",
            *bootstrap,
            "--group",
            group,
            "--topic",
            topic,
            "--by-duration",
            "PT1M",
            "--execute",
        ).returncode
        == 0
    )
    assert committed(b, group) == dict(ends)
    assert (
        _tidelog(
            "groups",
            "reset-offsets",
            *bootstrap,
            "--group",
            group,
            "--topic",
            f"{topic}:2",
            "--to-offset",
            "7",
            "--execute",
        ).returncode
        == 0
    )
    assert committed(b, group) == {**ends, 2: 7}
    assert (
        _tidelog(
            "groups", "reset-offsets", *bootstrap, "--group", group, "--topic", topic, "--to-latest", "--execute"
        ).returncode
        == 0
    )
    assert committed(b, group) == dict(ends)
    desc = _tidelog("groups", "describe", *bootstrap, "--group", group)
    assert desc.returncode == 0 and "LAG" in desc.stdout
    assert group in _tidelog("groups", "list", *bootstrap).stdout.split()
    deleted = _tidelog("groups", "delete", *bootstrap, "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    assert group not in _tidelog("groups", "list", *bootstrap).stdout.split()
    assert committed(b, group) == {}
    gone = _tidelog("groups", "describe", *bootstrap, "--group", group)
    assert gone.returncode == 1 and "does not exist" in gone.stderr


def test_consume_prints_a_time_window(broker_factory):
    b = broker_factory(FAST)
    topic = make_topic(b, 3)
    base = int(time.time() * 1000) - 3 * 3600_000
    produced = produce(b, topic, 90, partitions=3, timestamps=lambda i: base + i * 120_000)
    start, stop = base + 30 * 60_000, base + 90 * 60_000
    iso = lambda ms: dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat()
    res = _tidelog(
        "consume",
        "--bootstrap-server",
        b.bootstrap,
        "--topic",
        topic,
        "--from-time",
        iso(start),
        "--to-time",
        iso(stop),
    )
    assert res.returncode == 0, res.stderr
    lines = [line.split("\t") for line in res.stdout.splitlines()]
    got = sorted((int(p), int(o)) for _, p, o, *_ in lines)
    want = sorted((p, o) for p, o, ts in produced if start <= ts < stop)
    assert got == want and len(want) == 30
    assert all(line[4] == "CreateTime" and line[5].startswith("k") for line in lines)
    assert "30 records" in res.stderr
