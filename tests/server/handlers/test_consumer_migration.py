"""Online migration between a classic group and a consumer group (KIP-848,
`group.consumer.migration.policy`), through the handlers on a real broker: a ConsumerGroupHeartbeat
upgrading a classic group with a member (which keeps its partitions until it rejoins), the classic
member's JoinGroup / SyncGroup / Heartbeat / OffsetCommit / LeaveGroup served by the consumer group
(generation = member epoch), its revocation before a new assignment, its session timing out, the
group going back to a classic group when the last member of the consumer protocol leaves, the
policy's refusals, and all of it surviving a restart of the coordinator."""

from __future__ import annotations

import asyncio
import time

from tidelog.groups.consumer_embedded import decode_assignment, encode_assignment, encode_subscription
from tidelog.server.handlers import (
    consumer_group_describe,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    sync_group,
)

from .kit import ADVERTISED, GROUP_ID_NOT_FOUND, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, call, started_broker
from .test_consumer_groups import hb, parts

INCONSISTENT_GROUP_PROTOCOL = 23
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81


def join_request(member_id: str, subscription: bytes, group: str = "cg", session: int = 30_000, ptype="consumer"):
    return {
        "group_id": group,
        "session_timeout": session,
        "rebalance_timeout": 30_000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": ptype,
        "protocols": [{"name": "range", "metadata": subscription}],
        "reason": None,
    }


async def classic_join(broker, member_id: str = "", owned_parts=(), **kw) -> dict:
    sub = encode_subscription(["t"], [("t", sorted(owned_parts))] if owned_parts else [], version=1)
    return await call(join_group, broker, 8, join_request(member_id, sub, **kw))


async def classic_sync(broker, member_id: str, generation: int, assignments=None, group: str = "cg") -> dict:
    return await call(
        sync_group,
        broker,
        5,
        {
            "group_id": group,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
        },
    )


