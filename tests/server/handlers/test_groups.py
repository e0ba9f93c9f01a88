"""Group coordinator handlers, called directly (no socket): DescribeGroups, ListGroups, LeaveGroup,
DeleteGroups, OffsetCommit, OffsetFetch, OffsetDelete and FindCoordinator. A member joins through
the JoinGroup and SyncGroup handlers (tests/server/test_handlers_unit.py tests those)."""

from __future__ import annotations

import pytest

from tidelog.core.config import load_config
from tidelog.server.broker import Broker
from tidelog.server.handlers import (
    delete_groups,
    describe_groups,
    find_coordinator,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
)

from .kit import (
    ADVERTISED,
    ASSIGNMENT,
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    GROUP_ID_NOT_FOUND,
    GROUP_SUBSCRIBED_TO_TOPIC,
    HOST,
    ILLEGAL_GENERATION,
    INVALID_GROUP_ID,
    INVALID_REQUEST,
    NO_AUTHORIZED_OPERATIONS,
    NON_EMPTY_GROUP,
    PORT,
    SUBSCRIPTION,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    call,
    join,
)


def commit(
    broker,
    group: str,
    offsets: dict[tuple[str, int], int],
    generation: int = -1,
    member: str = "",
    metadata: str | None = "md",
):
    topics: dict[str, list] = {}
    for (t, p), offset in offsets.items():
        topics.setdefault(t, []).append(
            {
                "partition_index": p,
                "committed_offset": offset,
                "committed_leader_epoch": 0,
                "committed_metadata": metadata,
            }
        )
    return call(
        offset_commit,
        broker,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member,
            "group_instance_id": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        },
    )


def commit_codes(resp: dict) -> dict:
    return {(t["name"], p["partition_index"]): p["error_code"] for t in resp["topics"] for p in t["partitions"]}


async def committed(broker, group: str, partitions=(0, 1)) -> dict[int, int]:
    resp = await call(
        offset_fetch,
        broker,
        8,
        {"groups": [{"group_id": group, "topics": [{"name": "t", "partition_indexes": list(partitions)}]}]},
    )
    return {p["partition_index"]: p["committed_offset"] for p in resp["groups"][0]["topics"][0]["partitions"]}


@pytest.fixture
async def unloaded(tmp_path):
    """A broker whose group coordinator has not loaded `__consumer_offsets` yet."""
    b = Broker(load_config(None, [f"log.dirs={tmp_path / 'data'}", "listeners=PLAINTEXT://127.0.0.1:0", ADVERTISED]))
    b.partitions.start()
    b.admin.create("t", 2, {})  # a commit to a topic that does not exist is refused before the group is asked
    assert not b.groups.loaded
    try:
        yield b
    finally:
        b.partitions.stop()


# ---- DescribeGroups / ListGroups ------------------------------------------------------------


