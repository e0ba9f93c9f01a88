"""Kafka Streams and Kafka Connect (4.3.1) against tidelog.

- Streams: a word count with processing.guarantee=exactly_once_v2 (java/streams/WordCount.java)
  runs while lines are produced, survives a restart of tidelog in the middle, and its output,
  read with read_committed, ends with exactly the right count of every word; with the classic
  group protocol and with the streams group protocol (KIP-1071: tidelog creates the internal
  topics and assigns the tasks). Its producer runs transaction version 2 (KIP-890 part 2: EndTxn
  v5, TxnOffsetCommit v5, no AddPartitionsToTxn), checked from the versions tidelog counted. With
  the streams protocol, two application instances share the tasks, each holding standbys of the
  other's stateful tasks, and one takes everything over when the other stops.
- Connect standalone: the FileStream source connector reads a file into a tidelog topic and the
  FileStream sink connector writes the topic back to another file, intact and in order.
About 60 s.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from broker_process import free_port  # noqa: E402
from kafka_process import classpath  # noqa: E402
from request_versions import versions_of, versions_used  # noqa: E402

pytestmark = pytest.mark.interop

METRICS_PORT = free_port()
OVERRIDES = {
    "metrics.listener": f"127.0.0.1:{METRICS_PORT}",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}
LOG4J = (
    "status = warn\nappender.c.type = Console\nappender.c.name = E\nappender.c.target = SYSTEM_ERR\n"
    "appender.c.layout.type = PatternLayout\nappender.c.layout.pattern = %p %m%n\n"
    "rootLogger.level = WARN\nrootLogger.appenderRef.e.ref = E\n"
)


def _create(bootstrap: str, *topics: str, partitions: int = 2) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
        f.result(30)


@pytest.mark.parametrize("protocol", ["classic", "streams"])
def test_streams_word_count_exactly_once_across_a_restart(broker_factory, tmp_path, protocol):
    from confluent_kafka import Consumer, Producer, TopicPartition

    broker = broker_factory(OVERRIDES)
    app, src, dst = f"wc-{uuid.uuid4().hex[:6]}", "wc-in", "wc-out"
    _create(broker.bootstrap, src, dst)
    cp = classpath()
    classes = tmp_path / "classes"
    subprocess.run(
        ["javac", "-cp", cp, "-d", str(classes), str(ROOT / "java" / "streams" / "WordCount.java")],
        check=True,
        capture_output=True,
        timeout=180,
    )
    (tmp_path / "log4j2.properties").write_text(LOG4J)
    stop = tmp_path / "stop"
    out = open(tmp_path / "streams.log", "wb")
    proc = subprocess.Popen(
        [
            "java",
            "-Xmx384m",
            f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}",
            "-cp",
            f"{classes}:{cp}",
            "WordCount",
            broker.bootstrap,
            app,
            src,
            dst,
            str(tmp_path / "state"),
            str(stop),
            protocol,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    sent = Counter()
    try:
        p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})

        def send(lines: int, seed: int) -> None:
            for i in range(lines):
                line = " ".join(words[(seed + i * j) % len(words)] for j in range(1, 4))
                sent.update(line.split())
                p.produce(src, line.encode(), key=b"%d" % i)
            p.flush(30)

        send(200, 1)
        # the application is processing: a first count is out, committed (read_committed)
        first = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": f"r-{uuid.uuid4().hex[:6]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        first.assign([TopicPartition(dst, p, 0) for p in range(2)])
        deadline = time.monotonic() + 120
        try:
            while not ((m := first.poll(0.5)) is not None and not m.error()):
                if time.monotonic() > deadline or proc.poll() is not None:
                    log = (tmp_path / "streams.log").read_text()[-3000:]
                    raise AssertionError(f"no committed count within 120 s (exit code {proc.poll()})\n{log}")
        finally:
            first.close()
        broker.stop()
        broker.start()
        send(200, 2)
        expected = dict(sent)
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": f"r-{uuid.uuid4().hex[:6]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        c.assign([TopicPartition(dst, p, 0) for p in range(2)])
        latest: dict[str, int] = {}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and latest != expected:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            latest[m.key().decode()] = struct.unpack(">q", m.value())[0]
        c.close()
        assert latest == expected, f"counts {latest} != {expected}\n{(tmp_path / 'streams.log').read_text()[-3000:]}"
        used = versions_used(METRICS_PORT)  # since the restart
        assert versions_of(used, "EndTxn") == {5} and versions_of(used, "TxnOffsetCommit") == {5}
        assert not versions_of(used, "AddPartitionsToTxn") and not versions_of(used, "AddOffsetsToTxn")
        assert 13 in versions_of(used, "Produce")
        assert _group_type(broker.bootstrap, app) == protocol
        if protocol == "streams":
            _check_streams_cli(broker.bootstrap, app, src)
    finally:
        stop.touch()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        out.close()


def test_two_streams_instances_share_the_tasks_with_standbys(broker_factory, tmp_path):
    """KIP-1071 with two application instances (two processes) and one standby replica: the broker
    gives each instance active tasks and the other's stateful tasks as standbys, and when one
    instance stops, the other takes its tasks over; the read_committed counts stay exact."""
    import struct

    from confluent_kafka import Consumer, Producer, TopicPartition

    from tidelog.cli.client import KafkaClient

    broker = broker_factory({**OVERRIDES, "group.streams.num.standby.replicas": "1"})
    app, src, dst = f"wc2-{uuid.uuid4().hex[:6]}", "wc2-in", "wc2-out"
    _create(broker.bootstrap, src, dst, partitions=4)
    cp = classpath()
    classes = tmp_path / "classes"
    subprocess.run(
        ["javac", "-cp", cp, "-d", str(classes), str(ROOT / "java" / "streams" / "WordCount.java")],
        check=True,
        capture_output=True,
        timeout=180,
    )
    (tmp_path / "log4j2.properties").write_text(LOG4J)
    procs, logs = [], []
    for i in range(2):
        logs.append(open(tmp_path / f"streams{i}.log", "wb"))
        procs.append(
            subprocess.Popen(
                [
                    "java",
                    "-Xmx256m",
                    f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}",
                    "-cp",
                    f"{classes}:{cp}",
                    "WordCount",
                    broker.bootstrap,
                    app,
                    src,
                    dst,
                    str(tmp_path / f"state{i}"),
                    str(tmp_path / f"stop{i}"),
                    "streams",
                ],
                stdout=logs[i],
                stderr=subprocess.STDOUT,
            )
        )
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
    sent: Counter[str] = Counter()
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})

    def send(lines: int, seed: int) -> None:
        for i in range(lines):
            line = " ".join(words[(seed + i * j) % len(words)] for j in range(1, 4))
            sent.update(line.split())
            p.produce(src, line.encode(), key=b"%d" % i)
        p.flush(30)

    def counts(timeout: float) -> dict[str, int]:
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": f"r-{uuid.uuid4().hex[:6]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        c.assign([TopicPartition(dst, q, 0) for q in range(4)])
        latest: dict[str, int] = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and latest != dict(sent):
            m = c.poll(0.5)
            if m is not None and not m.error():
                latest[m.key().decode()] = struct.unpack(">q", m.value())[0]
        c.close()
        return latest

    def described():
        with KafkaClient(broker.bootstrap) as client:
            r = client.request(89, {"group_ids": [app], "include_authorized_operations": False}, version=0)
        return r.groups[0]

    def both_with_standbys() -> bool:
        g = described()
        return (
            g.group_state == "Stable"
            and len({m.process_id for m in g.members}) == 2
            and all(m.assignment.active_tasks and m.assignment.standby_tasks for m in g.members)
        )

    def diagnose() -> str:
        return "\n".join((tmp_path / f"streams{i}.log").read_text()[-2000:] for i in range(2))

    try:
        send(300, 1)
        deadline = time.monotonic() + 120
        while not both_with_standbys():
            assert time.monotonic() < deadline, f"no two instances with standbys: {described()}\n{diagnose()}"
            time.sleep(0.5)
        g = described()
        for m in g.members:  # a task's standby is never on the process running it active
            other = next(o for o in g.members if o.process_id != m.process_id)
            mine = {(t.subtopology_id, q) for t in m.assignment.standby_tasks for q in t.partitions}
            theirs = {(t.subtopology_id, q) for t in other.assignment.active_tasks for q in t.partitions}
            assert mine and mine <= theirs and {s for s, _ in mine} == {"1"}
        assert counts(120) == dict(sent), diagnose()
        (tmp_path / "stop1").touch()  # one instance leaves: the other takes its tasks over
        procs[1].wait(60)
        send(300, 2)
        assert counts(120) == dict(sent), diagnose()
        g = described()
        assert len(g.members) == 1 and {t.subtopology_id for t in g.members[0].assignment.active_tasks} == {"0", "1"}
    finally:
        for i, proc in enumerate(procs):
            (tmp_path / f"stop{i}").touch()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
            logs[i].close()


def _group_type(bootstrap: str, group: str) -> str | None:
    """The type ListGroups (v5) names the application's group by."""
    from tidelog.cli.client import KafkaClient

    c = KafkaClient(bootstrap)
    try:
        listed = c.request(16, {"states_filter": [], "types_filter": []}, version=5)
    finally:
        c.close()
    return next((g.group_type for g in listed.groups if g.group_id == group), None)


