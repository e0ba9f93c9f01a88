"""Partition reassignment (issue 22 done-when 5, KIP-455): a fourth broker joins and every
partition moves from brokers {1,2,3} to {1,2,4} under idempotent acks=all load from three clients
and a consumer; nothing acknowledged is lost (history checker), the replicas on 1, 2 and 4 are
identical batch by batch, broker 3 deletes its copies. A reassignment that cannot complete (its new
replica paused) is listed with its adding/removing replicas and cancelled back."""

from __future__ import annotations

import subprocess
import sys

import pytest
from history import History
from nemesis_clients import PARTITIONS, Clients
from test_nemesis import batches_upto, final_log, replicated_topic
from test_replication import describe, iter_live, wait_for

from tidelog.cli.client import KafkaClient

pytestmark = pytest.mark.timeout(600)


def in_progress(c) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    with KafkaClient(next(iter_live(c)).bootstrap) as client:
        r = client.request(46, {"timeout": 30000, "topics": None}, version=0)
    assert r.error_code.value == 0, r
    return {
        (t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
        for t in r.topics
        for p in t.partitions
    }


def reassign(c, topic: str, targets: dict[int, list[int] | None]) -> None:
    with KafkaClient(next(iter_live(c)).bootstrap) as client:
        r = client.request(
            45,
            {
                "timeout": 30000,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": p, "replicas": t} for p, t in targets.items()]}
                ],
            },
            version=0,
        )
    assert r.error_code.value == 0, r
    assert all(p.error_code.value == 0 for t in r.responses for p in t.partitions), r


def test_move_every_partition_to_a_new_broker_under_load(cluster):
    c = cluster
    topic = replicated_topic(c, "move")
    h = History()
    clients = Clients(c, topic, h)
    clients.start()
    try:
        clients.wait_for_load(200)  # every client at work before the fourth broker joins
        c.add_broker(4)
        c.wait_ready()
        before = describe(c, topic)
        targets = {p["partition"]: [4 if b == 3 else b for b in p["replicas"]] for p in before}
        reassign(c, topic, targets)
        wait_for(lambda: not any(t == topic for t, _ in in_progress(c)), 90, "the reassignments complete")
        after = describe(c, topic)
        assert [p["replicas"] for p in after] == [targets[p["partition"]] for p in after], after
        wait_for(
            lambda: all(sorted(p["isr"]) == [1, 2, 4] and p["leader"] in (1, 2, 4) for p in describe(c, topic)),
            60,
            "the ISR on 1, 2, 4",
        )
        clients.wait_for_load(200)  # some load on the new placement
    finally:
        clients.join()
    for p, recs in final_log(c, topic).items():
        h.final(p, recs)
    found = {k: v for k, v in h.check().items() if v}
    assert not found, h.summary()
    assert not clients.fatal, clients.fatal[:5]
    assert len(h.acks) == sum(clients.counts.values()) and len(h.acks) > 500
    wait_for(
        lambda: not any((c.brokers[3].data_dir / f"{topic}-{p}").exists() for p in range(PARTITIONS)),
        20,
        "broker 3's copies deleted",
    )
    from confluent_kafka import Consumer, TopicPartition

    for p in range(PARTITIONS):
        ends = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "hw"})
        hw = ends.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
        ends.close()
        wait_for(
            lambda p=p, hw=hw: len({tuple(batches_upto(c.brokers[b].data_dir, topic, p, hw)) for b in (1, 2, 4)}) == 1,
            30,
            f"partition {p}: identical replicas",
        )


def test_a_stuck_reassignment_is_listed_and_cancelled(cluster):
    c = cluster
    if 4 not in c.brokers:
        c.add_broker(4)
        c.wait_ready()
    topic = replicated_topic(c, "stuck")
    original = describe(c, topic)[0]["replicas"]
    spare = next(b for b in sorted(c.brokers) if b not in original)
    target = original[:-1] + [spare]
    new = [spare]
    c.pause(new[0])  # the new replica cannot catch up: the move stays in progress
    try:
        reassign(c, topic, {0: target})
        moving = in_progress(c)[(topic, 0)]
        assert moving == (target + [original[-1]], new, [original[-1]]), moving
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "tidelog",
                "cluster",
                "reassign",
                "--list",
                "--bootstrap-server",
                next(iter_live(c)).bootstrap,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert f"{topic}-0\tReplicas: {','.join(map(str, target + [original[-1]]))}" in out.stdout, out.stdout
        reassign(c, topic, {0: None})  # cancel
        assert (topic, 0) not in in_progress(c)
        assert describe(c, topic)[0]["replicas"] == original
        with KafkaClient(next(iter_live(c)).bootstrap) as client:
            r = client.request(
                45,
                {
                    "timeout": 30000,
                    "topics": [{"name": topic, "partitions": [{"partition_index": 0, "replicas": None}]}],
                },
                version=0,
            )
        assert r.responses[0].partitions[0].error_code.value == 85  # NO_REASSIGNMENT_IN_PROGRESS
    finally:
        c.resume(new[0])
    wait_for(lambda: not (c.brokers[new[0]].data_dir / f"{topic}-0").exists(), 30, "the cancelled copy deleted")
    wait_for(lambda: len(describe(c, topic)[0]["isr"]) == 3, 30, "the original ISR")
