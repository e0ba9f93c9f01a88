"""Coordinators that move with leadership (issue 22), on one etcd and three brokers: the group
coordinator of a group is the leader of its `__consumer_offsets` partition, the transaction
coordinator of a transactional id the leader of its `__transaction_state` partition.

- A consume-transform-produce copy with `send_offsets_to_transaction` (every 7th transaction
  aborted) by confluent-kafka, kafka-python and aiokafka while the transaction coordinator's
  broker, then the group coordinator's, then a data leader are killed with SIGKILL mid-transaction
  and restarted: read_committed sees every input once, in order, nothing aborted.
- A mixed consumer group (confluent-kafka, kafka-python, aiokafka, each in its own process) keeps
  consuming every record exactly once while its coordinator's broker is killed and returns, and
  then stopped with SIGTERM (controlled shutdown); committed offsets never move back.
- A consumer group of Kafka 4's protocol (KIP-848) carries on, the same members at the same
  epochs, when its coordinator's broker is killed: the next one replays it.
- So does a streams group (KIP-1071): Kafka Streams' exactly-once word count with
  group.protocol=streams counts every word exactly once across the kill of its coordinator.
- Placement: FindCoordinator names the partition leader; the internal topics are replicated
  (replication factor 3, min ISR 2); a coordinator that lost the partition answers NOT_COORDINATOR.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import uuid
from pathlib import Path

import pytest
from cluster_process import Cluster
from confluent_kafka.admin import AdminClient, NewTopic
from test_cluster_transactions import coordinator_of
from test_replication import describe, iter_live, wait_for

from tidelog.cli.client import KafkaClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "interop"))
import test_groups_consume as groups_consume
import test_transactions_eos as eos

# method="thread": a client blocked in C (librdkafka) never returns to take a signal; the thread
# method dumps every thread's stack and ends the run instead of hanging it
pytestmark = pytest.mark.timeout(600, method="thread")


class Bootstrap:
    """What the copy loops and group workers of the single-node tests need of "a broker"."""

    def __init__(self, c: Cluster) -> None:
        self.bootstrap = c.bootstrap


def replicated_topics(c: Cluster, *names: str, partitions: int = eos.PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    futs = admin.create_topics([NewTopic(n, partitions, 3, config={"min.insync.replicas": "2"}) for n in names])
    for f in futs.values():
        f.result(30)
    for n in names:
        wait_for(
            lambda n=n: all(len(p["isr"]) == 3 and p["leader"] > 0 for p in describe(c, n)),
            30,
            f"{n} led with a full ISR",
        )


def coordinating(c: Cluster, api: int, prefix: str) -> int:
    """The live broker whose ListGroups (16) / ListTransactions (66) names an id starting with
    `prefix`: the coordinator the client is using now; -1 when none does."""
    for b_id, b in c.brokers.items():
        if b.proc is None or b.proc.poll() is not None or b_id in c.paused:
            continue
        try:
            with KafkaClient(b.bootstrap) as client:
                if api == 16:
                    ids = [g.group_id for g in client.request(16, {}, version=3).groups]
                else:
                    r = client.request(66, {"state_filters": [], "producer_id_filters": []}, version=0)
                    ids = [t.transactional_id for t in r.transaction_states]
        except OSError:
            continue
        if any(i.startswith(prefix) for i in ids):
            return b_id
    return -1


class CoordinatorKiller:
    """kill -9 and restart, at chosen transaction numbers: the transaction coordinator's broker,
    then the group coordinator's, then the leader of a destination partition."""

    def __init__(self, c: Cluster, at: set[int], prefix: str, dst: str) -> None:
        self.c = c
        self.at = at
        self.prefix = prefix
        self.dst = dst
        self.kills = 0
        self.victims: list[tuple[str, int]] = []

    def maybe(self, txn_no: int) -> None:
        if txn_no not in self.at:
            return
        self.at.discard(txn_no)
        kind = ("transaction coordinator", "group coordinator", "data leader")[min(self.kills, 2)]
        if self.kills == 0:
            victim = coordinating(self.c, 66, self.prefix)
        elif self.kills == 1:
            victim = coordinating(self.c, 16, self.prefix)
        else:
            victim = describe(self.c, self.dst)[0]["leader"]
        self.victims.append((kind, victim))
        if victim < 0:  # not found: the test fails after the copy (it did not kill what it says)
            victim = 1
        b = self.c.brokers[victim]
        b.kill()
        b.start()
        self.kills += 1