def _check_streams_cli(bootstrap: str, app: str, src: str) -> None:
    """`tidelog groups` shows the streams group as kafka-streams-groups does: listed by type, its
    state and epochs, its member with its tasks, the lag of its source topics."""

    def tidelog(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "tidelog", "groups", *args, "--bootstrap-server", bootstrap],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert tidelog("list", "--type", "streams").split() == [app]
    assert app not in tidelog("list", "--type", "consumer").split()
    state = tidelog("describe", "--group", app, "--state").splitlines()
    assert state[0].split() == [
        "GROUP",
        "COORDINATOR",
        "(ID)",
        "STATE",
        "GROUP-EPOCH",
        "TARGET-ASSIGNMENT-EPOCH",
        "#MEMBERS",
    ]
    assert state[1].split()[0] == app and state[1].split()[3] == "Stable" and state[1].split()[-1] == "1"
    members = tidelog("describe", "--group", app, "--members").splitlines()
    assert "ACTIVE: 0:[0,1]; 1:[0,1]; TARGET-ACTIVE: 0:[0,1]; 1:[0,1];" in members[1]
    offsets = tidelog("describe", "--group", app).splitlines()
    assert {line.split()[1] for line in offsets[2:]} >= {src} and all(line.split()[-1] == "0" for line in offsets[2:])


