"""Apache Kafka 4.3.1's own command-line tools against a running tidelog: kafka-topics,
kafka-configs, the console producer and consumer, kafka-consumer-groups (describe, reset-offsets
--to-datetime --execute), kafka-share-groups with the console share consumer (describe,
reset-offsets --to-earliest / --to-datetime, delete-offsets, delete), kafka-get-offsets,
kafka-transactions, the producer and consumer perf tests, Kafka's verifiable producer and consumer
(its delivery checkers), and kafka-dump-log reading tidelog's segment, index, time-index and
transaction-index files.

The tools run as the scripts run them: `java -cp <Kafka's classpath> <main class> ...`, the
classpath resolved from Maven Central by `make kafka-jars` (java/kafka/pom.xml). About 90 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_process import classpath

pytestmark = pytest.mark.interop

BROKER_OVERRIDES = {
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}
LOG4J = """status = warn
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %m%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    cp = classpath()
    conf = tmp_path_factory.mktemp("tools") / "log4j2.properties"
    conf.write_text(LOG4J)

    def run(main: str, *args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        cmd = ["java", "-Xmx256m", f"-Dlog4j2.configurationFile={conf}", "-cp", cp, main, *args]
        return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)

    return run


def _ok(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_topics_configs_console_groups_offsets(module_broker, tool):
    b = module_broker.bootstrap
    topic = f"jt-{uuid.uuid4().hex[:6]}"
    out = _ok(
        tool(
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            b,
            "--create",
            "--topic",
            topic,
            "--partitions",
            "2",
            "--replication-factor",
            "1",
        )
    )
    assert f"Created topic {topic}." in out
    out = _ok(tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--describe", "--topic", topic))
    assert "PartitionCount: 2" in out and out.count("Leader: 1") == 2
    assert topic in _ok(tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--list")).split()
    _ok(
        tool(
            "kafka.admin.ConfigCommand",
            "--bootstrap-server",
            b,
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
            "--alter",
            "--add-config",
            "retention.ms=123456",
        )
    )
    out = _ok(
        tool(
            "kafka.admin.ConfigCommand",
            "--bootstrap-server",
            b,
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
            "--describe",
        )
    )
    assert "retention.ms=123456" in out and "DYNAMIC_TOPIC_CONFIG" in out

    _ok(
        tool(
            "org.apache.kafka.tools.ConsoleProducer",
            "--bootstrap-server",
            b,
            "--topic",
            topic,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
            stdin="k1:a\nk2:b\nk3:c\n",
        )
    )
    out = _ok(
        tool(
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            b,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            "3",
            "--group",
            f"{topic}-g",
        )
    )
    assert sorted(out.split()) == ["a", "b", "c"]
    out = _ok(
        tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            b,
            "--describe",
            "--group",
            f"{topic}-g",
        )
    )
    rows = [line.split() for line in out.splitlines() if line.startswith(f"{topic}-g ")]
    assert sum(int(r[3]) for r in rows) == 3 and all(r[3] == r[4] for r in rows)  # committed = log end
    out = _ok(tool("org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", b, "--topic", topic))
    assert sum(int(line.rsplit(":", 1)[1]) for line in out.split()) == 3
    out = _ok(
        tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            b,
            "--reset-offsets",
            "--group",
            f"{topic}-g",
            "--topic",
            topic,
            "--to-datetime",
            "2020-01-01T00:00:00.000",
            "--execute",
        )
    )
    new = [line.split() for line in out.splitlines() if line.startswith(f"{topic}-g ")]
    assert len(new) == 2 and all(r[3] == "0" for r in new)


SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def test_share_groups_tool(module_broker, tool):
    """kafka-share-groups.sh and kafka-console-share-consumer.sh (KIP-932): a queue read, described,
    rewound (its group empty) and read again, its offsets deleted, the group deleted."""
    b = module_broker.bootstrap
    topic, group = f"sq-{uuid.uuid4().hex[:6]}", f"sqg-{uuid.uuid4().hex[:6]}"
    _ok(tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--create", "--topic", topic,
             "--partitions", "1", "--replication-factor", "1"))  # fmt: skip
    _ok(tool("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", b, "--topic", topic, stdin="a\nb\nc\n"))
    _ok(tool("kafka.admin.ConfigCommand", "--bootstrap-server", b, "--entity-type", "groups", "--entity-name", group,
             "--alter", "--add-config", "share.auto.offset.reset=earliest"))  # fmt: skip

    def read(n: int) -> list[str]:
        out = _ok(tool("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", b,
                       "--topic", topic, "--group", group, "--max-messages", str(n)))  # fmt: skip
        return out.split()

    def described() -> list[list[str]]:
        out = _ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--describe", "--group", group))
        return [line.split() for line in out.splitlines() if line.startswith(f"{group} ")]

    assert sorted(read(3)) == ["a", "b", "c"]
    (row,) = described()
    assert row[1:] == [topic, "0", "3", "0"], row  # GROUP TOPIC PARTITION START-OFFSET LAG
    out = _ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--reset-offsets", "--group", group, "--topic", topic,
                   "--to-earliest", "--execute"))  # fmt: skip
    assert any(line.split()[1:4] == [topic, "0", "0"] for line in out.splitlines() if line.startswith(group)), out
    (row,) = described()
    assert row[1:] == [topic, "0", "0", "3"], row
    assert sorted(read(3)) == ["a", "b", "c"]  # the whole queue again
    out = _ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--reset-offsets", "--group", group, "--topic", topic,
                   "--to-datetime", "2099-01-01T00:00:00.000", "--execute"))  # fmt: skip
    assert any(line.split()[1:4] == [topic, "0", "3"] for line in out.splitlines() if line.startswith(group)), out
    _ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--delete-offsets", "--group", group, "--topic", topic))
    assert described() == []  # no partition of the group has share state any more
    assert group in _ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--list")).split()
    _ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--delete", "--group", group))
    assert group not in _ok(tool(SHARE_GROUPS, "--bootstrap-server", b, "--list")).split()


