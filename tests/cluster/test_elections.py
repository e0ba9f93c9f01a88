"""Leader elections asked for by an operator (issue 22): ElectLeaders through confluent-kafka's
AdminClient and `tidelog cluster elect-leaders` (kafka-leader-election's output) put partitions
back on their preferred replica after a controlled shutdown moved them; unclean election of a
partition whose in-sync replicas are all gone; a single node answers ELECTION_NOT_NEEDED."""

from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka._model import ElectionType
from confluent_kafka.admin import AdminClient
from test_replication import create_topic, describe, iter_live, wait_for

from tidelog.cli.client import KafkaClient

pytestmark = pytest.mark.timeout(300)


def moved_away(c, topic: str) -> list[int]:
    """Stop (SIGTERM: controlled shutdown) and restart the preferred leader of partition 0; the
    partitions it preferred are then led elsewhere."""
    preferred = describe(c, topic)[0]["replicas"][0]
    c.brokers[preferred].stop()
    c.brokers[preferred].start()
    wait_for(lambda: all(len(p["isr"]) == 3 for p in describe(c, topic)), 40, "the ISR full again")
    away = [p["partition"] for p in describe(c, topic) if p["leader"] != p["replicas"][0]]
    assert away, describe(c, topic)
    return away


def test_preferred_election_through_the_admin_client(cluster):
    c = cluster
    topic = create_topic(c, partitions=6)
    away = moved_away(c, topic)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, p) for p in range(6)]).result(60)
    errors = {tp.partition: err for tp, err in result.items()}
    for p in range(6):
        if p in away:
            assert errors[p] is None, errors
        else:
            assert errors[p] is not None and errors[p].code() == 84, errors  # ELECTION_NOT_NEEDED
    wait_for(lambda: all(p["leader"] == p["replicas"][0] for p in describe(c, topic)), 20, "preferred leaders")


def test_elect_leaders_cli(cluster):
    c = cluster
    topic = create_topic(c, partitions=3)
    away = moved_away(c, topic)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "tidelog",
                "cluster",
                "elect-leaders",
                "--bootstrap-server",
                next(iter_live(c)).bootstrap,
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )

    out = cli("--topic", topic)
    assert out.returncode == 0, out.stderr
    for p in range(3):
        line = (
            f"Successfully completed leader election (PREFERRED) for {topic}-{p}"
            if p in away
            else f"Valid replica already elected for {topic}-{p}"
        )
        assert line in out.stdout, out.stdout
    again = cli("--topic", topic, "--partition", str(away[0]))
    assert f"Valid replica already elected for {topic}-{away[0]}" in again.stdout, again.stdout
    assert all(p["leader"] == p["replicas"][0] for p in describe(c, topic))


def test_kafka_topics_describe_shows_the_cluster_s_leaders(cluster):
    """Kafka's TopicCommand --describe (its Admin asks DescribeTopicPartitions) lists each
    partition's leader, replicas and ISR as Metadata does, wherever leadership is."""
    from kafka_process import classpath

    c = cluster
    topic = create_topic(c, partitions=3)
    moved_away(c, topic)  # partitions led by a broker that is not the preferred one
    want = describe(c, topic)
    out = subprocess.run(
        ["java", "-Xmx256m", "-cp", classpath(), "org.apache.kafka.tools.TopicCommand"]
        + ["--bootstrap-server", c.bootstrap, "--describe", "--topic", topic],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for p in want:
        ids = lambda nodes: ",".join(str(n) for n in nodes)
        line = (
            f"Partition: {p['partition']}\tLeader: {p['leader']}\tReplicas: {ids(p['replicas'])}\tIsr: {ids(p['isr'])}"
        )
        assert line in out.stdout, out.stdout


def test_an_acks_0_producer_follows_a_leader_that_moved_while_its_broker_lives(cluster):
    """acks=0 gets no answer, so a broker that no longer leads the partition closes the
    connection (as Kafka): librdkafka then refreshes its metadata and writes to the new leader,
    instead of sending into the void until its next periodic refresh (5 minutes)."""
    from confluent_kafka import Consumer, Producer

    c = cluster
    topic = create_topic(c, partitions=1, min_isr=1)
    moved_away(c, topic)  # led by a broker that is not the preferred one, which is live
    old = describe(c, topic)[0]["leader"]
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": 0, "linger.ms": 0})
    reader = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "unused"})

    def end() -> int:
        return reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]

    for i in range(10):
        producer.produce(topic, f"before-{i}".encode(), partition=0)
    producer.flush(10)
    wait_for(lambda: end() == 10, 20, "the records of acks=0 before the move")
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(60)
    wait_for(lambda: describe(c, topic)[0]["leader"] not in (old, -1), 20, "the preferred leader back")
    sent = 0

    def arrived() -> bool:
        nonlocal sent
        producer.produce(topic, f"after-{sent}".encode(), partition=0)
        sent += 1
        producer.flush(5)
        return end() > 10

    wait_for(arrived, 30, "acks=0 records reaching the new leader")
    producer.flush(10)
    reader.close()


