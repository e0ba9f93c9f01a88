"""`tidelog produce` and `tidelog consume` against a real broker: formats, headers, timestamps,
groups, isolation. About 25 s (each consume is a librdkafka client starting up)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.cli.client import KafkaClient
from tidelog.cli.produce import Line, UsageError, parse_line
from tidelog.log import PartitionLog
from tidelog.log.records import CONTROL_ABORT, CONTROL_COMMIT, Record, build_batch
from tidelog.log.txnindex import AbortedTxn

pytestmark = pytest.mark.interop


def tidelog(*args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tidelog", *map(str, args)], input=stdin, capture_output=True, text=True, timeout=120
    )


def make_topic(b, name: str, partitions: int = 1) -> str:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(10)
    return name


def test_parse_line():
    assert parse_line("k\tv\tw", "\t", False, False) == Line(b"k", b"v\tw")
    assert parse_line("only value", "\t", False, False) == Line(None, b"only value")
    assert parse_line("1700000000000\ta:1,b:2\tk\tv", "\t", True, True) == Line(
        b"k", b"v", 1_700_000_000_000, [("a", b"1"), ("b", b"2")]
    )
    assert parse_line("2023-11-14T22:13:20Z\t\tk\tv", "\t", True, True).timestamp == 1_700_000_000_000
    with pytest.raises(UsageError):
        parse_line("no-tab", "\t", True, False)


def test_produce_then_consume_json_and_text(broker):
    topic = make_topic(broker, "console", 2)
    res = tidelog(
        "produce",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--partition",
        1,
        "--header",
        "src=test",
        stdin="k0\tfirst\n",
    )
    assert res.returncode == 0, res.stderr
    assert "1 records sent, 1 delivered, 0 failed" in res.stderr
    res = tidelog(
        "produce",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--partition",
        0,
        "--parse-timestamp",
        "--parse-headers",
        stdin="1700000000001\t\tk1\tvalue one\n1700000000002\t\tno key here\n1700000000123\th1:x,h2:y\tk2\tvalue two\n",
    )
    assert res.returncode == 0, res.stderr

    res = tidelog(
        "consume", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning", "--format", "json"
    )
    assert res.returncode == 0, res.stderr
    got = sorted((json.loads(line) for line in res.stdout.splitlines()), key=lambda r: (r["partition"], r["offset"]))
    assert [(r["partition"], r["offset"], r["key"], r["value"]) for r in got] == [
        (0, 0, "k1", "value one"),
        (0, 1, None, "no key here"),
        (0, 2, "k2", "value two"),
        (1, 0, "k0", "first"),
    ]
    assert [r["timestamp"] for r in got[:3]] == [1_700_000_000_001, 1_700_000_000_002, 1_700_000_000_123]
    assert got[2]["headers"] == [["h1", "x"], ["h2", "y"]] and got[3]["headers"] == [["src", "test"]]
    assert got[0]["timestamp_type"] == "CreateTime" and got[0]["topic"] == topic
    assert "4 records, 2/2 partitions done" in res.stderr

    res = tidelog("consume", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", 0, "--offset", 2)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [f"{topic}\t0\t2\t2023-11-14T22:13:20.123Z\tCreateTime\tk2\tvalue two\th1=x,h2=y"]


def test_group_resumes_where_it_committed(broker):
    topic = make_topic(broker, "grouped", 3)
    first = "".join(f"k{i}\tv{i}\n" for i in range(30))
    assert tidelog("produce", "--bootstrap-server", broker.bootstrap, "--topic", topic, stdin=first).returncode == 0
    args = (
        "consume",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--group",
        "readers",
        "--from-beginning",
    )
    res = tidelog(*args)
    assert res.returncode == 0, res.stderr
    assert sorted(line.split("\t")[6] for line in res.stdout.splitlines()) == sorted(f"v{i}" for i in range(30))
    second = "".join(f"k{i}\tw{i}\n" for i in range(12))
    assert tidelog("produce", "--bootstrap-server", broker.bootstrap, "--topic", topic, stdin=second).returncode == 0
    res = tidelog(*args)
    assert res.returncode == 0, res.stderr
    assert sorted(line.split("\t")[6] for line in res.stdout.splitlines()) == sorted(f"w{i}" for i in range(12))
    third = "".join(f"k{i}\tz{i}\n" for i in range(6))
    assert tidelog("produce", "--bootstrap-server", broker.bootstrap, "--topic", topic, stdin=third).returncode == 0
    res = tidelog(
        "consume",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--group",
        "readers",
        "--partition",
        0,
        "--partition",
        1,
        "--partition",
        2,
    )  # assigned, from the committed offsets
    assert res.returncode == 0, res.stderr
    assert sorted(line.split("\t")[6] for line in res.stdout.splitlines()) == sorted(f"z{i}" for i in range(6))
    desc = tidelog("groups", "describe", "--bootstrap-server", broker.bootstrap, "--group", "readers")
    assert desc.returncode == 0 and topic in desc.stdout


def _has_transactions(b) -> bool:
    with KafkaClient(b.bootstrap) as c:
        return 22 in c.versions and 26 in c.versions  # InitProducerId, EndTxn


def test_transactional_produce_and_isolation(broker):
    assert _has_transactions(broker), "InitProducerId and EndTxn must be routed"
    topic = make_topic(broker, "txns", 1)
    base = ("produce", "--bootstrap-server", broker.bootstrap, "--topic", topic)
    assert tidelog(*base, "--transactional-id", "t-commit", stdin="a\t1\nb\t2\n").returncode == 0
    res = tidelog(*base, "--transactional-id", "t-abort", "--abort", stdin="c\t3\n")
    assert res.returncode == 0 and "1 aborted" in res.stderr, res.stderr
    assert (
        tidelog(*base, "--transactional-id", "t-commit", "--transaction-size", "1", stdin="d\t4\ne\t5\n").returncode
        == 0
    )
    read = ("consume", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning")
    committed = tidelog(*read, "--isolation", "read_committed")
    everything = tidelog(*read, "--isolation", "read_uncommitted")
    values = lambda r: [line.split("\t")[6] for line in r.stdout.splitlines()]
    assert values(committed) == ["1", "2", "4", "5"], committed.stderr
    assert values(everything) == ["1", "2", "3", "4", "5"], everything.stderr


def test_isolation_over_transactions_written_by_the_log_engine(broker):
    """Works before the transaction coordinator exists: the broker serves a log that holds an
    aborted and a committed transaction (written with the log engine while it was stopped)."""
    topic = make_topic(broker, "isolated", 1)
    broker.stop()
    log = PartitionLog.open(broker.data_dir, topic, 0)
    t = 1_700_000_000_000

    def txn_batch(pid: int, values: list[bytes]) -> bytes:
        return build_batch(
            [Record(b"k", v, t) for v in values], producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True
        )

    log.append_raw(txn_batch(7, [b"aborted-1", b"aborted-2"]))  # offsets 0-1
    log.append_raw(txn_batch(8, [b"committed-1"]))  # 2
    log.append_control(CONTROL_ABORT, 7, 0, 0, now_ms=t)  # 3
    log.append_aborted_txn(AbortedTxn(7, 0, 3, 2))
    log.append_control(CONTROL_COMMIT, 8, 0, 0, now_ms=t)  # 4
    log.append_raw(build_batch([Record(b"k", b"plain", t)]))  # 5
    log.close()
    broker.start()
    read = ("consume", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning")
    values = lambda r: [line.split("\t")[6] for line in r.stdout.splitlines()]
    committed = tidelog(*read)  # read_committed is the default
    assert committed.returncode == 0, committed.stderr
    assert values(committed) == ["committed-1", "plain"]
    everything = tidelog(*read, "--isolation", "read_uncommitted", "--format", "json")
    assert [json.loads(x)["value"] for x in everything.stdout.splitlines()] == [
        "aborted-1",
        "aborted-2",
        "committed-1",
        "plain",
    ]


def test_client_properties_reach_a_sasl_listener(tmp_path):
    """--property and --command-config carry SASL settings to librdkafka (PLAIN over plaintext)."""
    from broker_process import BrokerProcess, free_port

    port = free_port()
    b = BrokerProcess(
        tmp_path / "data",
        {
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
            ),
        },
        port=port,
    )
    b.start()
    try:
        props = [
            "--property",
            "security.protocol=SASL_PLAINTEXT",
            "--property",
            "sasl.mechanism=PLAIN",
            "--property",
            "sasl.username=alice",
            "--property",
            "sasl.password=alice-secret",
        ]
        res = tidelog("produce", "--bootstrap-server", b.bootstrap, "--topic", "secured", *props, stdin="k\tv\n")
        assert res.returncode == 0, res.stderr
        cfg = tmp_path / "client.properties"
        cfg.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=alice\nsasl.password=alice-secret\n"
        )
        res = tidelog(
            "consume",
            "--bootstrap-server",
            b.bootstrap,
            "--topic",
            "secured",
            "--from-beginning",
            "--command-config",
            cfg,
        )
        assert res.returncode == 0, res.stderr
        assert [line.split("\t")[5:7] for line in res.stdout.splitlines()] == [["k", "v"]]
        bad = tidelog("produce", "--bootstrap-server", b.bootstrap, "--topic", "secured", "--property", "nonsense")
        assert bad.returncode == 2 and "not KEY=VALUE" in bad.stderr
    finally:
        b.stop()


def test_follow_waits_for_new_records(broker):
    topic = make_topic(broker, "followed", 1)
    assert tidelog("produce", "--bootstrap-server", broker.bootstrap, "--topic", topic, stdin="a\t1\n").returncode == 0
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tidelog",
            "consume",
            "--bootstrap-server",
            broker.bootstrap,
            "--topic",
            topic,
            "--from-beginning",
            "--follow",
            "--max-messages",
            "3",
            "--format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
    )  # lines flushed
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, "the first record was not written out within 30 s"
        first = json.loads(proc.stdout.readline())  # the old record arrives; the consumer keeps waiting
        assert first["value"] == "1" and proc.poll() is None
        assert (
            tidelog(
                "produce", "--bootstrap-server", broker.bootstrap, "--topic", topic, stdin="b\t2\nc\t3\n"
            ).returncode
            == 0
        )
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [json.loads(x)["value"] for x in out.splitlines()] == ["2", "3"]
    assert proc.returncode == 0 and "3 records" in err
