"""The group coordinator in process, on a real Broker object (no listeners): rebalance timing,
session expiry, protocol selection, persistence round trips and offset retention, with timeouts
of milliseconds on a virtual clock (tests/virtual_time.py): every sleep and timer lasts exactly
its loop time, however loaded the machine is."""

import asyncio

import pytest
from virtual_time import VirtualTimePolicy

from tidelog.core.config import load_config
from tidelog.groups import ClassicJoin, GroupCoordinator
from tidelog.groups.records import OffsetValue
from tidelog.groups.state import GroupState as S
from tidelog.groups.store import MemoryGroupLog
from tidelog.server.broker import Broker

# pytest-asyncio 1.x deprecates overriding this fixture for a loop factory hook that applies to
# every test of a session; this module alone runs on virtual time, so the fixture stays.
pytestmark = pytest.mark.filterwarnings('ignore:Overriding the "event_loop_policy" fixture:DeprecationWarning')


@pytest.fixture(scope="module")
def event_loop_policy():
    return VirtualTimePolicy()


NONE, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION = 0, 27, 25, 22
SUB = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"


def make(tmp_path, backend=None, **overrides):
    conf = {
        "log.dirs": str(tmp_path),
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "10",
        "offsets.topic.num.partitions": "3",
        **overrides,
    }
    broker = Broker(load_config(None, [f"{k}={v}" for k, v in conf.items()]))
    # the in-memory backend instead of the data path
    coord = GroupCoordinator(broker.config, broker.admin, backend or MemoryGroupLog())
    coord.start()
    broker.registry.create("t", 4, {}) if broker.registry.get("t") is None else None
    return broker, coord


def join(
    coord, group, member_id="", session=200, rebalance=300, protocols=(("range", SUB),), instance=None, client="c"
):
    return coord.join(
        ClassicJoin(
            group,
            member_id,
            instance,
            client,
            "/127.0.0.1",
            session,
            rebalance,
            "consumer",
            tuple(protocols),
            require_known_member_id=False,
        )
    )


async def test_two_members_one_generation_and_protocol_vote(tmp_path):
    _, coord = make(tmp_path)
    a = asyncio.ensure_future(join(coord, "g", protocols=[("roundrobin", SUB), ("range", SUB)]))
    await asyncio.sleep(0)
    ra = await a  # alone: generation 1 at once
    assert ra["error_code"] == NONE and ra["generation_id"] == 1 and ra["protocol_name"] == "roundrobin"
    sa = await coord.sync("g", ra["member_id"], None, 1, None, None, {ra["member_id"]: b"A"})
    assert sa["assignment"] == b"A" and coord.groups["g"].state is S.STABLE
    # b joins: a learns through its heartbeat, rejoins, both get generation 2; b prefers range.
    b = asyncio.ensure_future(join(coord, "g", protocols=[("range", SUB), ("roundrobin", SUB)]))
    await asyncio.sleep(0.01)
    assert coord.heartbeat("g", ra["member_id"], None, 1) == REBALANCE_IN_PROGRESS
    ra2 = await join(coord, "g", member_id=ra["member_id"], protocols=[("roundrobin", SUB), ("range", SUB)])
    rb = await b
    assert ra2["generation_id"] == rb["generation_id"] == 2
    assert ra2["protocol_name"] == rb["protocol_name"]  # one vote each: the tie goes to the first preference seen
    leader, follower = (ra2, rb) if ra2["members"] else (rb, ra2)
    assert len(leader["members"]) == 2 and follower["members"] == []
    fs = asyncio.ensure_future(coord.sync("g", follower["member_id"], None, 2, None, None, {}))
    await asyncio.sleep(0.01)
    assert not fs.done()  # the follower waits for the leader's assignment
    ls = await coord.sync(
        "g", leader["member_id"], None, 2, None, None, {leader["member_id"]: b"L", follower["member_id"]: b"F"}
    )
    assert ls["assignment"] == b"L" and (await fs)["assignment"] == b"F"


