"""Share groups in a cluster (KIP-932), in the simulation: a share consumer keeps its promises
while the brokers it depends on fail in turn - the data partition's leader (the share-partition
leader), the share coordinator (the leader of the share state's `__share_group_state` partition)
and the group coordinator. What must hold: an accepted record is never delivered again; a
released one, and one acquired but never acknowledged, is delivered again with its delivery
count raised; every record is delivered; a deposed leader's late write does not overwrite the
state its successor wrote."""

from __future__ import annotations

import asyncio

import pytest

from tidelog.share.state_store import coordinator_partition

from .scripted import as_client, client, produce, ready_topic, simulate, state
from .share_client import ACCEPT, RELEASE, Delivery, ShareConsumer

pytestmark = pytest.mark.timeout(180)
TOPIC, GROUP = "sq", "g"


async def earliest(c, group: str = GROUP) -> None:
    """share.auto.offset.reset=earliest for the group, through any broker (etcd: all have it)."""
    resp = await as_client(
        c,
        c.any_broker(
            44,
            1,
            {
                "resources": [
                    {
                        "resource_type": 32,
                        "resource_name": group,
                        "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}],
                    }
                ],
                "validate_only": False,
            },
        ),
    )
    assert resp.responses[0].error_code.value == 0, resp


async def fetch_until(sim, sc: ShareConsumer, done, acks=None, timeout_s: float = 60) -> list[Delivery]:
    """Fetch (the first time with `acks`) until `done(all deliveries so far)`."""
    got: list[Delivery] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    pending = acks
    while loop.time() < deadline:
        await as_client(sc.c, sc.heartbeat())
        new, errors = await as_client(sc.c, sc.fetch(acks=pending))
        if pending and not any(p in errors for p in pending):
            pending = None
        got += new
        if pending is None and done(got):
            return got
        await asyncio.sleep(0.3)
    raise AssertionError(f"not done after {timeout_s} s: {got}, acknowledgements {pending} not taken")


def offsets(ds: list[Delivery]) -> set[int]:
    return {d.offset for d in ds}


async def restart_leader(sim, topic: str, partition: int = 0) -> int:
    """Crash the leader of the partition (keeping its disk), wait for the next leader, and bring
    the crashed broker back; which broker it was."""
    before = state(sim, topic, partition)
    node = before.leader
    sim.brokers[node].crash()
    assert await sim.until(lambda: state(sim, topic, partition).leader_epoch > before.leader_epoch, 30)
    assert state(sim, topic, partition).leader != node
    sim.brokers[node].start()
    return node


def test_share_records_keep_their_promises_across_leader_and_coordinator_failures():
    seen: dict[str, list[list[Delivery]]] = {}

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, TOPIC, partitions=1)
        await earliest(c)
        for i in range(10):
            code, _ = await produce(c, TOPIC, 0, [f"v{i}"])
            assert code == 0
        sc = ShareConsumer(client(sim, "s"), GROUP, TOPIC)
        await as_client(sc.c, sc.join())
        first = await fetch_until(sim, sc, lambda ds: offsets(ds) == set(range(10)))
        assert {d.delivery_count for d in first} == {1}
        # accept 0-3, release 4-5; 6-9 stay acquired, never acknowledged
        again = await fetch_until(
            sim, sc, lambda ds: {4, 5} <= offsets(ds), acks={0: [(0, 3, ACCEPT), (4, 5, RELEASE)]}
        )
        assert all(d.delivery_count == 2 for d in again if d.offset in (4, 5)), again

        # 1. the data partition's leader fails: its successor loads the state its predecessor wrote
        await restart_leader(sim, TOPIC)
        after_leader = await fetch_until(sim, sc, lambda ds: offsets(ds) >= set(range(4, 10)))
        seen["after_leader"] = [after_leader]
        assert not offsets(after_leader) & set(range(4)), "an accepted record was delivered again"
        assert all(d.delivery_count >= 2 for d in after_leader), after_leader
        await fetch_until(sim, sc, lambda ds: True, acks={0: [(d.offset, d.offset, ACCEPT) for d in after_leader]})

        # 2. the share coordinator fails: the state it wrote is the next one's
        await restart_leader(sim, "__share_group_state", coordinator_partition((GROUP, sc.topic_id, 0), 2))
        for i in range(10, 12):
            code, _ = await produce(c, TOPIC, 0, [f"v{i}"])
            assert code == 0
        after_coord = await fetch_until(sim, sc, lambda ds: offsets(ds) >= {10, 11})
        seen["after_coordinator"] = [after_coord]
        assert offsets(after_coord) == {10, 11}, after_coord
        await fetch_until(sim, sc, lambda ds: True, acks={0: [(10, 11, ACCEPT)]})

        # 3. the group coordinator fails: the member carries on (it joins again if fenced)
        from tidelog.groups.records import java_string_hash

        await restart_leader(sim, "__consumer_offsets", abs(java_string_hash(GROUP)) % 2)
        code, _ = await produce(c, TOPIC, 0, ["v12"])
        assert code == 0
        last = await fetch_until(sim, sc, lambda ds: 12 in offsets(ds))
        assert offsets(last) == {12}, last

    sim = simulate(body)
    assert not sim.violations, sim.violations