COPIES = {
    "confluent": (eos.copy_confluent, 15_000),
    "kafka-python": (eos.copy_kafka_python, 6_000),
    "aiokafka": (lambda *a: asyncio.run(eos.copy_aiokafka(*a)), 6_000),
}
PREFIX = {"confluent": "copier-", "kafka-python": "kp-", "aiokafka": "aio-"}


@pytest.mark.parametrize("client", list(COPIES))
def test_exactly_once_copy_while_coordinators_are_killed(cluster, client):
    c = cluster
    copy, total = COPIES[client]
    target = Bootstrap(c)
    src, dst = f"eos-a-{uuid.uuid4().hex[:6]}", f"eos-b-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, src, dst)
    eos.fill(target, src, total)
    per_txn = 250
    killer = CoordinatorKiller(c, eos.kill_points(total, per_txn), PREFIX[client], dst)
    txns = copy(target, src, dst, total, per_txn, killer)
    assert killer.kills == 3 and all(v > 0 for _, v in killer.victims), killer.victims
    assert txns >= total // per_txn
    wait_for(lambda: all(len(p["isr"]) == 3 for t in (src, dst) for p in describe(c, t)), 60, "full ISRs")
    eos.check_exactly_once(target, dst, total)


def committed(c: Cluster, group: str) -> dict[int, int] | None:
    """The group's committed offsets, from its coordinator (OffsetFetch v7); None while moving."""
    try:
        with KafkaClient(next(iter_live(c)).bootstrap) as client:
            r = client.request(10, {"key": group, "key_type": 0}, version=1)
        if r.error_code.value:
            return None
        with KafkaClient(f"{r.host}:{r.port}") as client:
            f = client.request(9, {"group_id": group, "topics": None}, version=7)
    except Exception:  # noqa: BLE001 - a coordinator moving meanwhile: no sample
        return None
    if f.error_code.value:
        return None
    return {p.partition_index: p.committed_offset for t in f.topics for p in t.partitions if p.committed_offset >= 0}


class CommittedWatch(threading.Thread):
    """Samples the group's committed offsets; records any partition whose offset moved back."""

    def __init__(self, c: Cluster, group: str) -> None:
        super().__init__(daemon=True)
        self.c, self.group = c, group
        self.best: dict[int, int] = {}
        self.moved_back: list[tuple[int, int, int]] = []
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            now = committed(self.c, self.group)
            if now is None:
                continue
            self.samples += 1
            for p, o in now.items():
                if o < self.best.get(p, -1):
                    self.moved_back.append((p, self.best[p], o))
                self.best[p] = max(o, self.best.get(p, -1))


