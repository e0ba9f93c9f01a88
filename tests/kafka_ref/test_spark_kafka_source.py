"""Spark's own Kafka source (spark-sql-kafka-0-10, java/spark-kafka/pom.xml) reading tidelog: a batch
query and a Structured Streaming query (trigger availableNow), with kafka.isolation.level
read_committed and read_uncommitted, over a topic holding plain records, committed transactions
and an aborted one. Spark's driver runs in its own process (tests/kafka_ref/spark_kafka_driver.py).

Maven Central has no spark-sql-kafka-0-10 for Spark 4.3 (the installed pyspark); the newest, 4.2.0,
runs on it here. About 60 s, most of it Spark starting."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "java" / "spark-kafka" / "pom.xml"
CLASSPATH = ROOT / "java" / "spark-kafka" / "target" / "classpath.txt"
# Only what pyspark lacks: its own jars (Scala, Hadoop, Spark's modules) must not be shadowed.
NEEDED = ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10", "kafka-clients", "commons-pool2")

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(600)]


def jars() -> str:
    if not CLASSPATH.exists() or CLASSPATH.stat().st_mtime < POM.stat().st_mtime:
        subprocess.run(
            [
                "mvn",
                "-B",
                "-q",
                "-f",
                str(POM),
                "dependency:build-classpath",
                "-DincludeScope=runtime",
                "-Dmdep.outputFile=target/classpath.txt",
            ],
            check=True,
            timeout=600,
        )
    found = [p for p in CLASSPATH.read_text().strip().split(":") if any(n in Path(p).name for n in NEEDED)]
    assert len(found) == len(NEEDED), found
    return ",".join(found)


def test_spark_kafka_source_batch_and_streaming_read_committed(broker_factory, tmp_path):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("needs Java and Maven (make kafka-jars)")
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = broker_factory({"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"})
    topic = f"spark-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
    plain = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(20):
        plain.produce(topic, f"plain-{i}".encode(), partition=i % 2)
    assert plain.flush(20) == 0
    tx = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"sp-{uuid.uuid4().hex[:6]}"})
    tx.init_transactions(20)
    for tag, commit in (("c1", True), ("ab", False), ("c2", True)):
        tx.begin_transaction()
        for i in range(15):
            tx.produce(topic, f"{tag}-{i}".encode(), partition=i % 2)
        tx.flush(20)
        (tx.commit_transaction if commit else tx.abort_transaction)(20)
    committed = {f"plain-{i}" for i in range(20)} | {f"{t}-{i}" for t in ("c1", "c2") for i in range(15)}
    aborted = {f"ab-{i}" for i in range(15)}

    classpath = jars()
    for isolation, expected in (("read_committed", committed), ("read_uncommitted", committed | aborted)):
        out = subprocess.run(
            [
                sys.executable,
                str(ROOT / "tests" / "kafka_ref" / "spark_kafka_driver.py"),
                broker.bootstrap,
                topic,
                isolation,
                classpath,
                str(tmp_path / f"ckpt-{isolation}"),
            ],
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert out.returncode == 0, out.stderr[-4000:]
        got = json.loads(out.stdout.strip().splitlines()[-1])
        for mode in ("batch", "stream"):
            values = [v for _p, _o, v in got[mode]]
            assert len(values) == len(set(values)), (isolation, mode, "duplicates")
            assert set(values) == expected, (isolation, mode, sorted(set(values) ^ expected)[:10])
            for part in (0, 1):  # offsets increase within each partition
                offs = [o for p, o, _v in got[mode] if p == part]
                assert offs == sorted(offs)
