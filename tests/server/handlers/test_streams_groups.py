"""Streams groups (KIP-1071, Kafka Streams with group.protocol=streams) through their handlers,
called directly on a real broker (no socket): StreamsGroupHeartbeat's topology initialization and
configuration (internal topics created by the broker, partition counts decided), the sticky task
assignment, revocation before assignment, epochs, statuses, standby tasks, endpoints, leaving;
StreamsGroupDescribe; OffsetCommit/OffsetFetch v9 checked against member epochs; ListGroups,
DescribeGroups and the other protocols refusing the group; the state surviving a restart."""

from __future__ import annotations

import asyncio

from tidelog.server.handlers import (
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    join_group,
    list_groups,
    offset_commit,
    offset_fetch,
    streams_group_describe,
    streams_group_heartbeat,
)

from .kit import GROUP_ID_NOT_FOUND, INVALID_REQUEST, NON_EMPTY_GROUP, UNKNOWN_MEMBER_ID, call, started_broker

FENCED_MEMBER_EPOCH = 110
STALE_MEMBER_EPOCH = 113
STREAMS_INVALID_TOPOLOGY = 130
# StreamsGroupHeartbeatResponse.Status codes
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5

REPARTITION = "app-count-repartition"
CHANGELOG = "app-count-changelog"
NO_DELAYS = ("group.streams.initial.rebalance.delay.ms=0", "group.streams.assignment.interval.ms=0")


def topology(source: str = "t", epoch: int = 0, changelog_partitions: int = 0) -> dict:
    """A word count's: subtopology 0 reads `source` and writes the repartition topic, which
    subtopology 1 reads, keeping its counts in a changelog."""
    info = {"partitions": 0, "replication_factor": 0, "topic_configs": []}
    return {
        "epoch": epoch,
        "subtopologies": [
            {
                "subtopology_id": "0",
                "source_topics": [source],
                "source_topic_regex": [],
                "state_changelog_topics": [],
                "repartition_sink_topics": [REPARTITION],
                "repartition_source_topics": [],
                "copartition_groups": [],
            },
            {
                "subtopology_id": "1",
                "source_topics": [],
                "source_topic_regex": [],
                "state_changelog_topics": [{**info, "name": CHANGELOG, "partitions": changelog_partitions}],
                "repartition_sink_topics": [],
                "repartition_source_topics": [{**info, "name": REPARTITION}],
                "copartition_groups": [],
            },
        ],
    }


def hb(broker, member_id: str, epoch: int, *, owned=None, group="app", process="p1", **kw):
    joining = epoch == 0
    empty: list = []
    tasks = owned if owned is not None else (empty if joining else None)
    data = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "endpoint_information_epoch": kw.get("endpoint_epoch", 0),
        "instance_id": kw.get("instance_id"),
        "rack_id": None,
        "rebalance_timeout": kw.get("rebalance_timeout", 30_000 if joining else -1),
        "topology": kw.get("topology", topology() if joining else None),
        "active_tasks": tasks,
        "standby_tasks": kw.get("standby", empty if tasks is not None else None),
        "warmup_tasks": empty if tasks is not None else None,
        "process_id": process if joining else None,
        "user_endpoint": kw.get("endpoint"),
        "client_tags": [] if joining else None,
        "task_offsets": None,
        "task_end_offsets": None,
        "shutdown_application": kw.get("shutdown", False),
    }
    return call(streams_group_heartbeat, broker, 0, data)


def tasks(resp, kind: str = "active_tasks") -> dict[str, set[int]] | None:
    got = resp[kind]
    return None if got is None else {t["subtopology_id"]: set(t["partitions"]) for t in got if t["partitions"]}


def as_owned(t: dict[str, set[int]]) -> list[dict]:
    return [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(t.items())]


def statuses(resp) -> set[int]:
    return {s["status_code"] for s in resp["status"] or ()}


async def until(check, what: str, timeout: float = 10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not (result := await check()):
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.02)
    return result


async def describe(broker, group: str = "app") -> dict:
    d = await call(streams_group_describe, broker, 0, {"group_ids": [group], "include_authorized_operations": False})
    return d["groups"][0]