async def test_describe_groups_stable_and_unknown(broker):
    member, _ = await join(broker)
    resp = await call(describe_groups, broker, 5, {"groups": ["g", "nope"], "include_authorized_operations": False})
    g, nope = resp["groups"]
    assert g == {
        "error_code": 0,
        "group_id": "g",
        "group_state": "Stable",
        "protocol_type": "consumer",
        "protocol_data": "range",
        "authorized_operations": NO_AUTHORIZED_OPERATIONS,
        "members": [
            {
                "member_id": member,
                "group_instance_id": None,
                "client_id": "unit",
                "client_host": "/127.0.0.1",
                "member_metadata": SUBSCRIPTION,
                "member_assignment": ASSIGNMENT,
            }
        ],
    }
    # v0-5: a group that does not exist is Dead with no error, as Kafka
    assert nope == {
        "error_code": 0,
        "group_id": "nope",
        "group_state": "Dead",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


async def test_describe_groups_authorized_operations_without_an_authorizer(broker):
    await join(broker)
    resp = await call(describe_groups, broker, 5, {"groups": ["g"], "include_authorized_operations": True})
    read_describe_delete = (1 << 3) | (1 << 8) | (1 << 6)
    assert resp["groups"][0]["authorized_operations"] & read_describe_delete == read_describe_delete


async def test_list_groups_filters_by_state_and_type(broker):
    await join(broker)
    await commit(broker, "standalone", {("t", 0): 1})  # a group with offsets and no member: Empty
    resp = await call(list_groups, broker, 5, {"states_filter": [], "types_filter": []})
    assert resp["error_code"] == 0
    assert resp["groups"] == [
        {"group_id": "g", "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"},
        {"group_id": "standalone", "protocol_type": "", "group_state": "Empty", "group_type": "classic"},
    ]
    empty = await call(list_groups, broker, 5, {"states_filter": ["empty"], "types_filter": []})
    assert [g["group_id"] for g in empty["groups"]] == ["standalone"]  # states match regardless of case
    consumer_type = await call(list_groups, broker, 5, {"states_filter": [], "types_filter": ["consumer"]})
    assert consumer_type["groups"] == []  # KIP-848 "consumer" groups: none, these are classic
    v0 = await call(list_groups, broker, 0, {})
    assert v0["groups"] == [
        {"group_id": "g", "protocol_type": "consumer"},
        {"group_id": "standalone", "protocol_type": ""},
    ]


async def test_coordinator_still_loading(unloaded):
    described = await call(describe_groups, unloaded, 5, {"groups": ["g"]})
    assert described["groups"][0]["error_code"] == COORDINATOR_LOAD_IN_PROGRESS
    listed = await call(list_groups, unloaded, 5, {})
    assert (listed["error_code"], listed["groups"]) == (COORDINATOR_LOAD_IN_PROGRESS, [])
    deleted = await call(delete_groups, unloaded, 2, {"groups_names": ["g"]})
    assert deleted["results"] == [{"group_id": "g", "error_code": COORDINATOR_LOAD_IN_PROGRESS}]
    left = await call(leave_group, unloaded, 5, {"group_id": "g", "members": [{"member_id": "m"}]})
    assert (left["error_code"], left["members"]) == (COORDINATOR_LOAD_IN_PROGRESS, [])
    assert commit_codes(await commit(unloaded, "g", {("t", 0): 1})) == {("t", 0): COORDINATOR_LOAD_IN_PROGRESS}
    fetched = await call(offset_fetch, unloaded, 8, {"groups": [{"group_id": "g", "topics": None}]})
    assert fetched["groups"] == [{"group_id": "g", "topics": [], "error_code": COORDINATOR_LOAD_IN_PROGRESS}]
    dropped = await call(
        offset_delete, unloaded, 0, {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
    )
    assert (dropped["error_code"], dropped["topics"]) == (COORDINATOR_LOAD_IN_PROGRESS, [])
    # not named coordinator before it has loaded: COORDINATOR_NOT_AVAILABLE, which clients retry
    found = await call(find_coordinator, unloaded, 4, {"key_type": 0, "coordinator_keys": ["g"]})
    assert [(c["key"], c["error_code"], c["node_id"]) for c in found["coordinators"]] == [
        ("g", COORDINATOR_NOT_AVAILABLE, -1)
    ]


# ---- LeaveGroup -----------------------------------------------------------------------------


async def test_leave_group_batch_v5(broker):
    member, _ = await join(broker)
    resp = await call(
        leave_group, broker, 5, {"group_id": "g", "members": [{"member_id": member}, {"member_id": "stranger"}]}
    )
    assert resp["error_code"] == 0
    assert resp["members"] == [
        {"member_id": member, "group_instance_id": None, "error_code": 0},
        {"member_id": "stranger", "group_instance_id": None, "error_code": UNKNOWN_MEMBER_ID},
    ]
    described = await call(describe_groups, broker, 5, {"groups": ["g"]})
    assert (described["groups"][0]["group_state"], described["groups"][0]["members"]) == ("Empty", [])


async def test_leave_group_unknown_member_or_group(broker):
    member, _ = await join(broker)
    v1 = await call(leave_group, broker, 1, {"group_id": "g", "member_id": "stranger"})
    assert v1 == {"throttle_time": v1["throttle_time"], "error_code": UNKNOWN_MEMBER_ID}
    unknown_group = await call(leave_group, broker, 5, {"group_id": "nope", "members": [{"member_id": member}]})
    assert (unknown_group["error_code"], unknown_group["members"]) == (UNKNOWN_MEMBER_ID, [])
    v1_ok = await call(leave_group, broker, 1, {"group_id": "g", "member_id": member})
    assert v1_ok["error_code"] == 0


# ---- DeleteGroups ---------------------------------------------------------------------------


async def test_delete_groups_removes_an_empty_group_and_its_offsets(broker):
    await commit(broker, "standalone", {("t", 0): 5})
    assert (await committed(broker, "standalone"))[0] == 5
    resp = await call(delete_groups, broker, 2, {"groups_names": ["standalone"]})
    assert resp["results"] == [{"group_id": "standalone", "error_code": 0}]
    assert await committed(broker, "standalone") == {0: -1, 1: -1}
    listed = await call(list_groups, broker, 5, {})
    assert listed["groups"] == []


async def test_delete_groups_refusals(broker):
    await join(broker)
    resp = await call(delete_groups, broker, 2, {"groups_names": ["g", "nope", ""]})
    assert resp["results"] == [
        {"group_id": "g", "error_code": NON_EMPTY_GROUP},
        {"group_id": "nope", "error_code": GROUP_ID_NOT_FOUND},
        {"group_id": "", "error_code": INVALID_GROUP_ID},
    ]


# ---- OffsetCommit / OffsetFetch -------------------------------------------------------------


async def test_offset_commit_and_fetch_v8(broker):
    member, generation = await join(broker)
    resp = await commit(broker, "g", {("t", 0): 5, ("t", 1): 9}, generation, member)
    assert resp["topics"] == [
        {"name": "t", "partitions": [{"partition_index": 0, "error_code": 0}, {"partition_index": 1, "error_code": 0}]}
    ]
    fetched = await call(
        offset_fetch,
        broker,
        8,
        {
            "groups": [
                {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]},
                {"group_id": "nope", "topics": [{"name": "t", "partition_indexes": [0]}]},
            ]
        },
    )
    g, nope = fetched["groups"]
    assert g == {
        "group_id": "g",
        "error_code": 0,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 5,
                        "committed_leader_epoch": 0,
                        "metadata": "md",
                        "error_code": 0,
                    },
                    {
                        "partition_index": 1,
                        "committed_offset": 9,
                        "committed_leader_epoch": 0,
                        "metadata": "md",
                        "error_code": 0,
                    },
                ],
            }
        ],
    }
    # nothing committed: offset -1, no error, as Kafka
    assert nope["error_code"] == 0
    assert nope["topics"][0]["partitions"] == [
        {"partition_index": 0, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "", "error_code": 0}
    ]