async def test_member_that_does_not_rejoin_is_dropped_after_rebalance_timeout(tmp_path):
    _, coord = make(tmp_path)
    ra = await join(coord, "g", session=5000, rebalance=150)
    await coord.sync("g", ra["member_id"], None, 1, None, None, {})
    rb = asyncio.ensure_future(join(coord, "g", session=5000, rebalance=150))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    r = await rb  # a never rejoins: after the rebalance timeout the group goes on without it
    assert loop.time() - t0 >= 0.14
    assert r["generation_id"] == 2 and [m["member_id"] for m in r["members"]] == [r["member_id"]]
    assert coord.heartbeat("g", ra["member_id"], None, 1) == UNKNOWN_MEMBER_ID


async def test_session_expiry_empties_the_group_and_persists_it(tmp_path):
    backend = MemoryGroupLog()
    _, coord = make(tmp_path, backend)
    r = await join(coord, "g", session=50)
    await coord.sync("g", r["member_id"], None, 1, None, None, {r["member_id"]: b"x"})
    await asyncio.sleep(0.03)
    assert coord.heartbeat("g", r["member_id"], None, 1) == NONE  # pushes the deadline out
    await asyncio.sleep(0.03)
    assert coord.groups["g"].state is S.STABLE
    await asyncio.sleep(0.1)
    g = coord.groups["g"]
    assert g.state is S.EMPTY and g.generation == 2 and not g.members
    # Stale generation after the group moved on.
    assert coord.heartbeat("g", r["member_id"], None, 1) == UNKNOWN_MEMBER_ID
    coord.stop()
    _, again = make(tmp_path, backend)
    assert again.groups["g"].state is S.EMPTY and again.groups["g"].generation == 2


async def test_restart_restores_stable_group_and_offsets(tmp_path):
    backend = MemoryGroupLog()
    _, coord = make(tmp_path, backend)
    r = await join(coord, "g", session=5000)
    await coord.sync("g", r["member_id"], None, 1, None, None, {r["member_id"]: b"asg"})
    res = await coord.commit_offsets("g", 1, r["member_id"], None, {("t", 0): OffsetValue(42, "m", 1)})
    assert res == {("t", 0): NONE}
    assert (await coord.commit_offsets("g", 0, r["member_id"], None, {("t", 1): OffsetValue(1)})) == {
        ("t", 1): ILLEGAL_GENERATION
    }
    coord.stop()
    _, again = make(tmp_path, backend)
    g = again.groups["g"]
    assert g.state is S.STABLE and g.generation == 1 and g.leader_id == r["member_id"]
    assert again.heartbeat("g", r["member_id"], None, 1) == NONE
    s = await again.sync("g", r["member_id"], None, 1, None, None, {})
    assert s["assignment"] == b"asg"
    assert again.fetch_offsets("g", None)[1] == [
        {
            "name": "t",
            "partitions": [
                {
                    "partition_index": 0,
                    "committed_offset": 42,
                    "committed_leader_epoch": -1,
                    "metadata": "m",
                    "error_code": 0,
                }
            ],
        }
    ]
    again.stop()


async def test_offset_retention(tmp_path):
    _, coord = make(tmp_path, **{"offsets.retention.minutes": "1"})
    minute = 60_000
    # An offsets-only group: each offset expires a retention period after its commit.
    await coord.commit_offsets(
        "simple", -1, "", None, {("t", 0): OffsetValue(1, "", 1000), ("t", 1): OffsetValue(2, "", 1000 + minute)}
    )
    # An explicit expire timestamp (OffsetCommit v2-v4 retention_time) wins.
    await coord.commit_offsets("explicit", -1, "", None, {("t", 0): OffsetValue(1, "", 1000, expire_timestamp=5000)})
    # A consumer group that went Empty keeps its offsets a retention period after that.
    r = await join(coord, "cg", session=5000)
    await coord.sync("cg", r["member_id"], None, 1, None, None, {})
    await coord.commit_offsets("cg", 1, r["member_id"], None, {("t", 2): OffsetValue(3, "", 0)})
    await coord.leave("cg", [(r["member_id"], None)])
    empty_since = coord.groups["cg"].state_timestamp
    assert await coord.expire_offsets(now=1000 + minute) == 2  # simple t-0 and explicit
    assert set(coord.store.committed("simple")) == {("t", 1)}
    assert "explicit" not in coord.groups  # nothing left: the group is gone
    assert coord.store.committed("cg")  # still within retention of becoming empty
    assert await coord.expire_offsets(now=empty_since + minute) == 2
    assert "cg" not in coord.groups
    assert coord.store.committed("cg") == {} and "simple" not in coord.groups
    coord.stop()