def test_connect_file_source_and_sink(module_broker_for_connect, tmp_path):
    bootstrap = module_broker_for_connect
    topic = f"connect-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, topic, partitions=1)
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line {i} {'x' * (i % 40)}" for i in range(300)]
    source_file.write_text("\n".join(lines) + "\n")
    (tmp_path / "worker.properties").write_text(
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
        f"offset.storage.file.filename={tmp_path / 'offsets'}\n"
        "offset.flush.interval.ms=500\nplugin.discovery=only_scan\nlisteners=http://127.0.0.1:0\n"
    )
    (tmp_path / "source.properties").write_text(
        "name=file-source\nconnector.class=org.apache.kafka.connect.file.FileStreamSourceConnector\n"
        f"tasks.max=1\nfile={source_file}\ntopic={topic}\n"
    )
    (tmp_path / "sink.properties").write_text(
        "name=file-sink\nconnector.class=org.apache.kafka.connect.file.FileStreamSinkConnector\n"
        f"tasks.max=1\nfile={sink_file}\ntopics={topic}\n"
    )
    (tmp_path / "log4j2.properties").write_text(LOG4J)
    log = open(tmp_path / "connect.log", "wb")
    proc = subprocess.Popen(
        [
            "java",
            "-Xmx384m",
            f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}",
            "-cp",
            classpath(),
            "org.apache.kafka.connect.cli.ConnectStandalone",
            str(tmp_path / "worker.properties"),
            str(tmp_path / "source.properties"),
            str(tmp_path / "sink.properties"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        got: list[str] = []
        while time.monotonic() < deadline:
            if sink_file.exists():
                got = sink_file.read_text().splitlines()
                if len(got) >= len(lines):
                    break
            if proc.poll() is not None:
                break
            time.sleep(0.5)
        assert got == lines, f"{len(got)} of {len(lines)} lines\n{(tmp_path / 'connect.log').read_text()[-3000:]}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def module_broker_for_connect(broker_factory):
    return broker_factory(OVERRIDES).bootstrap