async def test_offset_fetch_every_committed_partition_v7(broker):
    await commit(broker, "standalone", {("t", 1): 3}, metadata=None)
    resp = await call(offset_fetch, broker, 7, {"group_id": "standalone", "topics": None})
    assert resp["error_code"] == 0
    assert resp["topics"] == [
        {
            "name": "t",
            "partitions": [
                {
                    "partition_index": 1,
                    "committed_offset": 3,
                    "committed_leader_epoch": 0,
                    "metadata": "",
                    "error_code": 0,
                }
            ],
        }
    ]


async def test_offset_commit_refusals(broker):
    member, generation = await join(broker)
    stale = await commit(broker, "g", {("t", 0): 1}, generation + 1, member)
    assert commit_codes(stale) == {("t", 0): ILLEGAL_GENERATION}
    stranger = await commit(broker, "g", {("t", 0): 1}, generation, "stranger")
    assert commit_codes(stranger) == {("t", 0): UNKNOWN_MEMBER_ID}
    unknown_topic = await commit(broker, "g", {("nope", 0): 1, ("t", 7): 1}, generation, member)
    assert commit_codes(unknown_topic) == {
        ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION,
        ("t", 7): UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert await committed(broker, "g") == {0: -1, 1: -1}


# ---- OffsetDelete ---------------------------------------------------------------------------


async def test_offset_delete_of_an_empty_group(broker):
    await commit(broker, "standalone", {("t", 0): 5, ("t", 1): 6})
    resp = await call(
        offset_delete,
        broker,
        0,
        {"group_id": "standalone", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
    )
    assert resp["error_code"] == 0
    assert resp["topics"] == [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 0}]}]
    assert await committed(broker, "standalone") == {0: -1, 1: 6}


async def test_offset_delete_refusals(broker):
    member, generation = await join(broker)
    await commit(broker, "g", {("t", 0): 5}, generation, member)
    subscribed = await call(
        offset_delete, broker, 0, {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
    )
    assert subscribed["error_code"] == 0
    assert subscribed["topics"] == [
        {"name": "t", "partitions": [{"partition_index": 0, "error_code": GROUP_SUBSCRIBED_TO_TOPIC}]}
    ]
    assert (await committed(broker, "g"))[0] == 5
    unknown = await call(
        offset_delete,
        broker,
        0,
        {"group_id": "nope", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
    )
    assert (unknown["error_code"], unknown["topics"]) == (GROUP_ID_NOT_FOUND, [])


# ---- FindCoordinator ------------------------------------------------------------------------


async def test_find_coordinator_batch_and_single_key(broker):
    resp = await call(find_coordinator, broker, 4, {"key_type": 0, "coordinator_keys": ["g", "h"]})
    assert resp["coordinators"] == [
        {"key": k, "node_id": 1, "host": HOST, "port": PORT, "error_code": 0, "error_message": None} for k in ("g", "h")
    ]
    txn = await call(find_coordinator, broker, 3, {"key": "tx", "key_type": 1})
    assert (txn["error_code"], txn["error_message"], txn["node_id"], txn["host"], txn["port"]) == (
        0,
        None,
        1,
        HOST,
        PORT,
    )
    v0 = await call(find_coordinator, broker, 0, {"key": "g"})
    assert (v0["error_code"], v0["node_id"], v0["host"], v0["port"]) == (0, 1, HOST, PORT)


async def test_find_coordinator_unknown_key_type(broker):
    resp = await call(find_coordinator, broker, 4, {"key_type": 5, "coordinator_keys": ["g"]})
    [c] = resp["coordinators"]
    assert (c["key"], c["error_code"], c["node_id"], c["host"], c["port"]) == ("g", INVALID_REQUEST, -1, "", -1)
    single = await call(find_coordinator, broker, 3, {"key": "g", "key_type": 5})
    assert (single["error_code"], single["node_id"]) == (INVALID_REQUEST, -1)