async def ready(broker, member_id: str = "a", **kw) -> dict:
    """A member joined and, once the broker created the internal topics, assigned its tasks."""
    first = await hb(broker, member_id, 0, **kw)
    assert first["error_code"] == 0, first
    if tasks(first):
        return first
    epoch = first["member_epoch"]

    async def assigned():
        nonlocal epoch
        r = await hb(broker, member_id, epoch, owned=[])
        epoch = r["member_epoch"]
        return r if r["active_tasks"] else None

    return await until(assigned, "no tasks assigned")


async def test_the_first_member_creates_the_internal_topics_and_gets_every_task(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        first = await hb(broker, "a", 0)
        # a new group is at epoch 1, the join makes it 2: assigned nothing, the topology is not ready
        assert first["error_code"] == 0 and first["member_epoch"] == 2
        assert statuses(first) == {MISSING_INTERNAL_TOPICS}
        assert tasks(first) == {} and first["heartbeat_interval"].total_seconds() == 5
        detail = first["status"][0]["status_detail"]
        assert detail == f"Internal topics are missing: {CHANGELOG}, {REPARTITION}"  # Kafka's HashMap order
        # the broker creates them, with the partition count of the source topic
        await until(lambda: asyncio.sleep(0, broker.registry.get(CHANGELOG)), "changelog not created")
        assert broker.registry.get(REPARTITION).partitions == 2 and broker.registry.get(CHANGELOG).partitions == 2
        r = await hb(broker, "a", 2, owned=[])
        assert r["status"] == [] and r["member_epoch"] == 3
        assert tasks(r) == {"0": {0, 1}, "1": {0, 1}} and tasks(r, "standby_tasks") == {}
        g = await describe(broker)
        assert g["group_state"] == "Stable" and g["group_epoch"] == 3 and g["assignment_epoch"] == 3
        subs = {s["subtopology_id"]: s for s in g["topology"]["subtopologies"]}
        assert subs["1"]["repartition_source_topics"][0]["partitions"] == 2  # as configured, not as declared
        assert subs["1"]["state_changelog_topics"][0]["name"] == CHANGELOG
        (m,) = g["members"]
        assert m["process_id"] == "p1" and m["topology_epoch"] == 0
        assert {t["subtopology_id"]: t["partitions"] for t in m["assignment"]["active_tasks"]} == {
            "0": [0, 1],
            "1": [0, 1],
        }


async def test_tasks_move_only_once_revoked(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        a = await ready(broker, "a")
        mine = tasks(a)
        b = await hb(broker, "b", 0, process="p2")
        assert b["member_epoch"] == 4 and tasks(b) == {}  # its target's tasks are still a's
        a2 = await hb(broker, "a", a["member_epoch"], owned=as_owned(mine))
        assert a2["member_epoch"] == 3  # revoke first, at its epoch
        kept = tasks(a2)
        assert sum(map(len, kept.values())) == 2
        b2 = await hb(broker, "b", 4, owned=[])
        assert tasks(b2) is None  # a still runs them
        a3 = await hb(broker, "a", 3, owned=as_owned(kept))
        assert a3["member_epoch"] == 4
        b3 = await hb(broker, "b", 4, owned=[])
        got = tasks(b3)
        assert all(not (got.get(s, set()) & ps) for s, ps in kept.items())
        assert sum(map(len, got.values())) == 2
        g = await describe(broker)
        assert g["group_state"] == "Stable" and {m["member_epoch"] for m in g["members"]} == {4}


async def test_a_member_of_the_same_process_waits_for_its_own_standby_to_go(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        broker.group_configs.set("app", {"streams.num.standby.replicas": "1"})
        a = await ready(broker, "a", process="p1")
        b = await hb(broker, "b", 0, process="p2")
        assert b["error_code"] == 0
        a2 = await hb(broker, "a", a["member_epoch"], owned=as_owned(tasks(a)))
        kept = tasks(a2)
        await hb(broker, "a", a2["member_epoch"], owned=as_owned(kept))
        b2 = await hb(broker, "b", b["member_epoch"], owned=[])
        # the stateful subtopology 1: each task active on one process, standby on the other
        g = await describe(broker)
        for m in g["members"]:
            target = m["target_assignment"]
            active = {(t["subtopology_id"], p) for t in target["active_tasks"] for p in t["partitions"]}
            standby = {(t["subtopology_id"], p) for t in target["standby_tasks"] for p in t["partitions"]}
            assert standby and not active & standby and {s for s, _ in standby} == {"1"}
        assert b2["error_code"] == 0


async def test_requests_are_validated_as_kafka_does(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        assert (await hb(broker, "m", 0, instance_id="i"))["error_code"] == INVALID_REQUEST  # not supported yet
        assert (await hb(broker, "", 0))["error_code"] == INVALID_REQUEST
        assert (await hb(broker, "m", 0, topology=None))["error_code"] == INVALID_REQUEST
        assert (await hb(broker, "m", 0, rebalance_timeout=-1))["error_code"] == INVALID_REQUEST
        assert (await hb(broker, "m", 0, owned=[{"subtopology_id": "0", "partitions": [0]}]))[
            "error_code"
        ] == INVALID_REQUEST
        assert (await hb(broker, "m", 1, topology=topology()))["error_code"] == INVALID_REQUEST
        assert (await hb(broker, "m", -3))["error_code"] == INVALID_REQUEST
        bad = await hb(broker, "m", 0, topology=topology(changelog_partitions=4))
        assert bad["error_code"] == STREAMS_INVALID_TOPOLOGY
        internal = await hb(broker, "m", 0, topology=topology(source="__consumer_offsets"))
        assert internal["error_code"] == STREAMS_INVALID_TOPOLOGY
        assert "internal topics __consumer_offsets" in internal["error_message"]
        assert (await hb(broker, "m", 3, group="nope"))["error_code"] == GROUP_ID_NOT_FOUND
        await hb(broker, "m", 0)
        assert (await hb(broker, "x", 1, owned=[]))["error_code"] == UNKNOWN_MEMBER_ID
        assert (await hb(broker, "m", 7, owned=[]))["error_code"] == FENCED_MEMBER_EPOCH
        other = topology()
        other["subtopologies"][0]["repartition_sink_topics"] = ["elsewhere"]
        assert (await hb(broker, "n", 0, topology=other))["error_code"] == INVALID_REQUEST  # no topology updates
        assert (await hb(broker, "n", 0, topology=topology(epoch=0)))["error_code"] == 0


async def test_a_member_with_an_older_topology_is_told_it_is_stale(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        await hb(broker, "new", 0, topology=topology(epoch=1))
        old = await hb(broker, "old", 0, topology=topology(epoch=0), process="p2")
        assert old["error_code"] == 0 and STALE_TOPOLOGY in statuses(old)
        detail = next(s["status_detail"] for s in old["status"] if s["status_code"] == STALE_TOPOLOGY)
        assert detail == "The member's topology epoch 0 is behind the group's topology epoch 1."
        assert (await describe(broker))["topology"]["epoch"] == 1


async def test_a_missing_source_topic_is_a_status(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        r = await hb(broker, "a", 0, topology=topology(source="absent"))
        assert r["error_code"] == 0 and statuses(r) == {MISSING_SOURCE_TOPICS}
        assert r["status"][0]["status_detail"] == "Source topics absent are missing."
        g = await describe(broker)
        assert g["group_state"] == "NotReady" and g["topology"]["subtopologies"][0]["source_topics"] == ["absent"]
        await broker.admin.create_topic("absent", 3, 1, {})
        r2 = await hb(broker, "a", r["member_epoch"], owned=[])
        assert statuses(r2) == {MISSING_INTERNAL_TOPICS}  # the topology is configured again


async def test_the_first_assignment_waits_for_the_initial_rebalance_delay(tmp_path):
    async with started_broker(tmp_path, "group.streams.initial.rebalance.delay.ms=200") as broker:
        await broker.admin.create_topic(REPARTITION, 2, 1, {})
        await broker.admin.create_topic(CHANGELOG, 2, 1, {})
        r = await hb(broker, "a", 0)
        assert statuses(r) == {ASSIGNMENT_DELAYED} and r["member_epoch"] == 1
        assert r["status"][0]["status_detail"] == "Assignment delayed due to the configured initial rebalance delay."

        async def assigned():
            got = await hb(broker, "a", 1, owned=[])
            return got if got["active_tasks"] else None

        got = await until(assigned, "the delayed assignment never came")
        assert got["member_epoch"] == 2 and tasks(got) == {"0": {0, 1}, "1": {0, 1}}


async def test_leaving_gives_the_tasks_to_the_others(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        a = await ready(broker, "a")
        b = await hb(broker, "b", 0, process="p2")
        left = await hb(broker, "a", -1)
        assert left["error_code"] == 0 and left["member_epoch"] == -1 and left["status"] == []
        b2 = await hb(broker, "b", b["member_epoch"], owned=[])
        assert tasks(b2) == {"0": {0, 1}, "1": {0, 1}} and b2["member_epoch"] == b["member_epoch"] + 1
        assert a["error_code"] == 0


async def test_endpoints_tell_which_partitions_each_instance_serves(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        a = await ready(broker, "a", endpoint={"host": "app-1", "port": 8080})
        r = await hb(broker, "a", a["member_epoch"], owned=as_owned(tasks(a)), endpoint_epoch=0)
        assert r["endpoint_information_epoch"] >= 1
        (e,) = r["partitions_by_user_endpoint"]
        assert e["user_endpoint"] == {"host": "app-1", "port": 8080}
        assert {(tp["topic"], tuple(tp["partitions"])) for tp in e["active_partitions"]} == {
            ("t", (0, 1)),
            (REPARTITION, (0, 1)),
        }
        same = await hb(
            broker, "a", a["member_epoch"], owned=as_owned(tasks(a)), endpoint_epoch=r["endpoint_information_epoch"]
        )
        assert same["partitions_by_user_endpoint"] is None


async def test_a_shutdown_request_is_told_to_every_member(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        a = await ready(broker, "a")
        b = await hb(broker, "b", 0, process="p2")
        await hb(broker, "a", a["member_epoch"], owned=as_owned(tasks(a)), shutdown=True)
        b2 = await hb(broker, "b", b["member_epoch"], owned=[])
        assert SHUTDOWN_APPLICATION in statuses(b2)


async def test_offset_commit_v9_checks_the_member_epoch(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        a = await ready(broker, "a")
        epoch = a["member_epoch"]

        def commit(epoch: int, member: str = "a", version: int = 9, topic: str = "t"):
            return call(
                offset_commit,
                broker,
                version,
                {
                    "group_id": "app",
                    "generation_id_or_member_epoch": epoch,
                    "member_id": member,
                    "group_instance_id": None,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [{"partition_index": 0, "committed_offset": 7, "committed_metadata": ""}],
                        }
                    ],
                },
            )

        def code(resp) -> int:
            return resp["topics"][0]["partitions"][0]["error_code"]

        assert code(await commit(epoch)) == 0
        assert code(await commit(epoch + 1)) == STALE_MEMBER_EPOCH
        assert code(await commit(epoch - 1)) == STALE_MEMBER_EPOCH  # its tasks were assigned at `epoch`
        assert code(await commit(epoch, member="zz")) == UNKNOWN_MEMBER_ID
        assert code(await commit(epoch, version=8)) == 35  # UNSUPPORTED_VERSION
        fetch = {
            "groups": [
                {
                    "group_id": "app",
                    "member_id": "a",
                    "member_epoch": epoch,
                    "topics": [{"name": "t", "partition_indexes": [0]}],
                }
            ]
        }
        got = await call(offset_fetch, broker, 9, fetch)
        assert got["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 7
        fetch["groups"][0]["member_epoch"] = epoch + 1
        assert (await call(offset_fetch, broker, 9, fetch))["groups"][0]["error_code"] == STALE_MEMBER_EPOCH


async def test_other_apis_see_a_streams_group(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        a = await ready(broker, "a")
        listed = await call(list_groups, broker, 5, {"states_filter": [], "types_filter": ["streams"]})
        assert [(g["group_id"], g["group_type"], g["protocol_type"], g["group_state"]) for g in listed["groups"]] == [
            ("app", "streams", "streams", "Stable")
        ]
        assert (await call(list_groups, broker, 5, {"states_filter": [], "types_filter": ["consumer"]}))["groups"] == []
        d = await call(describe_groups, broker, 6, {"groups": ["app"], "include_authorized_operations": False})
        assert d["groups"][0]["error_code"] == GROUP_ID_NOT_FOUND
        assert d["groups"][0]["error_message"] == "Group app is not a classic group."
        c = await call(
            consumer_group_heartbeat,
            broker,
            1,
            {
                "group_id": "app",
                "member_id": "c",
                "member_epoch": 0,
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout": 30_000,
                "subscribed_topic_names": ["t"],
                "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": [],
            },
        )
        assert c["error_code"] == GROUP_ID_NOT_FOUND
        assert (await describe(broker, "nope"))["error_code"] == GROUP_ID_NOT_FOUND
        assert (await call(delete_groups, broker, 2, {"groups_names": ["app"]}))["results"][0]["error_code"] == (
            NON_EMPTY_GROUP
        )
        join = {
            "group_id": "app",
            "session_timeout": 30_000,
            "rebalance_timeout": 30_000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        }
        assert (await call(join_group, broker, 5, join))["error_code"] == 23  # INCONSISTENT_GROUP_PROTOCOL
        await hb(broker, "a", -1)
        assert (await describe(broker))["group_state"] == "Empty"
        assert (await call(delete_groups, broker, 2, {"groups_names": ["app"]}))["results"][0]["error_code"] == 0
        assert "app" not in broker.groups.streams.groups and a["error_code"] == 0
        # an empty streams group becomes a classic one when a classic member joins (as Kafka)
        await ready(broker, "b")
        await hb(broker, "b", -1)
        assert (await call(join_group, broker, 5, join))["error_code"] in (0, 79)  # 79: MEMBER_ID_REQUIRED
        assert "app" not in broker.groups.streams.groups and "app" in broker.groups.groups


async def test_the_group_survives_a_restart(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as b:
        a = await ready(b, "a")
        await hb(b, "b", 0, process="p2")
        before = b.groups.streams.groups["app"]
        snapshot = (
            before.group_epoch,
            before.assignment_epoch,
            before.validated_topology_epoch,
            before.topology,
            {m: (x.member_epoch, x.state, x.assigned, x.process_id) for m, x in before.members.items()},
            dict(before.target),
        )
    async with started_broker(tmp_path, *NO_DELAYS) as b2:
        after = b2.groups.streams.groups["app"]
        assert (
            after.group_epoch,
            after.assignment_epoch,
            after.validated_topology_epoch,
            after.topology,
            {m: (x.member_epoch, x.state, x.assigned, x.process_id) for m, x in after.members.items()},
            dict(after.target),
        ) == snapshot
        # the member goes on from where it was: asked to revoke at its epoch
        a2 = await hb(b2, "a", a["member_epoch"], owned=as_owned(tasks(a)))
        assert a2["error_code"] == 0 and a2["member_epoch"] == a["member_epoch"] and tasks(a2)


async def test_a_member_whose_session_ends_is_fenced(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        a = await ready(broker, "a")
        epoch = (await describe(broker))["group_epoch"]
        broker.group_configs.set("app", {"streams.session.timeout.ms": "150"})  # the group's own setting
        await hb(broker, "a", a["member_epoch"], owned=as_owned(tasks(a)))  # armed with it

        async def gone():
            g = await describe(broker)
            return g if not g["members"] else None

        g = await until(gone, "the member was never fenced")
        assert g["group_epoch"] == epoch + 1 and g["group_state"] == "Empty"
        assert (await hb(broker, "a", a["member_epoch"], owned=[]))["error_code"] == UNKNOWN_MEMBER_ID


async def test_a_member_that_does_not_revoke_in_time_is_fenced(tmp_path):
    async with started_broker(tmp_path, *NO_DELAYS) as broker:
        a = await ready(broker, "a", rebalance_timeout=150)
        await hb(broker, "b", 0, process="p2")
        asked = await hb(broker, "a", a["member_epoch"], owned=as_owned(tasks(a)))
        assert asked["member_epoch"] == a["member_epoch"]  # asked to revoke; it never does

        async def fenced():
            g = await describe(broker)
            return g if [m["member_id"] for m in g["members"]] == ["b"] else None

        await until(fenced, "the member was never fenced")
        assert (await hb(broker, "a", a["member_epoch"], owned=as_owned(tasks(a))))["error_code"] == UNKNOWN_MEMBER_ID