def test_unclean_election_of_a_partition_without_in_sync_replicas(cluster):
    c = cluster
    topic = create_topic(c, partitions=1, min_isr=1)
    st = describe(c, topic)[0]
    leader, others = st["leader"], [b for b in st["replicas"] if b != st["leader"]]
    c.brokers[others[0]].kill()  # leaves the ISR (broker gone)
    wait_for(lambda: others[0] not in describe(c, topic)[0]["isr"], 30, "the ISR without it")
    c.brokers[others[1]].kill()
    wait_for(lambda: describe(c, topic)[0]["isr"] == [leader], 30, "the leader alone in the ISR")
    c.brokers[leader].kill()
    try:
        restarted = c.brokers[others[0]]
        joins = restarted.log_path.read_text(errors="replace").count("joined cluster")  # the log is appended to
        restarted.start()
        # Until it has joined, the restarted broker (the only one up) answers Metadata from an empty
        # copy (leader -1) while etcd still names the killed leader, whose lease has not expired.
        wait_for(
            lambda: restarted.log_path.read_text(errors="replace").count("joined cluster") > joins,
            30,
            "the restarted broker joined",
        )
        wait_for(lambda: describe(c, topic)[0]["leader"] == -1, 30, "offline: no in-sync replica")
        with KafkaClient(c.brokers[others[0]].bootstrap) as client:
            r = client.request(
                43,
                {"election_type": 0, "topic_partitions": [{"topic": topic, "partitions": [0]}], "timeout": 30000},
                version=2,
            )
            assert r.replica_election_results[0].partition_result[0].error_code.value == 80, r  # preferred: not in sync
            r = client.request(
                43,
                {"election_type": 1, "topic_partitions": [{"topic": topic, "partitions": [0]}], "timeout": 30000},
                version=2,
            )
        assert r.replica_election_results[0].partition_result[0].error_code.value == 0, r
        wait_for(lambda: describe(c, topic)[0]["leader"] == others[0], 20, "the unclean leader")
        assert describe(c, topic)[0]["isr"] == [others[0]]
    finally:
        for b in (leader, others[1]):
            c.brokers[b].start()
    wait_for(lambda: len(describe(c, topic)[0]["isr"]) == 3, 60, "all back in sync")


def test_single_node_has_nothing_to_elect(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    from confluent_kafka.admin import NewTopic

    admin.create_topics([NewTopic("one", 2, 1)])["one"].result(20)
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("one", 0), TopicPartition("one", 5)]).result(
        20
    )
    codes = {tp.partition: err.code() for tp, err in result.items()}
    assert codes == {0: 84, 5: 3}  # ELECTION_NOT_NEEDED; UNKNOWN_TOPIC_OR_PARTITION
