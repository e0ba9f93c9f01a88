"""Kafka 4's consumer group protocol (KIP-848) through its handlers, called directly on a real
broker (no socket): ConsumerGroupHeartbeat's joins, epochs, revocation before assignment, fencing,
static members, leaving; ConsumerGroupDescribe; OffsetCommit v9 and OffsetFetch v9 checked against
member epochs; ListGroups and DescribeGroups naming the group's type; the state surviving a
restart of the coordinator (replayed from `__consumer_offsets`)."""

from __future__ import annotations

import uuid

import pytest

from tidelog.server.handlers import (
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    join_group,
    list_groups,
    offset_commit,
    offset_fetch,
)

from .kit import GROUP_ID_NOT_FOUND, INVALID_REQUEST, NON_EMPTY_GROUP, UNKNOWN_MEMBER_ID, call, started_broker

FENCED_MEMBER_EPOCH = 110
UNRELEASED_INSTANCE_ID = 111
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
INCONSISTENT_GROUP_PROTOCOL = 23
UNSUPPORTED_VERSION = 35
INVALID_REGULAR_EXPRESSION = 128


def hb(broker, member_id: str, epoch: int, *, owned=None, topics=("t",), group="cg", version=1, **kw):
    data = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": kw.get("instance_id"),
        "rack_id": None,
        "rebalance_timeout": kw.get("rebalance_timeout", 30_000 if epoch == 0 else -1),
        "subscribed_topic_names": list(topics) if topics is not None else None,
        "server_assignor": kw.get("assignor"),
        "topic_partitions": owned,
    }
    if version >= 1:
        data["subscribed_topic_regex"] = kw.get("regex")
    return call(consumer_group_heartbeat, broker, version, data)


def parts(resp) -> set[int]:
    a = resp["assignment"]
    return {p for tp in a["topic_partitions"] for p in tp["partitions"]} if a else set()


def owned(broker, ps) -> list[dict]:
    t = broker.registry.get("t")
    return [{"topic_id": t.topic_id, "partitions": sorted(ps)}] if ps else []


async def joined(broker, member_id: str, **kw) -> dict:
    r = await hb(broker, member_id, 0, owned=[], **kw)
    assert r["error_code"] == 0, r
    return r


async def test_a_member_joins_and_gets_every_partition(broker):
    r = await joined(broker, "m1")
    assert r["member_id"] == "m1" and r["member_epoch"] == 2  # a new group is at epoch 1, as Kafka 4.3
    assert parts(r) == {0, 1}
    assert r["heartbeat_interval"].total_seconds() == 5
    again = await hb(broker, "m1", 2, owned=owned(broker, {0, 1}), topics=None)
    assert again["member_epoch"] == 2 and again["assignment"] is None  # nothing changed: not sent


async def test_v0_members_are_named_by_the_coordinator(broker):
    r = await hb(broker, "", 0, owned=[], version=0)
    assert r["error_code"] == 0 and uuid.UUID(r["member_id"])


async def test_a_partition_moves_only_once_its_owner_revoked_it(broker):
    a = await joined(broker, "a")
    assert parts(a) == {0, 1}
    b = await joined(broker, "b")  # the target gives b one partition, still a's
    assert b["member_epoch"] == 3 and parts(b) == set()  # unreleased: not assigned yet
    a2 = await hb(broker, "a", 2, owned=owned(broker, {0, 1}), topics=None)
    assert a2["member_epoch"] == 2 and len(parts(a2)) == 1  # revoke one first, at epoch 2
    kept = parts(a2)
    b2 = await hb(broker, "b", 3, owned=[], topics=None)
    assert parts(b2) == set()  # a still reports the partition
    a3 = await hb(broker, "a", 2, owned=owned(broker, kept), topics=None)
    assert a3["member_epoch"] == 3  # revoked: a moves to the new epoch
    b3 = await hb(broker, "b", 3, owned=[], topics=None)
    assert parts(b3) == {0, 1} - kept and b3["member_epoch"] == 3
    d = await call(consumer_group_describe, broker, 1, {"group_ids": ["cg"], "include_authorized_operations": False})
    g = d["groups"][0]
    assert g["group_state"] == "Stable" and g["group_epoch"] == 3 and g["assignment_epoch"] == 3
    assigned = {
        m["member_id"]: {p for tp in m["assignment"]["topic_partitions"] for p in tp["partitions"]}
        for m in g["members"]
    }
    assert assigned == {"a": kept, "b": {0, 1} - kept}


