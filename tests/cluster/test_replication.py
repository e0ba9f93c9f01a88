"""Replicated partitions on one etcd and three tidelog brokers, as real processes, driven by real
clients: replica placement and metadata, acks=all, identical replicas, leader failover without
loss, min.insync.replicas, controller failover, a zombie leader and divergent logs (KIP-101)."""

from __future__ import annotations

import filecmp
import threading
import time
import uuid
from pathlib import Path

import pytest
from cluster_process import Cluster
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.cli.client import KafkaClient
from tidelog.log.records import Record, build_batch

pytestmark = pytest.mark.timeout(300)


def create_topic(c: Cluster, partitions: int = 3, rf: int = 3, min_isr: int = 2, **configs: str) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    fut = admin.create_topics([NewTopic(name, partitions, rf, config={"min.insync.replicas": str(min_isr), **configs})])
    try:
        fut[name].result(30)
    except TimeoutError:
        raise AssertionError(f"CreateTopics {name} unanswered after 30 s\n{c.logs()}") from None
    wait_for(
        lambda: all(len(p["isr"]) == rf and p["leader"] > 0 for p in describe(c, name)),
        20,
        f"partitions of {name} led with a full ISR",
    )
    return name


def describe(c: Cluster, topic: str) -> list[dict]:
    with KafkaClient(next(iter_live(c)).bootstrap) as client:
        md = client.request(3, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}, version=9)
    t = md.topics[0]
    return [
        {
            "partition": p.partition_index,
            "leader": p.leader_id,
            "epoch": p.leader_epoch,
            "replicas": list(p.replica_nodes),
            "isr": list(p.isr_nodes),
        }
        for p in sorted(t.partitions, key=lambda p: p.partition_index)
    ]


def iter_live(c: Cluster):
    for i, b in c.brokers.items():
        if b.proc is not None and b.proc.poll() is None and i not in c.paused:
            yield b


def wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except Exception as e:  # noqa: BLE001 - a broker restarting meanwhile
            last = e
        time.sleep(0.1)  # the poll interval of this wait
    raise AssertionError(f"timed out waiting for {what} (last error {last!r})")


def read_all(c: Cluster, topic: str, partitions: int) -> dict[int, list[bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": c.bootstrap,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 60
        positions = {p: 0 for p in range(partitions)}
        while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None or m.error():
                continue
            out[m.partition()].append(m.value())
            positions[m.partition()] = m.offset() + 1
    finally:
        consumer.close()
    return out


def replica_dirs(c: Cluster, topic: str, p: int) -> list[Path]:
    return [b.data_dir / f"{topic}-{p}" for b in c.brokers.values() if (b.data_dir / f"{topic}-{p}").is_dir()]


def assert_identical_replicas(c: Cluster, topic: str, partitions: int) -> None:
    """Every replica holds byte-identical segment files (after followers caught up)."""
    for p in range(partitions):

        def same(p: int = p) -> bool:
            dirs = replica_dirs(c, topic, p)
            logs = [sorted(x.name for x in d.glob("*.log")) for d in dirs]
            if len(dirs) < 3 or any(lg != logs[0] for lg in logs):
                return False
            return all(filecmp.cmp(dirs[0] / n, d / n, shallow=False) for d in dirs[1:] for n in logs[0])

        wait_for(same, 20, f"{topic}-{p} replicas identical")


def produce(c: Cluster, topic: str, n: int, prefix: str, acks: str = "all", **conf) -> list[bytes]:
    acked: list[bytes] = []
    errors: list[KafkaError] = []

    def cb(err, msg):
        (errors.append(err) if err else acked.append(msg.value()))

    p = Producer(
        {"bootstrap.servers": c.bootstrap, "acks": acks, "enable.idempotence": acks == "all", "linger.ms": 5, **conf}
    )
    for i in range(n):
        p.produce(topic, f"{prefix}-{i}".encode(), key=str(i).encode(), on_delivery=cb)
        p.poll(0)
    p.flush(60)
    assert not errors, errors[:3]
    return acked


def test_topic_placement_metadata_and_identical_replicas(cluster):
    topic = create_topic(cluster, partitions=3)
    parts = describe(cluster, topic)
    assert {p["leader"] for p in parts} == {1, 2, 3}  # leaders spread over the brokers
    assert all(sorted(p["replicas"]) == [1, 2, 3] for p in parts)
    acked = produce(cluster, topic, 3000, "v")
    assert len(acked) == 3000
    got = read_all(cluster, topic, 3)
    assert sorted(v for vs in got.values() for v in vs) == sorted(acked)
    assert_identical_replicas(cluster, topic, 3)


def leader_of(c: Cluster, topic: str, p: int) -> int:
    return describe(c, topic)[p]["leader"]


def test_leader_failover_under_load_loses_nothing(cluster):
    topic = create_topic(cluster, partitions=2)
    acked: list[bytes] = []
    acked_p0 = [0]  # how many of them went to partition 0 (the one whose leader is killed)
    errors: list = []
    stop = threading.Event()

    def run():
        def cb(err, msg):
            if err:
                errors.append(err)
                return
            acked.append(msg.value())
            acked_p0[0] += msg.partition() == 0

        p = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": 60000,
            }
        )
        i = 0
        while not stop.is_set():
            p.produce(topic, f"f-{i}".encode(), key=str(i % 17).encode(), on_delivery=cb)
            p.poll(0)
            i += 1
            if i % 200 == 0:
                time.sleep(0.02)  # pacing of the load (not a wait): the loop would outrun the cluster
        p.flush(90)

    def more_acked(n: int, what: str) -> None:
        start = acked_p0[0]
        wait_for(lambda: acked_p0[0] >= start + n, 60, f"{n} more records of partition 0 acknowledged {what}")

    th = threading.Thread(target=run)
    th.start()
    try:
        for _ in range(3):
            more_acked(1000, "before the leader is killed")  # under load: records flow through it
            victim = leader_of(cluster, topic, 0)
            cluster.brokers[victim].kill()
            wait_for(lambda v=victim: leader_of(cluster, topic, 0) not in (v, -1), 20, "a new leader")
            more_acked(500, "by the new leader")  # the log moves on without the old leader
            cluster.brokers[victim].start()
            wait_for(lambda: all(len(p["isr"]) == 3 for p in describe(cluster, topic)), 40, "the ISR full again")
    finally:
        stop.set()
        th.join(120)
    assert not errors, errors[:3]
    got = read_all(cluster, topic, 2)
    values = [v for vs in got.values() for v in vs]
    assert len(values) == len(set(values)), "duplicates"
    missing = set(acked) - set(values)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    assert_identical_replicas(cluster, topic, 2)


