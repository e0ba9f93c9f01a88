"""Share groups (KIP-932) through their handlers, called directly on a real broker (no socket):
ShareGroupHeartbeat joins and assignments, ShareFetch acquiring records with their delivery counts,
acknowledgements (ACCEPT, RELEASE, REJECT) piggy-backed or by ShareAcknowledge, share sessions and
their errors, two members on one partition never given the same record, the delivery limit, lock
expiry, the state surviving a restart, group configs, ListGroups / ShareGroupDescribe / DeleteGroups,
and the share-offsets admin APIs (describe with lag, alter, delete)."""

from __future__ import annotations

import time

from tidelog.server.handlers import (
    alter_share_group_offsets,
    delete_groups,
    delete_share_group_offsets,
    describe_configs,
    describe_share_group_offsets,
    incremental_alter_configs,
    list_groups,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
)

from .kit import GROUP_ID_NOT_FOUND, INVALID_REQUEST, NON_EMPTY_GROUP, call, produce_records, started_broker

FENCED_MEMBER_EPOCH = 110
INVALID_RECORD_STATE = 121
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
ACCEPT, RELEASE, REJECT = 1, 2, 3


def hb(broker, member: str, epoch: int, topics=("t",), group="sg"):
    return call(
        share_group_heartbeat,
        broker,
        1,
        {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "rack_id": None,
            "subscribed_topic_names": list(topics) if topics is not None else None,
        },
    )


def fetch(broker, member: str, epoch: int, acks=None, partition: int = 0, group="sg", max_records=500, forget=False):
    tid = broker.registry.get("t").topic_id
    parts = [{"partition_index": partition, "acknowledgement_batches": acks or []}]
    return call(
        share_fetch,
        broker,
        2,
        {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": epoch,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": max_records,
            "batch_size": max_records,
            "topics": [] if forget else [{"topic_id": tid, "partitions": parts}],
            "forgotten_topics_data": [{"topic_id": tid, "partitions": [partition]}] if forget else [],
        },
    )


def acknowledge(broker, member: str, epoch: int, acks, partition: int = 0, group="sg"):
    tid = broker.registry.get("t").topic_id
    return call(
        share_acknowledge,
        broker,
        2,
        {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": epoch,
            "topics": [
                {"topic_id": tid, "partitions": [{"partition_index": partition, "acknowledgement_batches": acks}]}
            ],
        },
    )


def acquired(resp) -> list[tuple[int, int, int]]:
    return [
        (a["first_offset"], a["last_offset"], a["delivery_count"])
        for t in resp["responses"]
        for p in t["partitions"]
        for a in p["acquired_records"]
    ]


def ack(first: int, last: int, kind: int) -> dict:
    return {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}


async def earliest(broker, group: str = "sg") -> None:
    broker.group_configs.set(group, {"share.auto.offset.reset": "earliest"})


async def test_a_member_joins_and_is_assigned_every_partition(broker):
    r = await hb(broker, "m1", 0)
    assert r["error_code"] == 0 and r["member_epoch"] == 2  # a new group is at epoch 1, as Kafka 4.3
    assert {p for tp in r["assignment"]["topic_partitions"] for p in tp["partitions"]} == {0, 1}
    again = await hb(broker, "m1", 2, topics=None)
    assert again["member_epoch"] == 2 and again["assignment"] is None
    assert (await hb(broker, "m1", 7, topics=None))["error_code"] == FENCED_MEMBER_EPOCH
    assert (await hb(broker, "", 0))["error_code"] == INVALID_REQUEST
    assert (await hb(broker, "m2", 0, topics=()))["error_code"] == INVALID_REQUEST  # no subscription
    d = await call(
        share_group_describe, broker, 1, {"group_ids": ["sg", "nope"], "include_authorized_operations": False}
    )
    g, nope = d["groups"]
    assert (g["group_state"], g["assignor_name"], len(g["members"])) == ("Stable", "simple", 1)
    assert nope["error_code"] == GROUP_ID_NOT_FOUND