async def test_epochs_are_fenced(broker):
    await joined(broker, "m")
    assert (await hb(broker, "m", 6, owned=[], topics=None))["error_code"] == FENCED_MEMBER_EPOCH
    assert (await hb(broker, "x", 2, owned=[], topics=None))["error_code"] == UNKNOWN_MEMBER_ID
    await joined(broker, "n")  # epoch 3; m is asked to revoke at 2
    m = await hb(broker, "m", 2, owned=owned(broker, {0, 1}), topics=None)
    kept = parts(m)
    m2 = await hb(broker, "m", 2, owned=owned(broker, kept), topics=None)
    assert m2["member_epoch"] == 3
    # the answer with epoch 3 was lost: the previous epoch with owned partitions it still holds is accepted
    again = await hb(broker, "m", 2, owned=owned(broker, kept), topics=None)
    assert again["error_code"] == 0 and again["member_epoch"] == 3
    assert (await hb(broker, "m", 2, owned=owned(broker, {0, 1}), topics=None))["error_code"] == FENCED_MEMBER_EPOCH


async def test_requests_are_validated_as_kafka_does(broker):
    assert (await hb(broker, "", 0, owned=[]))["error_code"] == INVALID_REQUEST  # v1 names itself
    assert (await hb(broker, "m", 0, owned=None))["error_code"] == INVALID_REQUEST
    assert (await hb(broker, "m", 0, owned=[], rebalance_timeout=-1))["error_code"] == INVALID_REQUEST
    assert (await hb(broker, "m", 0, owned=[], topics=None))["error_code"] == INVALID_REQUEST
    assert (await hb(broker, "m", 0, owned=[], assignor="sticky"))["error_code"] == UNSUPPORTED_ASSIGNOR
    assert (await hb(broker, "m", 0, owned=[], regex="(unclosed"))["error_code"] == INVALID_REGULAR_EXPRESSION
    assert (await hb(broker, "m", -3, owned=[], topics=None))["error_code"] == INVALID_REQUEST
    assert (await hb(broker, "m", 2, owned=[], topics=None, group="nope"))["error_code"] == GROUP_ID_NOT_FOUND


async def test_leaving_frees_the_partitions(broker):
    await joined(broker, "a")
    await joined(broker, "b")
    left = await hb(broker, "a", -1, owned=None, topics=None)
    assert left["error_code"] == 0 and left["member_epoch"] == -1
    b = await hb(broker, "b", 3, owned=[], topics=None)
    assert parts(b) == {0, 1} and b["member_epoch"] == 4


async def test_a_static_member_comes_back_to_its_partitions(broker):
    await joined(broker, "s1", instance_id="i1")
    assert (await joined(broker, "s2", instance_id="i2"))["member_epoch"] == 3
    s1 = await hb(broker, "s1", 2, owned=owned(broker, {0, 1}), topics=None, instance_id="i1")
    mine = parts(s1)
    await hb(broker, "s1", 2, owned=owned(broker, mine), topics=None, instance_id="i1")
    # another process with the same instance id, while s1 holds it
    taken = await hb(broker, "s3", 0, owned=[], instance_id="i1")
    assert taken["error_code"] == UNRELEASED_INSTANCE_ID
    away = await hb(broker, "s1", -2, owned=None, topics=None, instance_id="i1")
    assert away["member_epoch"] == -2
    back = await hb(broker, "s3", 0, owned=[], instance_id="i1")
    assert back["error_code"] == 0 and parts(back) == mine  # no rebalance: the same partitions
    assert back["member_epoch"] == 3


