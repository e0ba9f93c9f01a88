"""`tidelog groups` on share groups (KIP-932), as kafka-share-groups.sh: list by type, describe
(start offsets, lag, members), reset-offsets of an empty group (by time, to earliest), and
delete-offsets; librdkafka's ShareConsumer reads the queue between them."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from test_console import tidelog

pytestmark = pytest.mark.interop
BROKER_OVERRIDES = {"group.share.heartbeat.interval.ms": "300"}


def read(b, group: str, topic: str, n: int) -> list[str]:
    c = ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": group})
    c.subscribe([topic])
    got: list[str] = []
    deadline = time.monotonic() + 30
    while len(got) < n:
        assert time.monotonic() < deadline, got
        got += [m.value().decode() for m in c.poll(0.3) if not m.error()]
    c.commit_sync()
    c.close()
    return got


def rows(out: str, group: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.startswith(f"{group} ")]


def test_share_groups_from_the_command_line(broker):
    b = broker
    topic, group = f"cq-{uuid.uuid4().hex[:6]}", f"cg-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    res = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([res])[res].result(10)
    p = Producer({"bootstrap.servers": b.bootstrap})
    for v in "abcd":
        p.produce(topic, v.encode())
    assert p.flush(10) == 0
    assert sorted(read(b, group, topic, 4)) == ["a", "b", "c", "d"]

    listed = tidelog("groups", "list", "--bootstrap-server", b.bootstrap, "--type", "share")
    assert listed.returncode == 0 and group in listed.stdout.split(), listed
    verbose = tidelog("groups", "list", "--bootstrap-server", b.bootstrap, "--verbose")
    assert [group, "share", "Empty"] in [line.split() for line in verbose.stdout.splitlines()], verbose.stdout

    def describe() -> list[list[str]]:
        out = tidelog("groups", "describe", "--bootstrap-server", b.bootstrap, "--group", group)
        assert out.returncode == 0, out
        return rows(out.stdout, group)

    assert describe() == [[group, topic, "0", "4", "0"]]  # start offset 4, lag 0: every record accepted
    dry = tidelog("groups", "reset-offsets", "--bootstrap-server", b.bootstrap, "--group", group, "--topic", topic,
                  "--to-datetime", "2000-01-01T00:00:00Z", "--dry-run")  # fmt: skip
    assert dry.returncode == 0 and rows(dry.stdout, group) == [[group, topic, "0", "4", "0"]], dry
    assert describe() == [[group, topic, "0", "4", "0"]]  # a dry run changes nothing
    done = tidelog("groups", "reset-offsets", "--bootstrap-server", b.bootstrap, "--group", group, "--topic", topic,
                   "--to-datetime", "2000-01-01T00:00:00Z", "--execute")  # fmt: skip
    assert done.returncode == 0, done
    assert describe() == [[group, topic, "0", "0", "4"]]
    assert sorted(read(b, group, topic, 4)) == ["a", "b", "c", "d"]  # the whole queue again

    gone = tidelog("groups", "delete-offsets", "--bootstrap-server", b.bootstrap, "--group", group, "--topic", topic)
    assert gone.returncode == 0, gone
    assert describe() == []
    deleted = tidelog("groups", "delete", "--bootstrap-server", b.bootstrap, "--group", group)
    assert deleted.returncode == 0, deleted
    assert group not in tidelog("groups", "list", "--bootstrap-server", b.bootstrap).stdout.split()