def test_mixed_group_consumes_exactly_once_while_its_coordinator_moves(cluster, tmp_path):
    c = cluster
    target = Bootstrap(c)
    topic, group = f"grp-{uuid.uuid4().hex[:6]}", f"mixed-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, topic, partitions=6)
    produced = groups_consume.produce(target, topic, 300)
    kinds = ["confluent", "confluent", "kafka-python", "aiokafka"]
    workers = [groups_consume.Worker(k, target, group, topic, tmp_path / f"w{i}.txt") for i, k in enumerate(kinds)]
    watch = CommittedWatch(c, group)

    def total() -> int:
        return sum(len(w.seen()) for w in workers)

    def diagnose() -> str:
        return (
            "\n".join(
                f"{w.kind}: {len(w.seen())} seen; {w.out.with_suffix('.err').read_text()[-600:]}" for w in workers
            )
            + "\n"
            + c.logs()
        )

    try:
        wait_for(lambda: total() >= 300, 90, "the first records")
        watch.start()
        # kill -9 the group coordinator's broker; it returns after the next batch is consumed
        victim = coordinator_of(c, group, key_type=0)
        c.brokers[victim].kill()
        produced += groups_consume.produce(target, topic, 300, start=300)
        wait_for(lambda: total() >= 600, 120, "every record with the coordinator dead")
        assert coordinator_of(c, group, key_type=0) != victim
        c.brokers[victim].start()
        wait_for(lambda: all(len(p["isr"]) == 3 for p in describe(c, topic)), 60, "the ISR full again")
        # then the new coordinator's broker stops with SIGTERM (controlled shutdown) and returns
        second = coordinator_of(c, group, key_type=0)
        c.brokers[second].stop()
        produced += groups_consume.produce(target, topic, 300, start=600)
        wait_for(lambda: total() >= 900, 120, "every record after a controlled shutdown")
        c.brokers[second].start()
        produced += groups_consume.produce(target, topic, 300, start=900)
        wait_for(lambda: total() >= 1200, 120, "every record after both returned")
        # every record is in: none may come again (a member re-reading after a rebalance)
        expected = {(p, o) for p, o, _ in produced}
        groups_consume.holds_for(lambda: groups_consume.seen_once(workers, expected), 1.0, "exactly once")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{diagnose()}") from None
    finally:
        watch.stop.set()
        for w in workers:
            w.stop()
    seen = collections.Counter(rec for w in workers for rec in w.seen())
    assert set(seen) == {(p, o) for p, o, _ in produced}
    dupes = {k: n for k, n in seen.items() if n > 1}
    assert not dupes, f"consumed more than once: {sorted(dupes)[:10]}"
    assert watch.samples > 5 and not watch.moved_back, watch.moved_back
    ends = collections.Counter(p for p, _, _ in produced)
    wait_for(lambda: committed(c, group) == dict(ends), 30, "committed offsets at the log ends")


def consumer_group_state(c: Cluster, group: str) -> tuple[int, set[str]] | None:
    """(group epoch, member ids) of a consumer group (KIP-848), from its coordinator; None while moving."""
    try:
        node = coordinator_of(c, group, key_type=0)
        with KafkaClient(c.brokers[node].bootstrap) as client:
            r = client.request(69, {"group_ids": [group], "include_authorized_operations": False}, version=1)
    except Exception:  # noqa: BLE001 - a coordinator moving meanwhile: no sample
        return None
    (g,) = r.groups
    if g.error_code.value:
        return None
    return g.group_epoch, {m.member_id for m in g.members}


