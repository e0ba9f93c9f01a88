"""Kafka's own Java client (kafka-clients 4.1.1) against tidelog: an idempotent producer, a
transactional consume-transform-produce copy with aborts and read_committed readers, a consumer
group with cooperative-sticky rebalancing and static members, and the AdminClient (topics,
configs, list offsets by time and max timestamp, group offsets, delete records, describe
producers and transactions).

`java/clients/ClientChecks.java` is compiled once per session with javac against Kafka's
classpath (`make kafka-jars`); each check prints one JSON line asserted on here. About 60 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from kafka_process import classpath  # noqa: E402

pytestmark = pytest.mark.interop

BROKER_OVERRIDES = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3",
                    "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="session")
def java_checks(tmp_path_factory):
    cp = classpath()
    out = tmp_path_factory.mktemp("java-classes")
    subprocess.run(["javac", "-cp", cp, "-d", str(out), str(ROOT / "java" / "clients" / "ClientChecks.java")],
                   check=True, capture_output=True, text=True, timeout=180)
    log4j = out / "log4j2.properties"
    log4j.write_text("status = warn\nappender.c.type = Console\nappender.c.name = E\nappender.c.target = SYSTEM_ERR\n"
                     "appender.c.layout.type = PatternLayout\nappender.c.layout.pattern = %p %m%n\n"
                     "rootLogger.level = WARN\nrootLogger.appenderRef.e.ref = E\n")

    def run(bootstrap: str, check: str) -> dict:
        r = subprocess.run(["java", "-Xmx256m", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{out}:{cp}",
                            "ClientChecks", bootstrap, check, f"j{uuid.uuid4().hex[:6]}"],
                           capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, f"{check}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
        return json.loads([line for line in r.stdout.splitlines() if line.startswith("{")][-1])

    return run


def test_idempotent_producer(module_broker, java_checks):
    r = java_checks(module_broker.bootstrap, "idempotent")
    assert r == {"sent": 3000, "read": 3000, "distinct": 3000, "ordered": True}


def test_transactional_copy_with_aborts(module_broker, java_checks):
    r = java_checks(module_broker.bootstrap, "eos")
    assert r["aborted"] >= 1 and r["transactions"] > r["aborted"]
    assert r["all_present"] and r["duplicates"] == 0 and r["read_committed"] == r["inputs"]
    assert r["read_uncommitted"] > r["read_committed"]  # the aborted copies are in the log, hidden


def test_cooperative_sticky_static_group(module_broker, java_checks):
    r = java_checks(module_broker.bootstrap, "groups")
    assert r["seen"] == r["records"] == 400
    assert r["first"] >= 1 and r["second"] >= 1 and r["first"] + r["second"] == 4 and r["overlap"] == 0
    assert r["committed_total"] == 400


def test_admin_client(module_broker, java_checks):
    r = java_checks(module_broker.bootstrap, "admin")
    assert r["described_partitions"] == 2
    assert r["retention_ms"] == "3600000" and r["retention_bytes_type"] == "LONG"
    assert (r["earliest"], r["latest"], r["for_timestamp"]) == (0, 10, 4)
    assert (r["max_timestamp_offset"], r["max_timestamp"]) == (9, 1_767_225_609_000)
    assert r["group_offset"] == 4 and r["group_offset_after_delete"] is True
    assert r["earliest_after_delete"] == 3
    assert r["producers_on_partition"] == 1 and r["listed_transactions"] == 1
    assert r["transaction_state"] == "Ongoing"
    assert r["deleted"] is True