async def test_offset_commit_v9_checks_the_member_epoch(broker):
    await joined(broker, "a")

    def commit(epoch: int, member: str = "a", version: int = 9):
        return call(
            offset_commit,
            broker,
            version,
            {
                "group_id": "cg",
                "generation_id_or_member_epoch": epoch,
                "member_id": member,
                "group_instance_id": None,
                "topics": [
                    {
                        "name": "t",
                        "partitions": [{"partition_index": 0, "committed_offset": 7, "committed_metadata": ""}],
                    }
                ],
            },
        )

    def code(resp) -> int:
        return resp["topics"][0]["partitions"][0]["error_code"]

    assert code(await commit(2)) == 0
    assert code(await commit(3)) == STALE_MEMBER_EPOCH
    assert code(await commit(2, member="zz")) == UNKNOWN_MEMBER_ID
    assert code(await commit(2, version=8)) == UNSUPPORTED_VERSION
    fetch = await call(
        offset_fetch,
        broker,
        9,
        {
            "groups": [
                {
                    "group_id": "cg",
                    "member_id": "a",
                    "member_epoch": 4,
                    "topics": [{"name": "t", "partition_indexes": [0]}],
                }
            ]
        },
    )
    assert fetch["groups"][0]["error_code"] == STALE_MEMBER_EPOCH
    fetch = await call(
        offset_fetch,
        broker,
        9,
        {
            "groups": [
                {
                    "group_id": "cg",
                    "member_id": "a",
                    "member_epoch": 2,
                    "topics": [{"name": "t", "partition_indexes": [0]}],
                }
            ]
        },
    )
    assert fetch["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 7


async def test_list_and_describe_groups_name_the_type(broker):
    await joined(broker, "a")
    listed = await call(list_groups, broker, 5, {"states_filter": [], "types_filter": []})
    assert {g["group_id"]: (g["group_type"], g["protocol_type"]) for g in listed["groups"]} == {
        "cg": ("consumer", "consumer")
    }
    classic_only = await call(list_groups, broker, 5, {"states_filter": [], "types_filter": ["classic"]})
    assert classic_only["groups"] == []
    d = await call(describe_groups, broker, 6, {"groups": ["cg"], "include_authorized_operations": False})
    assert d["groups"][0]["error_code"] == GROUP_ID_NOT_FOUND
    assert d["groups"][0]["error_message"] == "Group cg is not a classic group."
    missing = await call(
        consumer_group_describe, broker, 0, {"group_ids": ["nope"], "include_authorized_operations": False}
    )
    assert missing["groups"][0]["error_code"] == GROUP_ID_NOT_FOUND


async def test_a_group_of_one_protocol_is_not_joined_with_the_other(broker):
    await joined(broker, "a")
    j = await call(
        join_group,
        broker,
        5,
        {
            "group_id": "cg",
            "session_timeout": 30_000,
            "rebalance_timeout": 30_000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "connect",  # a classic consumer would be served (test_consumer_migration)
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )
    assert j["error_code"] == INCONSISTENT_GROUP_PROTOCOL
    d = await call(delete_groups, broker, 2, {"groups_names": ["cg"]})
    assert d["results"][0]["error_code"] == NON_EMPTY_GROUP
    await hb(broker, "a", -1, owned=None, topics=None)
    d = await call(delete_groups, broker, 2, {"groups_names": ["cg"]})
    assert d["results"][0]["error_code"] == 0
    assert not broker.groups.consumer.groups


async def test_the_group_survives_a_restart(tmp_path):
    async with started_broker(tmp_path, "group.initial.rebalance.delay.ms=0") as b:
        await joined(b, "a")
        await joined(b, "b")
        a = await hb(b, "a", 2, owned=owned(b, {0, 1}), topics=None)
        before = b.groups.consumer.groups["cg"]
        snapshot = (
            before.group_epoch,
            before.assignment_epoch,
            {m: (x.member_epoch, x.state, x.assigned) for m, x in before.members.items()},
            dict(before.target),
        )
    async with started_broker(tmp_path, "group.initial.rebalance.delay.ms=0") as b2:
        after = b2.groups.consumer.groups["cg"]
        assert (
            after.group_epoch,
            after.assignment_epoch,
            {m: (x.member_epoch, x.state, x.assigned) for m, x in after.members.items()},
            dict(after.target),
        ) == snapshot
        # the member goes on from where it was, at its epoch
        a2 = await hb(b2, "a", 2, owned=owned(b2, parts(a)), topics=None)
        assert a2["error_code"] == 0 and a2["member_epoch"] == 3


@pytest.mark.parametrize("regex", ["t.*", "t"])
async def test_a_regex_subscription_follows_new_topics(broker, regex):
    r = await joined(broker, "a", topics=None, regex=regex)
    assert parts(r) == {0, 1}
    await broker.admin.create_topic("t2", 3, 1, {})
    r = await hb(broker, "a", r["member_epoch"], owned=owned(broker, {0, 1}), topics=None)
    got = {
        tp["topic_id"]: set(tp["partitions"])
        for tp in (r["assignment"] or {"topic_partitions": []})["topic_partitions"]
    }
    t2 = broker.registry.get("t2").topic_id
    if regex == "t.*":
        assert got.get(t2) == {0, 1, 2}
    else:
        assert t2 not in got