async def test_records_are_acquired_acknowledged_and_redelivered(broker):
    await earliest(broker)
    await produce_records(broker, 5)
    await hb(broker, "m1", 0)
    f = await fetch(broker, "m1", 0)
    assert acquired(f) == [(0, 4, 1)]
    assert f["acquisition_lock_timeout"].total_seconds() == 30
    # piggy-backed: accept 0-1, release 2, reject 3, accept 4
    f = await fetch(broker, "m1", 1, [ack(0, 1, ACCEPT), ack(2, 2, RELEASE), ack(3, 3, REJECT), ack(4, 4, ACCEPT)])
    (part,) = [p for t in f["responses"] for p in t["partitions"]]
    assert part["acknowledge_error_code"] == 0
    assert acquired(f) == [(2, 2, 2)]  # only the released one comes back, its second delivery
    r = await acknowledge(broker, "m1", 2, [ack(2, 2, ACCEPT)])
    assert r["responses"][0]["partitions"][0]["error_code"] == 0
    sp = next(iter(broker.shares.parts.values()))
    assert sp.start_offset == 5  # every record done: the share-partition start moved past them
    assert acquired(await fetch(broker, "m1", 3)) == []


async def test_a_groups_own_record_lock_limit_caps_what_is_in_flight(broker):
    """share.partition.max.record.locks set on the group (Kafka 4.3's per-group config) bounds what
    one partition has in flight, in place of the broker's group.share.partition.max.record.locks."""
    broker.group_configs.set("sg", {"share.auto.offset.reset": "earliest", "share.partition.max.record.locks": "100"})
    for _ in range(30):
        await produce_records(broker, 10)
    await hb(broker, "m1", 0)
    f = await fetch(broker, "m1", 0, max_records=1000)
    got = acquired(f)
    assert got and got[0][0] == 0 and got[-1][1] == 99  # 100 records, on a log batch boundary
    assert acquired(await fetch(broker, "m1", 1, max_records=1000)) == []  # at the limit: nothing more
    f = await fetch(broker, "m1", 2, [ack(0, 99, ACCEPT)], max_records=1000)
    assert acquired(f)[0][0] == 100 and acquired(f)[-1][1] == 199


async def test_two_members_on_one_partition_never_get_the_same_record(broker):
    await earliest(broker)
    await produce_records(broker, 1, partition=0)
    await produce_records(broker, 1, partition=0)
    await hb(broker, "a", 0)
    await hb(broker, "b", 0)
    fa = await fetch(broker, "a", 0, max_records=1)
    fb = await fetch(broker, "b", 0, max_records=1)
    got_a, got_b = acquired(fa), acquired(fb)
    assert got_a and got_b
    offsets_a = {o for first, last, _ in got_a for o in range(first, last + 1)}
    offsets_b = {o for first, last, _ in got_b for o in range(first, last + 1)}
    assert not offsets_a & offsets_b and offsets_a | offsets_b == {0, 1}
    # b cannot acknowledge a's record
    r = await acknowledge(broker, "b", 1, [ack(min(offsets_a), min(offsets_a), ACCEPT)])
    assert r["responses"][0]["partitions"][0]["error_code"] == INVALID_RECORD_STATE


async def test_a_record_delivered_too_often_is_archived_and_locks_expire(broker):
    await earliest(broker)
    broker.group_configs.set("sg", {"share.delivery.count.limit": "2"})
    await produce_records(broker, 1)
    await hb(broker, "m1", 0)
    assert acquired(await fetch(broker, "m1", 0)) == [(0, 0, 1)]
    sp = next(iter(broker.shares.parts.values()))
    sp.expire(int(time.time() * 1000) + 60_000)  # its lock timed out: available again
    assert acquired(await fetch(broker, "m1", 1)) == [(0, 0, 2)]
    f = await fetch(broker, "m1", 2, [ack(0, 0, RELEASE)])  # released at the limit: archived
    assert acquired(f) == [] and sp.start_offset == 1


async def test_share_session_errors(broker):
    await hb(broker, "m1", 0)
    assert (await fetch(broker, "m1", 5))["error_code"] == SHARE_SESSION_NOT_FOUND
    assert (await fetch(broker, "m1", 0, [ack(0, 0, ACCEPT)]))["error_code"] == INVALID_REQUEST
    assert (await fetch(broker, "m1", 0))["error_code"] == 0
    assert (await fetch(broker, "m1", 3))["error_code"] == INVALID_SHARE_SESSION_EPOCH
    assert (await acknowledge(broker, "m1", 0, []))["error_code"] == INVALID_SHARE_SESSION_EPOCH
    assert (await acknowledge(broker, "m1", -1, []))["error_code"] == 0  # closes it
    assert (await fetch(broker, "m1", 1))["error_code"] == SHARE_SESSION_NOT_FOUND