@pytest.mark.parametrize("first", ["consumer", "classic"])
def test_a_consumer_protocol_group_carries_on_when_its_coordinator_is_killed(cluster, first):
    """KIP-848: two librdkafka members (group.protocol=consumer) keep consuming while the broker
    coordinating their group is killed; the next coordinator replays the group from
    `__consumer_offsets` (the same members, the group epoch carried on, not started again) and
    every record is read. With `first` classic, the first member is of the classic protocol: the
    second one's join upgrades the classic group online, and the next coordinator replays the
    mixed group (the classic member's protocols and session timeout with it)."""
    from confluent_kafka import Consumer, Producer

    c = cluster
    topic, group = f"cp-{uuid.uuid4().hex[:6]}", f"cp-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, topic, partitions=6)
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True})

    def produce(start: int, n: int) -> None:
        for i in range(start, start + n):
            producer.produce(topic, str(i).encode(), partition=i % 6)
        assert producer.flush(60) == 0

    seen: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def consume(protocol: str) -> None:
        k = Consumer(
            {
                "bootstrap.servers": c.bootstrap,
                "group.id": group,
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 200,
            }
        )
        k.subscribe([topic])
        while not stop.is_set():
            m = k.poll(0.1)
            if m is not None and not m.error():
                with lock:
                    seen.add(m.value().decode())
        k.close()

    threads = [threading.Thread(target=consume, args=(p,), daemon=True) for p in (first, "consumer")]
    threads[0].start()
    try:
        produce(0, 300)
        wait_for(lambda: len(seen) >= 100, 90, "the first member's first records")
        threads[1].start()
        wait_for(lambda: len(seen) >= 300, 90, "the first records")
        wait_for(lambda: (s := consumer_group_state(c, group)) is not None and len(s[1]) == 2, 60, "both members")
        before = consumer_group_state(c, group)
        assert before is not None
        victim = coordinator_of(c, group, key_type=0)
        c.brokers[victim].kill()
        produce(300, 300)
        wait_for(lambda: len(seen) >= 600, 120, "every record with the coordinator dead")
        assert coordinator_of(c, group, key_type=0) != victim
        after = consumer_group_state(c, group)
        assert after is not None and after[1] == before[1] and after[0] >= before[0], (before, after)
        c.brokers[victim].start()
        produce(600, 300)
        wait_for(lambda: len(seen) >= 900, 120, "every record after it returned")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert seen == {str(i) for i in range(900)}


def test_internal_topics_are_replicated_and_coordinators_are_their_leaders(cluster):
    c = cluster
    group, txn_id = f"g-{uuid.uuid4().hex[:6]}", f"t-{uuid.uuid4().hex[:6]}"
    g_coord = coordinator_of(c, group, key_type=0)
    t_coord = coordinator_of(c, txn_id, key_type=1)
    with KafkaClient(next(iter_live(c)).bootstrap) as client:
        md = client.request(
            3,
            {
                "topics": [{"name": "__consumer_offsets"}, {"name": "__transaction_state"}],
                "allow_auto_topic_creation": False,
            },
            version=9,
        )
        groups_md = {t.name: t for t in md.topics}
    for name in ("__consumer_offsets", "__transaction_state"):
        t = groups_md[name]
        assert t.is_internal and t.error_code.value == 0
        assert all(len(p.replica_nodes) == 3 for p in t.partitions)
    from tidelog.groups.records import partition_for as gp
    from tidelog.txn.records import partition_for as tp_

    offsets, state = groups_md["__consumer_offsets"], groups_md["__transaction_state"]
    assert (
        g_coord
        == offsets.partitions[
            [p.partition_index for p in offsets.partitions].index(gp(group, len(offsets.partitions)))
        ].leader_id
    )
    assert (
        t_coord
        == state.partitions[
            [p.partition_index for p in state.partitions].index(tp_(txn_id, len(state.partitions)))
        ].leader_id
    )
    # a broker that does not lead the group's partition refuses to coordinate it
    other = next(b for b in c.brokers if b != g_coord)
    with KafkaClient(c.brokers[other].bootstrap) as client:
        r = client.request(9, {"group_id": group, "topics": None}, version=7)  # OffsetFetch
    assert r.error_code.value == 16, r  # NOT_COORDINATOR
    with KafkaClient(c.brokers[g_coord].bootstrap) as client:
        r = client.request(9, {"group_id": group, "topics": None}, version=7)
    assert r.error_code.value == 0, r