async def test_txn_offsets_visible_only_after_commit_marker(tmp_path):
    backend = MemoryGroupLog()
    _, coord = make(tmp_path, backend)
    r = await join(coord, "g", session=5000)
    await coord.sync("g", r["member_id"], None, 1, None, None, {})
    txn = coord.offsets
    assert await txn.commit_txn("g", 7, 0, 2, r["member_id"], None, {("t", 0): OffsetValue(5)}) == {
        ("t", 0): ILLEGAL_GENERATION
    }
    assert await txn.commit_txn("g", 7, 0, 1, "nobody", None, {("t", 0): OffsetValue(5)}) == {
        ("t", 0): UNKNOWN_MEMBER_ID
    }
    assert await coord.commit_offsets("g", 1, r["member_id"], None, {("t", 1): OffsetValue(3)}) == {("t", 1): NONE}
    assert await txn.commit_txn("g", 7, 0, 1, r["member_id"], None, {("t", 0): OffsetValue(5)}) == {("t", 0): NONE}
    assert await txn.commit_txn("g", 8, 0, -1, "", None, {("t", 1): OffsetValue(9)}) == {("t", 1): NONE}
    # Staged, not committed: OffsetFetch with require_stable reports UNSTABLE_OFFSET_COMMIT (88)
    # and no offset; without it, the committed offsets.
    assert {tp: v.offset for tp, v in coord.store.committed("g").items()} == {("t", 1): 3}
    fetch = lambda stable: [
        (p["committed_offset"], p["error_code"])
        for p in coord.fetch_offsets("g", [("t", [0, 1, 2])], require_stable=stable)[1][0]["partitions"]
    ]
    assert fetch(True) == [(-1, 88), (-1, 88), (-1, NONE)]
    assert fetch(False) == [(-1, NONE), (3, NONE), (-1, NONE)]
    await txn.complete_txn(7, 0, commit=True)
    await txn.complete_txn(8, 0, commit=False)
    assert fetch(True) == [(5, NONE), (3, NONE), (-1, NONE)]
    assert {tp: v.offset for tp, v in coord.store.committed("g").items()} == {("t", 0): 5, ("t", 1): 3}
    markers = [e for e in backend.partitions[txn.partition_for("g")] if e.control is not None]
    assert [(e.producer_id, e.control) for e in markers] == [(7, True), (8, False)]
    coord.stop()
    _, again = make(tmp_path, backend)  # the replay applies the markers the same way
    assert {tp: v.offset for tp, v in again.store.committed("g").items()} == {("t", 0): 5, ("t", 1): 3}
    again.stop()


async def test_a_heartbeat_to_a_loading_coordinator_is_answered_none(tmp_path):
    """As Kafka: a classic member's Heartbeat while the coordinator loads the group is answered
    NONE blindly (aiokafka's heartbeat task dies on COORDINATOR_LOAD_IN_PROGRESS); JoinGroup is
    still told to wait."""
    broker = Broker(load_config(None, [f"log.dirs={tmp_path}", "offsets.topic.num.partitions=3"]))
    coord = GroupCoordinator(broker.config, broker.admin, MemoryGroupLog())  # not started: loading
    assert coord.status("g") == 14  # COORDINATOR_LOAD_IN_PROGRESS
    assert coord.heartbeat("g", "m-1", None, 1) == NONE
    assert (await join(coord, "g"))["error_code"] == 14