async def classic_heartbeat(broker, member_id: str, generation: int, group: str = "cg") -> int:
    r = await call(
        heartbeat,
        broker,
        4,
        {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": None},
    )
    return r["error_code"]


def synced_parts(resp: dict) -> set[int]:
    return {p for t, ps in decode_assignment(resp["assignment"]).partitions if t == "t" for p in ps}


async def classic_group_of_one(broker, group: str = "cg", session: int = 30_000) -> tuple[str, int]:
    """A classic group whose one member owns both partitions of "t" (Stable): (member id, generation)."""
    first = await classic_join(broker, group=group, session=session)
    assert first["error_code"] == MEMBER_ID_REQUIRED
    j = await classic_join(broker, first["member_id"], group=group, session=session)
    mid, gen = j["member_id"], j["generation_id"]
    s = await classic_sync(broker, mid, gen, {mid: encode_assignment(1, [("t", [0, 1])])}, group=group)
    assert s["error_code"] == 0
    return mid, gen


async def described(broker, group: str = "cg") -> dict:
    d = await call(consumer_group_describe, broker, 1, {"group_ids": [group], "include_authorized_operations": False})
    return d["groups"][0]


def members_by_id(g: dict) -> dict[str, dict]:
    def ps(a):
        return {p for tp in a["topic_partitions"] for p in tp["partitions"]}

    return {
        m["member_id"]: {
            "type": m["member_type"],
            "epoch": m["member_epoch"],
            "owns": ps(m["assignment"]),
            "target": ps(m["target_assignment"]),
        }
        for m in g["members"]
    }


async def commit(broker, member_id: str, generation: int, version: int = 8) -> int:
    r = await call(
        offset_commit,
        broker,
        version,
        {
            "group_id": "cg",
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
    return r["topics"][0]["partitions"][0]["error_code"]


async def upgraded(broker) -> tuple[str, int, dict]:
    """A classic member (generation 1, both partitions), then member "c" of the consumer protocol
    joins: (the classic member's id, its generation, c's heartbeat answer)."""
    mid, gen = await classic_group_of_one(broker)
    assert gen == 1
    c = await hb(broker, "c", 0, owned=[])
    assert c["error_code"] == 0, c
    return mid, gen, c


async def test_a_consumer_member_upgrades_a_classic_group_with_a_member(broker):
    mid, gen, c = await upgraded(broker)
    assert c["member_epoch"] == 2 and parts(c) == set()  # its partition is still the classic member's
    g = await described(broker)
    assert (g["group_state"], g["group_epoch"], g["assignment_epoch"]) == ("Reconciling", 2, 2)
    ms = members_by_id(g)
    assert ms[mid]["type"] == 0 and ms[mid]["epoch"] == 1 and ms[mid]["owns"] == {0, 1}
    assert ms["c"]["type"] == 1 and len(ms[mid]["target"]) == len(ms["c"]["target"]) == 1
    listed = await call(list_groups, broker, 5, {"states_filter": [], "types_filter": []})
    assert [(x["group_id"], x["group_type"], x["protocol_type"]) for x in listed["groups"]] == [
        ("cg", "consumer", "consumer")
    ]
    d = await call(describe_groups, broker, 5, {"groups": ["cg"], "include_authorized_operations": False})
    assert d["groups"][0]["group_state"] == "Dead"  # not a classic group any more (v6+: GROUP_ID_NOT_FOUND)
    # the classic member commits at its generation, is told to rejoin, and rejoins at the new epoch
    assert await commit(broker, mid, 1) == 0
    assert await commit(broker, mid, 5) == ILLEGAL_GENERATION
    assert await classic_heartbeat(broker, mid, 1) == REBALANCE_IN_PROGRESS
    assert await classic_heartbeat(broker, mid, 7) == ILLEGAL_GENERATION
    assert await classic_heartbeat(broker, "nobody", 1) == UNKNOWN_MEMBER_ID
    assert await classic_heartbeat(broker, "c", 2) == UNKNOWN_MEMBER_ID  # not a classic member
    j = await classic_join(broker, mid)  # eager: it owns nothing any more
    assert j["error_code"] == 0 and j["generation_id"] == 2
    assert (j["protocol_type"], j["protocol_name"], j["leader"], j["members"]) == ("consumer", "range", "", [])
    s = await classic_sync(broker, mid, 2)
    assert s["error_code"] == 0 and s["protocol_name"] == "range"
    mine = synced_parts(s)
    assert mine == ms[mid]["target"]
    c2 = await hb(broker, "c", 2, owned=[], topics=None)
    assert parts(c2) == {0, 1} - mine  # released: the consumer member takes it
    assert await classic_heartbeat(broker, mid, 2) == 0
    assert await commit(broker, mid, 2) == (0 if 0 in mine else ILLEGAL_GENERATION)
    g = await described(broker)
    assert (g["group_state"], g["group_epoch"]) == ("Stable", 2)


async def test_a_cooperative_classic_member_revokes_before_it_gets_a_new_generation(broker):
    mid, _gen, _c = await upgraded(broker)
    j = await classic_join(broker, mid, owned_parts={0, 1})  # still owns both
    assert j["error_code"] == 0 and j["generation_id"] == 1  # revoking first, at its epoch
    s = await classic_sync(broker, mid, 1)
    kept = synced_parts(s)
    assert len(kept) == 1
    assert await classic_heartbeat(broker, mid, 1) == REBALANCE_IN_PROGRESS  # revoke, then rejoin
    j2 = await classic_join(broker, mid, owned_parts=kept)
    assert j2["generation_id"] == 2
    assert await classic_heartbeat(broker, mid, 2) == 0


async def test_the_last_consumer_member_leaving_downgrades_the_group(broker):
    mid, _gen, _c = await upgraded(broker)
    await classic_join(broker, mid)
    await classic_sync(broker, mid, 2)
    left = await hb(broker, "c", -1, owned=None, topics=None)
    assert left["error_code"] == 0 and left["member_epoch"] == -1
    assert not broker.groups.consumer.groups
    d = await call(describe_groups, broker, 5, {"groups": ["cg"], "include_authorized_operations": False})
    g = d["groups"][0]
    assert (g["group_state"], g["protocol_type"], [m["member_id"] for m in g["members"]]) == (
        "PreparingRebalance",
        "consumer",
        [mid],
    )
    listed = await call(list_groups, broker, 5, {"states_filter": [], "types_filter": []})
    assert [(x["group_id"], x["group_type"]) for x in listed["groups"]] == [("cg", "classic")]
    # the classic member's generation is the group epoch: it is told to rejoin, and leads the next one
    assert await classic_heartbeat(broker, mid, 2) == REBALANCE_IN_PROGRESS
    j = await classic_join(broker, mid)
    assert j["error_code"] == 0 and j["generation_id"] == 3 and j["leader"] == mid
    s = await classic_sync(broker, mid, 3, {mid: encode_assignment(1, [("t", [0, 1])])})
    assert s["error_code"] == 0 and synced_parts(s) == {0, 1}


async def test_a_classic_member_leaving_leaves_a_consumer_group(broker):
    mid, _gen, _c = await upgraded(broker)
    r = await call(
        leave_group,
        broker,
        5,
        {"group_id": "cg", "members": [{"member_id": mid, "group_instance_id": None, "reason": None}]},
    )
    assert r["error_code"] == 0 and r["members"][0]["error_code"] == 0
    g = await described(broker)
    assert list(members_by_id(g)) == ["c"] and g["group_epoch"] == 3
    c = await hb(broker, "c", 2, owned=[], topics=None)
    assert c["member_epoch"] == 3 and parts(c) == {0, 1}


async def test_a_classic_member_whose_session_ends_is_fenced(tmp_path):
    async with started_broker(
        tmp_path, ADVERTISED, "group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=10"
    ) as b:
        mid, _gen = await classic_group_of_one(b, session=300)
        c = await hb(b, "c", 0, owned=[])
        assert c["error_code"] == 0
        deadline = time.monotonic() + 10
        while mid in b.groups.consumer.groups["cg"].members:  # its classic session: 300 ms
            assert time.monotonic() < deadline, "the classic member was not fenced"
            await hb(b, "c", c["member_epoch"], owned=[], topics=None)
            await asyncio.sleep(0.05)
        c = await hb(b, "c", 2, owned=[], topics=None)
        assert parts(c) == {0, 1}


async def test_the_migrated_group_survives_a_restart(tmp_path):
    settings = (ADVERTISED, "group.initial.rebalance.delay.ms=0")
    async with started_broker(tmp_path, *settings) as b:
        mid, _gen, _c = await upgraded(b)
    async with started_broker(tmp_path, *settings) as b:
        ms = members_by_id(await described(b))
        assert ms[mid]["type"] == 0 and ms[mid]["owns"] == {0, 1} and ms["c"]["type"] == 1
        assert await classic_heartbeat(b, mid, 1) == REBALANCE_IN_PROGRESS
        j = await classic_join(b, mid)
        assert j["generation_id"] == 2
        assert (await classic_sync(b, mid, 2))["error_code"] == 0
        assert (await hb(b, "c", -1, owned=None, topics=None))["error_code"] == 0  # downgraded
    async with started_broker(tmp_path, *settings) as b:
        assert not b.groups.consumer.groups
        g = b.groups.groups["cg"]
        assert list(g.members) == [mid] and g.generation == 2 and g.protocol_type == "consumer"
        assert await classic_heartbeat(b, mid, 2) == 0


async def test_the_policy_governs_the_migration(tmp_path):
    async with started_broker(tmp_path, ADVERTISED, "group.consumer.migration.policy=disabled") as b:
        await classic_group_of_one(b)
        c = await hb(b, "c", 0, owned=[])
        assert c["error_code"] == GROUP_ID_NOT_FOUND
        assert (
            c["error_message"]
            == "Cannot upgrade classic group cg to consumer group because online upgrade is disabled."
        )
        await hb(b, "d", 0, owned=[], group="cg2")
        j = await classic_join(b, "", group="cg2")
        assert j["error_code"] == INCONSISTENT_GROUP_PROTOCOL
    async with started_broker(tmp_path, ADVERTISED, "group.consumer.migration.policy=upgrade") as b:
        mid, _gen = await classic_group_of_one(b, group="cg3")
        assert (await hb(b, "c", 0, owned=[], group="cg3"))["error_code"] == 0
        assert (await hb(b, "c", -1, owned=None, topics=None, group="cg3"))["error_code"] == 0
        g = await described(b, "cg3")  # no downgrade: a consumer group of one classic member
        assert list(members_by_id(g)) == [mid]


async def test_only_a_group_of_the_consumer_protocol_upgrades(broker):
    first = await call(join_group, broker, 5, join_request("", b"x", ptype="connect"))
    j = await call(join_group, broker, 5, join_request(first["member_id"], b"x", ptype="connect"))
    assert j["error_code"] == 0
    c = await hb(broker, "c", 0, owned=[])
    assert c["error_code"] == GROUP_ID_NOT_FOUND
    assert "does not use the consumer embedded protocol" in c["error_message"]
    assert "cg" in broker.groups.groups and not broker.groups.consumer.groups


async def test_a_static_member_coming_back_with_the_classic_protocol_downgrades_the_group(broker):
    mid, _gen, _c = await upgraded(broker)  # a classic member, and "c" of the consumer protocol
    await classic_join(broker, mid)
    await classic_sync(broker, mid, 2)
    await hb(broker, "c", -1, owned=None, topics=None)  # downgraded: the group is classic again
    j = await classic_join(broker, mid)
    await classic_sync(broker, mid, j["generation_id"], {mid: encode_assignment(1, [("t", [0, 1])])})
    s = await hb(broker, "s", 0, owned=[], instance_id="i1")  # a static member upgrades it again
    assert s["error_code"] == 0
    s = await hb(broker, "s", s["member_epoch"], owned=[], topics=None, instance_id="i1")
    left = await hb(broker, "s", -2, owned=None, topics=None, instance_id="i1")  # gone for now
    assert left["member_epoch"] == -2 and "cg" in broker.groups.consumer.groups
    # the same instance comes back as a classic consumer: it takes s's place, the group is classic
    request = join_request("", encode_subscription(["t"], [], version=1))
    back = await call(join_group, broker, 8, {**request, "group_instance_id": "i1"})
    assert back["error_code"] == 0 and back["member_id"] != "s"
    assert not broker.groups.consumer.groups
    g = broker.groups.groups["cg"]
    assert set(g.members) == {mid, back["member_id"]} and g.protocol_type == "consumer"


async def test_a_refused_upgrade_leaves_the_classic_group_as_it_was(tmp_path):
    async with started_broker(tmp_path, ADVERTISED, "group.consumer.max.size=1") as b:
        mid, gen = await classic_group_of_one(b)
        c = await hb(b, "c", 0, owned=[])
        assert c["error_code"] == GROUP_MAX_SIZE_REACHED  # one classic member fits, two would not
        assert not b.groups.consumer.groups and list(b.groups.groups["cg"].members) == [mid]
        assert await classic_heartbeat(b, mid, gen) == 0