def test_markers_carry_the_coordinator_epoch_and_older_ones_are_fenced(cluster):
    """A transaction's markers carry the leader epoch of its __transaction_state partition; a
    partition leader refuses a marker from an older coordinator epoch for that producer
    (TRANSACTION_COORDINATOR_FENCED), so a deposed coordinator cannot end a transaction the new
    one owns."""
    from confluent_kafka import Producer

    c = cluster
    topic = f"fence-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, topic, partitions=1)
    txn_id = f"fence-{uuid.uuid4().hex[:6]}"
    first = coordinator_of(c, txn_id, key_type=1)
    c.brokers[first].stop()  # controlled shutdown: the state partition moves, its leader epoch goes up
    c.brokers[first].start()
    c.wait_ready()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": txn_id, "acks": "all"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"v", partition=0)
    p.commit_transaction(30)
    leader = describe(c, topic)[0]["leader"]

    with KafkaClient(c.brokers[leader].bootstrap) as client:
        pid_epochs = client.request(61, {"topics": [{"name": topic, "partition_indexes": [0]}]}, version=0)
    producer = pid_epochs.topics[0].partitions[0].active_producers[0]
    assert producer.coordinator_epoch >= 1, producer  # the state partition's leader epoch after the move
    with KafkaClient(c.brokers[leader].bootstrap) as client:
        r = client.request(
            27,
            {
                "markers": [
                    {
                        "producer_id": producer.producer_id,
                        "producer_epoch": producer.producer_epoch,
                        "transaction_result": False,
                        "coordinator_epoch": producer.coordinator_epoch - 1,
                        "topics": [{"name": topic, "partition_indexes": [0]}],
                    }
                ]
            },
            version=1,
        )
    assert r.markers[0].topics[0].partitions[0].error_code.value == 52, r  # TRANSACTION_COORDINATOR_FENCED


def test_kip890_verification_asks_the_remote_coordinator(cluster):
    """A partition leader that is not the transaction coordinator refuses the first transactional
    batch of a transaction that does not include its partition (INVALID_TXN_STATE), after asking
    the coordinator with AddPartitionsToTxn v4 verify_only; once the partition is added the same
    batch is appended."""
    import time as _time

    from tidelog.log.records import Record, build_batch

    c = cluster
    topic = f"verify-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, topic, partitions=3)
    txn_id = f"verify-{uuid.uuid4().hex[:6]}"
    coord = coordinator_of(c, txn_id, key_type=1)
    p = next(x["partition"] for x in describe(c, topic) if x["leader"] != coord)
    leader = describe(c, topic)[p]["leader"]
    with KafkaClient(c.brokers[coord].bootstrap) as client:
        r = client.request(
            22,
            {"transactional_id": txn_id, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1},
            version=3,
        )
    assert r.error_code.value == 0, r
    pid, epoch = r.producer_id, r.producer_epoch

    def produce() -> int:
        batch = build_batch(
            [Record(value=b"t", timestamp=int(_time.time() * 1000))],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
            transactional=True,
        )
        with KafkaClient(c.brokers[leader].bootstrap) as client:
            resp = client.request(
                0,
                {
                    "acks": -1,
                    "timeout": 10000,
                    "transactional_id": txn_id,
                    "topic_data": [{"name": topic, "partition_data": [{"index": p, "records": bytes(batch)}]}],
                },
                version=9,
            )
        return int(resp.responses[0].partition_responses[0].error_code.value)

    assert produce() == 48  # INVALID_TXN_STATE: the coordinator has no such partition in the transaction
    with KafkaClient(c.brokers[coord].bootstrap) as client:
        r = client.request(
            24,
            {
                "v3_and_below_transactional_id": txn_id,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": topic, "partitions": [p]}],
            },
            version=3,
        )
    assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code.value == 0, r
    assert produce() == 0


def streams_group_state(c: Cluster, group: str) -> tuple[int, set[str], str] | None:
    """(group epoch, member ids, state) of a streams group (KIP-1071), from its coordinator; None
    while it moves."""
    try:
        node = coordinator_of(c, group, key_type=0)
        with KafkaClient(c.brokers[node].bootstrap) as client:
            r = client.request(89, {"group_ids": [group], "include_authorized_operations": False}, version=0)
    except Exception:  # noqa: BLE001 - a coordinator moving meanwhile: no sample
        return None
    (g,) = r.groups
    if g.error_code.value:
        return None
    return g.group_epoch, {m.member_id for m in g.members}, g.group_state