def test_perf_tests(module_broker, tool):
    b = module_broker.bootstrap
    topic = f"perf-{uuid.uuid4().hex[:6]}"
    out = _ok(
        tool(
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            "20000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={b}",
            "acks=all",
            "compression.type=lz4",
        )
    )
    assert "20000 records sent" in out
    out = _ok(
        tool(
            "org.apache.kafka.tools.ConsumerPerformance",
            "--bootstrap-server",
            b,
            "--topic",
            topic,
            "--messages",
            "20000",
            "--timeout",
            "30000",
        )
    )
    fields = out.strip().splitlines()[-1].split(", ")
    assert int(fields[4]) >= 20000  # data.consumed.in.nMsg


def test_verifiable_producer_and_consumer(module_broker, tool):
    """Kafka's own delivery checkers: every acknowledged record is consumed."""
    b = module_broker.bootstrap
    topic = f"ver-{uuid.uuid4().hex[:6]}"
    out = _ok(
        tool(
            "org.apache.kafka.tools.VerifiableProducer",
            "--bootstrap-server",
            b,
            "--topic",
            topic,
            "--max-messages",
            "500",
            "--acks",
            "-1",
        )
    )
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    acked = sum(1 for e in events if e.get("name") == "producer_send_success")
    assert acked == 500 and not [e for e in events if e.get("name") == "producer_send_error"]
    out = _ok(
        tool(
            "org.apache.kafka.tools.VerifiableConsumer",
            "--bootstrap-server",
            b,
            "--topic",
            topic,
            "--group-id",
            f"{topic}-g",
            "--max-messages",
            "500",
            "--reset-policy",
            "earliest",
            timeout=120,
        )
    )
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    consumed = sum(e.get("count", 0) for e in events if e.get("name") == "records_consumed")
    assert consumed == 500
    assert any(e.get("name") == "offsets_committed" and e.get("success") for e in events)


def test_transactions_tool(module_broker, tool):
    from confluent_kafka import Producer

    b = module_broker.bootstrap
    topic = f"txt-{uuid.uuid4().hex[:6]}"
    txn_id = f"tool-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": b, "transactional.id": txn_id})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, b"x")
    p.commit_transaction(20)
    out = _ok(tool("org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", b, "list"))
    assert txn_id in out
    out = _ok(
        tool(
            "org.apache.kafka.tools.TransactionsCommand",
            "--bootstrap-server",
            b,
            "describe",
            "--transactional-id",
            txn_id,
        )
    )
    assert "CompleteCommit" in out