def raw_produce(bootstrap: str, topic: str, acks: int, value: bytes = b"x", timeout_ms: int = 5000):
    batch = build_batch([Record(value=value, timestamp=int(time.time() * 1000))])
    with KafkaClient(bootstrap) as client:
        resp = client.request(
            0,
            {
                "acks": acks,
                "timeout": timeout_ms,
                "transactional_id": None,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
            },
            version=8,
        )
    return resp.responses[0].partition_responses[0]


def test_min_insync_replicas(cluster):
    topic = create_topic(cluster, partitions=1)
    leader = leader_of(cluster, topic, 0)
    others = [b for b in cluster.brokers if b != leader]
    for b in others:
        cluster.brokers[b].kill()
    try:
        wait_for(lambda: describe(cluster, topic)[0]["isr"] == [leader], 30, "the ISR shrunk to the leader")
        m = cluster.metrics(leader)
        assert m["tidelog_under_replicated_partitions"] >= 1
        assert m[f'tidelog_high_watermark{{partition="0",topic="{topic}"}}'] == 0
        lb = cluster.brokers[leader].bootstrap
        r = raw_produce(lb, topic, -1)
        assert r.error_code.value == 19, r  # NOT_ENOUGH_REPLICAS: nothing appended
        r1 = raw_produce(lb, topic, 1)
        assert r1.error_code.value == 0 and r1.base_offset == 0, r1
    finally:
        for b in others:
            cluster.brokers[b].start()
    wait_for(lambda: len(describe(cluster, topic)[0]["isr"]) == 3, 40, "the ISR full again")
    assert cluster.metrics(leader)["tidelog_isr_expands_total"] >= 2
    r = raw_produce(cluster.brokers[leader_of(cluster, topic, 0)].bootstrap, topic, -1)
    assert r.error_code.value == 0 and r.base_offset == 1, r
    lags = {
        k: v
        for k, v in cluster.metrics(leader_of(cluster, topic, 0)).items()
        if k.startswith("tidelog_follower_lag") and f'topic="{topic}"' in k
    }
    assert len(lags) == 2


def test_controller_failover(cluster):
    topic = create_topic(cluster, partitions=1)
    with KafkaClient(next(iter_live(cluster)).bootstrap) as client:
        controller = client.request(3, {"topics": [], "allow_auto_topic_creation": False}, version=9).controller_id
    cluster.brokers[controller].kill()
    try:

        def new_controller() -> bool:
            with KafkaClient(next(iter_live(cluster)).bootstrap) as client:
                cid = client.request(3, {"topics": [], "allow_auto_topic_creation": False}, version=9).controller_id
            return cid not in (-1, controller)

        wait_for(new_controller, 20, "another controller")
        # the new controller elects leaders: kill the partition's leader (if it is not the dead one)
        wait_for(lambda: leader_of(cluster, topic, 0) not in (-1, controller), 20, "a live leader")
        leader = leader_of(cluster, topic, 0)
        cluster.brokers[leader].kill()
        wait_for(lambda: leader_of(cluster, topic, 0) not in (-1, controller, leader), 20, "a leader elected")
        cluster.brokers[leader].start()
    finally:
        cluster.brokers[controller].start()
    wait_for(lambda: len(describe(cluster, topic)[0]["isr"]) == 3, 40, "the ISR full again")