def describe_start(sim, c, topic_id) -> int:
    """The share-partition start offset the group's coordinator reports (DescribeShareGroupOffsets)."""

    async def ask() -> int:
        coord = await c.any_broker(10, 3, {"key": GROUP, "key_type": 0})
        resp = await c.call(
            (coord.host, coord.port),
            90,
            1,
            {"groups": [{"group_id": GROUP, "topics": [{"topic_name": TOPIC, "partitions": [0]}]}]},
        )
        return int(resp.groups[0].topics[0].partitions[0].start_offset)

    return ask()


def test_a_deposed_share_partition_leader_cannot_overwrite_its_successors_state():
    """The data partition's leader is paused past its session while a member holds records. The
    next leader loads the state (recording its leader epoch at the coordinator), gives
    the records again and they are accepted. When the old leader resumes, its locks have expired:
    it writes the records as available again - at its old epoch, which the coordinator refuses.
    So the accepted records are never delivered again, and the start offset stays past them."""

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, TOPIC, partitions=1)
        await earliest(c)
        resp = await as_client(
            c,
            c.any_broker(
                44,
                1,
                {
                    "resources": [
                        {
                            "resource_type": 32,
                            "resource_name": GROUP,
                            "configs": [
                                {"name": "share.record.lock.duration.ms", "config_operation": 0, "value": "15000"}
                            ],
                        }
                    ],
                    "validate_only": False,
                },
            ),
        )
        assert resp.responses[0].error_code.value == 0, resp
        for i in range(5):
            code, _ = await produce(c, TOPIC, 0, [f"v{i}"])
            assert code == 0
        sc = ShareConsumer(client(sim, "s"), GROUP, TOPIC)
        await as_client(sc.c, sc.join())
        await fetch_until(sim, sc, lambda ds: offsets(ds) == set(range(5)))
        old = state(sim, TOPIC, 0)
        sim.brokers[old.leader].pause()  # holds the records' locks; believes it leads
        assert await sim.until(lambda: state(sim, TOPIC, 0).leader_epoch > old.leader_epoch, 30)
        # given again by the new leader (the old one's acquisitions were never written: counted 1)
        await fetch_until(sim, sc, lambda ds: offsets(ds) == set(range(5)))
        await fetch_until(sim, sc, lambda ds: True, acks={0: [(0, 4, ACCEPT)]})
        assert await as_client(c, describe_start(sim, c, sc.topic_id)) == 5
        await asyncio.sleep(16)  # virtual seconds: the paused leader's locks (15 s) have expired
        sim.brokers[old.leader].resume()  # it writes its expired records as available again
        await asyncio.sleep(10)  # virtual seconds: the resumed broker's expiry and its write run
        assert await as_client(c, describe_start(sim, c, sc.topic_id)) == 5, "the deposed leader's write was taken"
        code, _ = await produce(c, TOPIC, 0, ["v5"])
        assert code == 0
        later = await fetch_until(sim, sc, lambda ds: 5 in offsets(ds))
        assert offsets(later) == {5}, later

    sim = simulate(body, overrides={"group.share.min.record.lock.duration.ms": "1000"})
    assert not sim.violations, sim.violations