def test_dump_log_reads_tidelog_files(broker_factory, tool):
    """kafka-dump-log reads tidelog's .log, .index, .timeindex and .txnindex (on-disk format)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = broker_factory(BROKER_OVERRIDES)
    topic = "dump"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": "4096", "index.interval.bytes": "200"})])[
        topic
    ].result(20)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "dump-tx", "linger.ms": 0})
    p.init_transactions(20)
    for i in range(30):
        p.begin_transaction()
        p.produce(topic, b"v" * 100, key=b"k%d" % i)
        p.flush(10)  # sent before the abort (librdkafka purges what is still queued)
        if i % 3:
            p.commit_transaction(20)
        else:
            p.abort_transaction(20)
    broker.stop()  # closed cleanly: every index trimmed to its entries
    d = broker.data_dir / f"{topic}-0"
    logs = sorted(d.glob("*.log"))
    assert len(logs) > 1, "several segments"
    txnindexes = [f for f in sorted(d.glob("*.txnindex")) if f.stat().st_size]
    assert txnindexes, "aborted transactions were indexed"
    files = [logs[0], logs[0].with_suffix(".index"), logs[0].with_suffix(".timeindex"), txnindexes[0]]
    out = _ok(
        tool(
            "org.apache.kafka.tools.DumpLogSegments",
            "--files",
            ",".join(map(str, files)),
            "--deep-iteration",
            "--print-data-log",
        )
    )
    assert "Exception" not in out and "corrupt" not in out.lower(), out[-3000:]
    assert "baseOffset: 0" in out and "isTransactional: true" in out
    assert "endTxnMarker: ABORT" in out and "endTxnMarker: COMMIT" in out
    assert "offset:" in out and "timestamp:" in out  # index and time index entries
    assert "producerId:" in out and "firstOffset:" in out  # txn index entries


def test_dump_log_decodes_tidelogs_transaction_log(broker_factory, tool):
    """kafka-dump-log's transaction log decoder reads tidelog's `__transaction_state`: Kafka's
    value version 1 (transaction.version 2) with KIP-890's tagged fields, here a transaction
    version 2 producer's (Produce v12 adding the partition, EndTxn v5 bumping the epoch)."""
    from tidelog.cli.client import KafkaClient
    from tidelog.log.records import Record, build_batch

    broker = broker_factory(BROKER_OVERRIDES)
    with KafkaClient(broker.bootstrap) as c:
        c.request(
            19,
            {
                "topics": [
                    {"name": "tv2", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                ],
                "timeout": 10_000,
                "validate_only": False,
            },
            version=5,
        )
        init = c.request(
            22,
            {"transactional_id": "dump-tv2", "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
            version=5,
        )
        pid, epoch = init.producer_id, init.producer_epoch
        records = build_batch(
            [Record(b"k", b"v", 0)], producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True
        )
        produced = c.request(
            0,
            {
                "transactional_id": "dump-tv2",
                "acks": -1,
                "timeout": 10_000,
                "topic_data": [{"name": "tv2", "partition_data": [{"index": 0, "records": records}]}],
            },
            version=12,
        )
        assert produced.responses[0].partition_responses[0].error_code.value == 0
        ended = c.request(
            26,
            {"transactional_id": "dump-tv2", "producer_id": pid, "producer_epoch": epoch, "committed": True},
            version=5,
        )
        assert (ended.error_code.value, ended.producer_epoch) == (0, epoch + 1)
    broker.stop()
    logs = [f for f in sorted(broker.data_dir.glob("__transaction_state-*/*.log")) if f.stat().st_size]
    out = _ok(
        tool(
            "org.apache.kafka.tools.DumpLogSegments",
            "--files",
            ",".join(map(str, logs)),
            "--print-data-log",
            "--transaction-log-decoder",
        )
    )
    assert "Exception" not in out and "Unknown" not in out, out[-3000:]
    # the records as Kafka's decoder prints them (JSON of TransactionLogKey / TransactionLogValue)
    values = [line for line in out.splitlines() if '"transactionalId":"dump-tv2"' in line]
    assert len(values) == 4, out[-3000:]  # Empty, Ongoing, PrepareCommit, CompleteCommit
    assert '"version":"1"' in values[-1] and '"clientTransactionVersion":2' in values[-1], values[-1]
    assert f'"producerEpoch":{epoch + 1}' in values[-1] and '"transactionStatus":4' in values[-1], values[-1]