def test_a_streams_word_count_is_exactly_once_when_its_coordinator_is_killed(cluster, tmp_path):
    """KIP-1071: Kafka Streams' exactly-once word count (java/streams/WordCount.java) with
    group.protocol=streams and internal topics of replication factor 3 (created by the brokers)
    keeps counting while the broker coordinating its group is killed with SIGKILL: the next
    coordinator replays the group (the same member, the group epoch carried on) and the
    read_committed output ends with exactly the right count of every word."""
    import struct
    import subprocess
    import time

    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka_process import classpath

    c = cluster
    app, src, dst = f"wc-{uuid.uuid4().hex[:6]}", f"wci-{uuid.uuid4().hex[:6]}", f"wco-{uuid.uuid4().hex[:6]}"
    replicated_topics(c, src, dst, partitions=3)
    cp = classpath()
    classes = tmp_path / "classes"
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        ["javac", "-cp", cp, "-d", str(classes), str(root / "java" / "streams" / "WordCount.java")],
        check=True,
        capture_output=True,
        timeout=180,
    )
    (tmp_path / "log4j2.properties").write_text(
        "status = warn\nappender.c.type = Console\nappender.c.name = E\nappender.c.target = SYSTEM_ERR\n"
        "appender.c.layout.type = PatternLayout\nappender.c.layout.pattern = %p %m%n\n"
        "rootLogger.level = WARN\nrootLogger.appenderRef.e.ref = E\n"
    )
    stop = tmp_path / "stop"
    log = open(tmp_path / "streams.log", "wb")
    proc = subprocess.Popen(
        [
            "java",
            "-Xmx384m",
            f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}",
            "-cp",
            f"{classes}:{cp}",
            "WordCount",
            c.bootstrap,
            app,
            src,
            dst,
            str(tmp_path / "state"),
            str(stop),
            "streams",
            "3",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    sent: collections.Counter[str] = collections.Counter()
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True})

    def send(lines: int, seed: int) -> None:
        for i in range(lines):
            line = " ".join(words[(seed + i * j) % len(words)] for j in range(1, 4))
            sent.update(line.split())
            producer.produce(src, line.encode(), key=b"%d" % i)
        assert producer.flush(60) == 0

    def counts(timeout: float) -> dict[str, int]:
        """The latest count of each word in the output, read_committed, until it is `sent`."""
        k = Consumer(
            {
                "bootstrap.servers": c.bootstrap,
                "group.id": f"r-{uuid.uuid4().hex[:6]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        k.assign([TopicPartition(dst, p, 0) for p in range(3)])
        latest: dict[str, int] = {}
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and latest != dict(sent):
                m = k.poll(0.5)
                if m is not None and not m.error():
                    latest[m.key().decode()] = struct.unpack(">q", m.value())[0]
        finally:
            k.close()
        return latest

    def diagnose() -> str:
        return f"{(tmp_path / 'streams.log').read_text()[-3000:]}\n{c.logs('streams')[-3000:]}"

    try:
        send(200, 1)
        assert counts(180) == dict(sent), f"the first counts\n{diagnose()}"
        wait_for(lambda: (s := streams_group_state(c, app)) is not None and s[2] == "Stable", 60, "a stable group")
        before = streams_group_state(c, app)
        assert before is not None and len(before[1]) == 1
        victim = coordinator_of(c, app, key_type=0)
        c.brokers[victim].kill()
        send(200, 2)
        assert counts(180) == dict(sent), f"the counts with the coordinator dead\n{diagnose()}"
        assert coordinator_of(c, app, key_type=0) != victim
        after = streams_group_state(c, app)
        assert after is not None and after[1] == before[1] and after[0] >= before[0], (before, after)
        c.brokers[victim].start()
        send(100, 3)
        assert counts(180) == dict(sent), f"the counts after it returned\n{diagnose()}"
        assert proc.poll() is None, diagnose()
    finally:
        stop.touch()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