async def test_closing_the_session_releases_the_member_s_records(broker):
    await earliest(broker)
    await produce_records(broker, 3)
    await hb(broker, "a", 0)
    await hb(broker, "b", 0)
    assert acquired(await fetch(broker, "a", 0)) == [(0, 2, 1)]
    assert acquired(await fetch(broker, "b", 0)) == []
    await fetch(broker, "a", -1, forget=True)  # final: a's records are available again
    assert acquired(await fetch(broker, "b", 1)) == [(0, 2, 2)]


async def test_acknowledged_records_stay_acknowledged_after_a_restart(tmp_path):
    async with started_broker(tmp_path) as b:
        await earliest(b)
        await produce_records(b, 4)
        await hb(b, "m1", 0)
        assert acquired(await fetch(b, "m1", 0)) == [(0, 3, 1)]
        await fetch(b, "m1", 1, [ack(0, 1, ACCEPT), ack(2, 3, RELEASE)])
    async with started_broker(tmp_path) as b2:
        await hb(b2, "m2", 0)
        # the accepted records are done; the released ones come again, counted
        assert acquired(await fetch(b2, "m2", 0)) == [(2, 3, 2)]


async def test_group_configs_and_listing_and_deleting(broker):
    alter = await call(
        incremental_alter_configs,
        broker,
        1,
        {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": "sg",
                    "configs": [
                        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"},
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    assert alter["responses"][0]["error_code"] == 0
    bad = await call(
        incremental_alter_configs,
        broker,
        1,
        {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": "sg",
                    "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "soon"}],
                }
            ],
            "validate_only": False,
        },
    )
    assert bad["responses"][0]["error_code"] == 40  # INVALID_CONFIG
    described = await call(
        describe_configs,
        broker,
        4,
        {
            "resources": [
                {"resource_type": 32, "resource_name": "sg", "configuration_keys": ["share.auto.offset.reset"]}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    (entry,) = described["results"][0]["configs"]
    assert (entry["value"], entry["config_source"]) == ("earliest", 8)  # GROUP_CONFIG
    await hb(broker, "m1", 0)
    listed = await call(list_groups, broker, 5, {"states_filter": [], "types_filter": ["share"]})
    assert [(g["group_id"], g["group_type"], g["protocol_type"]) for g in listed["groups"]] == [
        ("sg", "share", "share")
    ]
    d = await call(delete_groups, broker, 2, {"groups_names": ["sg"]})
    assert d["results"][0]["error_code"] == NON_EMPTY_GROUP
    await hb(broker, "m1", -1, topics=None)
    d = await call(delete_groups, broker, 2, {"groups_names": ["sg"]})
    assert d["results"][0]["error_code"] == 0 and not broker.groups.share.groups


def describe_offsets(broker, topics=None, group="sg", version=1):
    return call(
        describe_share_group_offsets,
        broker,
        version,
        {"groups": [{"group_id": group, "topics": topics}]},
    )


def offsets_of(resp) -> dict[tuple[str, int], tuple[int, int]]:
    (g,) = resp["groups"]
    assert g["error_code"] == 0, g
    return {
        (t["topic_name"], p["partition_index"]): (p["start_offset"], p["lag"])
        for t in g["topics"]
        for p in t["partitions"]
    }


def alter_offsets(broker, offsets: dict[int, int], group="sg", topic="t"):
    return call(
        alter_share_group_offsets,
        broker,
        0,
        {
            "group_id": group,
            "topics": [
                {
                    "topic_name": topic,
                    "partitions": [{"partition_index": p, "start_offset": o} for p, o in offsets.items()],
                }
            ],
        },
    )


def delete_offsets(broker, topics=("t",), group="sg"):
    return call(
        delete_share_group_offsets, broker, 0, {"group_id": group, "topics": [{"topic_name": t} for t in topics]}
    )


async def test_share_group_offsets_are_described_with_their_lag(broker):
    await earliest(broker)
    await produce_records(broker, 5)  # partition 0: offsets 0-4
    await hb(broker, "m1", 0)
    # initialized by the coordinator without a start offset, as Kafka's: fixed at the first fetch
    assert offsets_of(await describe_offsets(broker)) == {("t", 0): (-1, -1), ("t", 1): (-1, -1)}
    await fetch(broker, "m1", 0)  # partition 0 only
    assert offsets_of(await describe_offsets(broker)) == {("t", 0): (0, 5), ("t", 1): (-1, -1)}
    # accept 0-1 (the start moves to 2), reject 3 (archived past the start): lag 5 - 2 - 1
    await fetch(broker, "m1", 1, [ack(0, 1, ACCEPT), ack(2, 2, RELEASE), ack(3, 3, REJECT)])
    assert offsets_of(await describe_offsets(broker, [{"topic_name": "t", "partitions": [0]}])) == {("t", 0): (2, 2)}
    # a topic that does not exist, a group that has no state: absence of data, not errors
    unknown = offsets_of(await describe_offsets(broker, [{"topic_name": "nope", "partitions": [0]}]))
    assert unknown == {("nope", 0): (-1, -1)}
    assert offsets_of(await describe_offsets(broker, group="other")) == {}
    v0 = await describe_offsets(broker, [{"topic_name": "t", "partitions": [0]}], version=0)
    assert v0["groups"][0]["topics"][0]["partitions"][0]["start_offset"] == 2


async def test_share_group_offsets_are_altered_only_while_the_group_is_empty(broker):
    await earliest(broker)
    await produce_records(broker, 6)
    await hb(broker, "m1", 0)
    busy = await alter_offsets(broker, {0: 4})
    assert busy["error_code"] == NON_EMPTY_GROUP and busy["responses"] == []
    await hb(broker, "m1", -1)
    done = await alter_offsets(broker, {0: 4, 7: 0})
    assert done["error_code"] == 0
    assert [(p["partition_index"], p["error_code"]) for p in done["responses"][0]["partitions"]] == [(0, 0), (7, 3)]
    assert offsets_of(await describe_offsets(broker))[("t", 0)] == (4, 2)
    await hb(broker, "m2", 0)
    assert acquired(await fetch(broker, "m2", 0)) == [(4, 5, 1)]  # from the new start, afresh
    unknown = await alter_offsets(broker, {0: 0}, group="sg2", topic="nope")
    assert unknown["responses"][0]["partitions"][0]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


async def test_share_group_offsets_deleted_start_again_by_the_reset_policy(broker):
    await earliest(broker)
    await produce_records(broker, 3)
    await hb(broker, "m1", 0)
    await fetch(broker, "m1", 0)
    await fetch(broker, "m1", 1, [ack(0, 2, ACCEPT)])
    assert offsets_of(await describe_offsets(broker))[("t", 0)] == (3, 0)
    assert (await delete_offsets(broker))["error_code"] == NON_EMPTY_GROUP
    await fetch(broker, "m1", -1, forget=True)
    await hb(broker, "m1", -1)
    gone = await delete_offsets(broker, ("t", "nope"))
    assert gone["error_code"] == 0
    assert [(t["topic_name"], t["error_code"]) for t in gone["responses"]] == [("t", 0), ("nope", 3)]
    assert offsets_of(await describe_offsets(broker)) == {}
    again = await delete_offsets(broker)
    assert again["responses"][0]["error_code"] == 3  # nothing left to delete
    assert (await delete_offsets(broker, group="missing"))["error_code"] == GROUP_ID_NOT_FOUND
    await hb(broker, "m2", 0)  # initialized again (earliest): every record once more
    assert acquired(await fetch(broker, "m2", 0)) == [(0, 2, 1)]


async def test_deleting_a_share_group_deletes_its_share_state(broker):
    await earliest(broker)
    await produce_records(broker, 2)
    await hb(broker, "m1", 0)
    await fetch(broker, "m1", 0)
    await fetch(broker, "m1", 1, [ack(0, 1, ACCEPT)])
    await fetch(broker, "m1", -1, forget=True)
    await hb(broker, "m1", -1)
    assert broker.share_state.of_group("sg")
    r = await call(delete_groups, broker, 2, {"groups_names": ["sg"]})
    assert r["results"][0]["error_code"] == 0
    assert not broker.share_state.of_group("sg")
    await hb(broker, "m2", 0)  # a new group of that name starts afresh
    assert acquired(await fetch(broker, "m2", 0)) == [(0, 1, 1)]