def test_not_leader_answers_carry_kip951_leader_hints(cluster):
    topic = create_topic(cluster, partitions=1)
    st = describe(cluster, topic)[0]
    other = next(b for b in cluster.brokers if b != st["leader"])
    leader_port = cluster.brokers[st["leader"]].port
    batch = build_batch([Record(value=b"x", timestamp=int(time.time() * 1000))])
    with KafkaClient(cluster.brokers[other].bootstrap) as client:
        resp = client.request(
            0,
            {
                "acks": -1,
                "timeout": 5000,
                "transactional_id": None,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
            },
            version=11,
        )
        part = resp.responses[0].partition_responses[0]
        assert part.error_code.value == 6  # NOT_LEADER_OR_FOLLOWER
        assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (st["leader"], st["epoch"])
        assert [(n.node_id, n.port) for n in resp.node_endpoints] == [(st["leader"], leader_port)]
        md = client.request(3, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}, version=12)
        topic_id = md.topics[0].topic_id
        fetch = client.request(
            1,
            {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "forgotten_topics_data": [],
                "rack_id": "",
                "topics": [
                    {
                        "topic_id": topic_id,
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": 0,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": 1 << 20,
                            }
                        ],
                    }
                ],
            },
            version=16,
        )
        fp = fetch.responses[0].partitions[0]
        assert fp.error_code.value == 6
        assert fp.current_leader.leader_id == st["leader"]
        assert [(n.node_id, n.port) for n in fetch.node_endpoints] == [(st["leader"], leader_port)]


def test_delete_records_on_the_leader_moves_followers_log_start(cluster):
    from confluent_kafka import TopicPartition as TP

    topic = create_topic(cluster, partitions=1)
    produce(cluster, topic, 100, "d")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = admin.delete_records([TP(topic, 0, 60)])
    assert res[TP(topic, 0, 60)].result(15).low_watermark == 60
    st = describe(cluster, topic)[0]
    follower = next(b for b in st["replicas"] if b != st["leader"])
    with KafkaClient(cluster.brokers[follower].bootstrap) as client:
        r = client.request(
            21,
            {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 10}]}], "timeout": 5000},
            version=2,
        )
    assert r.topics[0].partitions[0].error_code.value == 6  # NOT_LEADER_OR_FOLLOWER off the leader
    with KafkaClient(cluster.brokers[follower].bootstrap) as client:
        r = client.request(61, {"topics": [{"name": topic, "partition_indexes": [0]}]}, version=0)
    assert r.topics[0].partitions[0].error_code.value == 6  # DescribeProducers too

    def follower_starts() -> bool:
        for b in st["replicas"]:
            text = (cluster.brokers[b].data_dir / "log-start-offset-checkpoint").read_text()
            if f"{topic} 0 60" not in text:
                return False
        return True

    wait_for(follower_starts, 20, "every replica's log start offset at 60")


def test_cli_describe_and_cluster_status(cluster):
    import subprocess
    import sys

    topic = create_topic(cluster, partitions=2)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tidelog", *args, "--bootstrap-server", next(iter_live(cluster)).bootstrap],
            capture_output=True,
            text=True,
            timeout=60,
        )

    out = cli("topics", "describe", "--topic", topic).stdout
    assert "ReplicationFactor: 3" in out or "ReplicationFactor:3" in out, out
    for p in describe(cluster, topic):
        assert f"Leader: {p['leader']}" in out and "Isr: " + ",".join(map(str, p["isr"])) in out, out
    st = cli("cluster", "status")
    assert st.returncode == 0 and "UnderReplicatedPartitions: 0" in st.stdout, st.stdout
    assert all(f"Broker: {b}\t" in st.stdout for b in cluster.brokers)
    assert "Controller: " in st.stdout and "Coordinates: " in st.stdout
    victim = next(b for b in describe(cluster, topic)[0]["replicas"] if b != describe(cluster, topic)[0]["leader"])
    cluster.brokers[victim].kill()
    try:
        # Each partition's ISR shrinks on its own clock: wait for partition 0's, not any one.
        wait_for(lambda: f"{topic}-0" in cli("cluster", "status").stdout, 30, "partition 0 reported under-replicated")
        assert "UnderReplicatedPartitions: 0" not in cli("cluster", "status").stdout
    finally:
        cluster.brokers[victim].start()
    wait_for(lambda: "UnderReplicatedPartitions: 0" in cli("cluster", "status").stdout, 40, "all in sync again")
