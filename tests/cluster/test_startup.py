"""A broker serves no request before it has joined the cluster (issue 26, defect 10): Kafka
enables request processing only at the end of its start-up. Before the fix a broker started
while etcd was away answered Metadata at once from an empty copy of the cluster state (no
brokers, no controller), then gave up and exited when etcd did not answer."""

from __future__ import annotations

import time

import pytest
from broker_process import BrokerProcess

from tidelog.cli.client import ClientError, KafkaClient

pytestmark = pytest.mark.timeout(120)


def metadata(b: BrokerProcess, timeout: float) -> object | None:
    """The broker's Metadata answer (or the error it served), None when it refused the connection
    or answered nothing."""
    try:
        with KafkaClient(b.bootstrap, timeout=timeout) as client:
            return client.request(3, {"topics": [], "allow_auto_topic_creation": False}, version=9)
    except ClientError as e:  # it took the connection and served something (ApiVersions at least)
        return e
    except (TimeoutError, OSError):
        return None


def test_a_broker_answers_only_once_it_joined_the_cluster(etcd, tmp_path):
    etcd.pause()
    b = BrokerProcess(
        tmp_path / "b1",
        {"node.id": "1", "etcd.connect": f"{etcd.endpoint_hostport}/startup", "etcd.connection.timeout.ms": "1000"},
    )
    try:
        b.start(wait=False)
        deadline = time.monotonic() + 30
        while "node 1: cannot" not in b.log() and "started" not in b.log() and "listening" not in b.log():
            assert time.monotonic() < deadline, b.log()
            assert b.proc.poll() is None, b.log()
            time.sleep(0.05)  # polling the broker's log for its first words, not a timed wait
        early = [metadata(b, timeout=1.0) for _ in range(3)]  # etcd still paused
        assert all(m is None for m in early), f"answered before joining: {early}"
    finally:
        etcd.resume()
    deadline = time.monotonic() + 30
    answer = None
    while answer is None:
        assert time.monotonic() < deadline, b.log()
        assert b.proc.poll() is None, f"the broker exited instead of waiting for etcd:\n{b.log()}"
        answer = metadata(b, timeout=2.0)
    assert [x.node_id for x in answer.brokers] == [1], answer  # the first answer already knows the cluster
    while answer.controller_id != 1:  # the controller is elected in the background
        assert time.monotonic() < deadline, (answer, b.log())
        answer = metadata(b, timeout=2.0)
    b.stop()
