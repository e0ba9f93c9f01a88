"""Regression tests for what `fuzz/atheris_handlers.py` found, each with the frame it found.

1. CreateTopics / CreatePartitions asking for many partitions (atheris: a CreateTopics v3 of 16,386
   partitions stalled the broker past the 10 s timeout). Creating each partition scanned every
   log (quadratic: 25 s for 3,000), deleting a topic rewrote the checkpoints once per partition
   (50 s), CreatePartitions had no upper bound at all (2^31-1 partitions), and every partition
   holds 5 open files, so a few thousand exhausted RLIMIT_NOFILE half-way (EMFILE), leaving a
   broker unable to open anything, even its logs at the next start. Now: Kafka's 10,000 new
   partitions per CreateTopics or CreatePartitions request (POLICY_VIOLATION for every topic of
   the request), and no creation (nor auto-creation) past what the open-file limit allows
   (POLICY_VIOLATION / UNKNOWN_TOPIC_OR_PARTITION).
2. Metadata v10-11 naming a topic by id only (null name): the answer, whose names are not nullable
   before v12, could not be encoded (TypeError; the handler error closed the connection). Now, as
   Kafka: INVALID_REQUEST for every requested topic, a null name answered as "".
"""

from __future__ import annotations

import base64
import socket
import struct
import sys

import pytest
from broker_process import BrokerProcess
from inproc import InProcessBroker
from kio.serial import entity_reader

from tidelog.cli.client import KafkaClient
from tidelog.wire.schemas import response_schema

POLICY_VIOLATION, INVALID_PARTITIONS, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST = 44, 37, 3, 42

# atheris' timeout input: CreateTopics v3, topics "t093dda" (16,386 partitions) and "t093ddaout" (2)
CREATE_TOPICS_16386 = base64.b64decode(
    "ABMAAwAAAAIADmFpb2thZmthLWFkbWluAAAAAgAHdDA5M2RkYQAAQAIAAQAAAAAAAAAAAAp0MDkzZGRhb3V0AAAAAgABAAAAAAAAAAAAAJxAAA=="
)

# atheris' crash input: Metadata v11, one topic with a null name and a topic id, then garbage
METADATA_V11_NULL_NAME = base64.b64decode(
    "AAMACwAAEjQABGZ1enoAAgAAAAAAAP////8AAAAAAAAAAAAAAAEFZgADAAsAABI0enUEZnoAAAIAAAAAAAAAAAAAAAAAAAABBWZ1enoAAQB1"
    "enoAAQAA//////////////////////////////////8="
)


def raw_request(port: int, frame: bytes, api_key: int, version: int, flexible: bool = False):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            buf += chunk
    value, _ = entity_reader(response_schema(api_key, version))(buf[4:], 5 if flexible else 4)
    return value


@pytest.fixture(scope="module")
def inproc(tmp_path_factory):
    b = InProcessBroker(tmp_path_factory.mktemp("atheris-findings")).start()
    yield b
    b.stop()


def test_create_topics_of_too_many_partitions_is_refused_whole(inproc):
    resp = raw_request(inproc.port, CREATE_TOPICS_16386, 19, 3)
    assert [(t.name, t.error_code.value) for t in resp.topics] == [
        ("t093dda", POLICY_VIOLATION),
        ("t093ddaout", POLICY_VIOLATION),
    ]
    assert resp.topics[0].error_message == "Excessively large number of partitions per request."
    assert inproc.call(lambda: inproc.broker.registry.get("t093ddaout")) is None
    assert inproc.collector.errors() == []


def test_metadata_v11_by_topic_id_is_an_invalid_request(inproc):
    resp = raw_request(inproc.port, METADATA_V11_NULL_NAME, 3, 11, flexible=True)
    assert [(t.name, t.error_code.value, t.partitions) for t in resp.topics] == [("", INVALID_REQUEST, ())]
    assert inproc.collector.errors() == []


def test_create_partitions_is_bounded(inproc):
    with KafkaClient(f"127.0.0.1:{inproc.port}") as c:
        assert (
            c.request(
                19,
                {"topics": [{"name": "grow", "num_partitions": 1, "replication_factor": 1}], "timeout": 5000},
                version=3,
            )
            .topics[0]
            .error_code.value
            == 0
        )
        for count, code in ((2**31 - 1, POLICY_VIOLATION), (10_002, POLICY_VIOLATION), (1, INVALID_PARTITIONS), (3, 0)):
            resp = c.request(
                37,
                {
                    "topics": [{"name": "grow", "count": count, "assignments": None}],
                    "timeout": 5000,
                    "validate_only": False,
                },
                version=1,
            )
            assert resp.results[0].error_code.value == code, (count, resp)
    assert inproc.call(lambda: inproc.broker.registry.get("grow").partitions) == 3
    assert inproc.collector.errors() == []


class LimitedBroker(BrokerProcess):
    """`tidelog serve` under a low RLIMIT_NOFILE (soft = hard, so serve cannot raise it): room for
    (1668 - 1668 // 4) // 5 = 250 partitions, of which the two internal topics take 100."""

    def command(self) -> list[str]:
        cmd = super().command()
        boot = (
            "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (1668, 1668)); "
            "sys.argv = ['tidelog'] + sys.argv[1:]; runpy.run_module('tidelog', run_name='__main__')"
        )
        return [sys.executable, "-c", boot, *cmd[3:]]


def test_partitions_past_the_open_file_limit_are_refused(tmp_path):
    b = LimitedBroker(tmp_path / "data").start()
    try:

        def create(c, name, n):
            return c.request(
                19,
                {"topics": [{"name": name, "num_partitions": n, "replication_factor": 1}], "timeout": 5000},
                version=3,
            ).topics[0]

        with KafkaClient(b.bootstrap) as c:
            assert create(c, "big", 200).error_code.value == POLICY_VIOLATION
            assert create(c, "fits", 150).error_code.value == 0
            refused = create(c, "more", 1)
            assert refused.error_code.value == POLICY_VIOLATION and "RLIMIT_NOFILE" in refused.error_message
            md = c.request(3, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True}, version=4)
            assert md.topics[0].error_code.value == UNKNOWN_TOPIC_OR_PARTITION
        b.restart()  # the broker can still open all its logs
        with KafkaClient(b.bootstrap) as c:
            md = c.request(3, {"topics": [{"name": "fits"}], "allow_auto_topic_creation": False}, version=4)
            assert md.topics[0].error_code.value == 0 and len(md.topics[0].partitions) == 150
        assert "Traceback" not in b.log() and "ERROR" not in b.log()
    finally:
        b.stop()
