"""The newest versions Kafka 4.3.1 serves of APIs tidelog served at older ones, through their
handlers: what each version changes, answered as Kafka's broker answers it (each section names
the versions and what they add)."""

from __future__ import annotations

import base64
import uuid

from tidelog.server.handlers import (
    bound,
    describe_cluster,
    fetch,
    find_coordinator,
    init_producer_id,
    join_group,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_fetch,
    sync_group,
)
from tidelog.wire import fetch as fetch_codec
from tidelog.wire import list_offsets as lo_codec

from .kit import (
    HOST,
    INVALID_REQUEST,
    PORT,
    SUBSCRIPTION,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    answer,
    call,
    ctx,
    produce_records,
)

UNSUPPORTED_VERSION = 35
STALE_MEMBER_EPOCH = 113
INVALID_REGULAR_EXPRESSION = 128


def kafka_uuid(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


# ---- Fetch 17-18 ----------------------------------------------------------------------------


async def test_fetch_v18_reads_a_follower_s_directory_id_and_high_watermark(broker):
    await produce_records(broker, 3)
    topic_id = broker.registry.get("t").topic_id
    part = fetch_codec.FetchRequestPartition(0, 1, 1 << 20, replica_directory_id=uuid.uuid4(), high_watermark=1)
    req = fetch_codec.FetchRequest(0, 1, [fetch_codec.FetchRequestTopic("", [part], topic_id)], max_bytes=1 << 20)
    for version in (17, 18):
        body = b"".join(bytes(c) for c in fetch_codec.encode_request(req, version))
        decoded = fetch_codec.decode_request(body, version, strict=True)
        got = decoded.topics[0].partitions[0]
        assert got.replica_directory_id == part.replica_directory_id and got.tagged_fields is None
        assert got.high_watermark == (1 if version == 18 else fetch_codec.NO_REQUEST_HW)
        resp = await answer(bound(fetch, broker)(ctx(broker, 1, version), decoded))
        p = resp.responses[0].partitions[0]
        # a consumer's fetch: the partition's own high watermark, whatever the request says
        assert (p.error_code, p.high_watermark) == (0, 3) and p.records
    # v17 has no tag 1 in a partition: kept as an unknown tag, as Kafka's parser keeps it
    raw = fetch_codec.encode_request(req, 18)
    v17 = fetch_codec.decode_request(b"".join(bytes(c) for c in raw), 17)
    assert v17.topics[0].partitions[0].tagged_fields == {1: (1).to_bytes(8, "big")}


# ---- ListOffsets 9-11 -------------------------------------------------------------------------


async def test_list_offsets_sentinels_by_version(broker):
    await produce_records(broker, 3)

    def ask(ts: int, version: int, topic: str = "t"):
        req = lo_codec.ListOffsetsRequest(
            -1, [lo_codec.ListOffsetsRequestTopic(topic, [lo_codec.ListOffsetsRequestPartition(0, ts)])], timeout_ms=5
        )
        p = bound(list_offsets, broker)(ctx(broker, 2, version), req).topics[0].partitions[0]
        return p.error_code, p.timestamp, p.offset

    for version in range(1, 12):
        assert ask(-3, version)[0] == (0 if version >= 7 else UNSUPPORTED_VERSION)  # as Kafka 4.3.1
        assert ask(-4, version) == ((0, -1, 0) if version >= 8 else (UNSUPPORTED_VERSION, -1, -1))
        # no tiered storage: nothing tiered, nothing waiting to be uploaded
        assert ask(-5, version) == ((0, -1, -1) if version >= 9 else (UNSUPPORTED_VERSION, -1, -1))
        assert ask(-6, version) == ((0, -1, -1) if version >= 11 else (UNSUPPORTED_VERSION, -1, -1))
        assert ask(-7, version) == (UNSUPPORTED_VERSION, -1, -1)
        assert ask(-1, version) == (0, -1, 3)
    # the version gate comes before the partition is looked up, as in Kafka's ReplicaManager
    assert ask(-7, 11, topic="nope")[0] == UNSUPPORTED_VERSION
    assert ask(-5, 11, topic="nope")[0] == UNKNOWN_TOPIC_OR_PARTITION


# ---- Metadata 13, DescribeCluster 2 ---------------------------------------------------------


async def test_metadata_v13_has_a_top_level_error_code(broker):
    r = await call(
        metadata,
        broker,
        13,
        {
            "topics": [{"name": "t", "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    assert r["error_code"] == 0 and r["topics"][0]["error_code"] == 0 and len(r["topics"][0]["partitions"]) == 2


async def test_describe_cluster_v2_marks_brokers_unfenced(broker):
    for include in (False, True):
        r = await call(
            describe_cluster,
            broker,
            2,
            {"include_cluster_authorized_operations": False, "endpoint_type": 1, "include_fenced_brokers": include},
        )
        assert r["error_code"] == 0
        assert [(b["host"], b["port"], b["is_fenced"]) for b in r["brokers"]] == [(HOST, PORT, False)]


# ---- FindCoordinator 5-6 ----------------------------------------------------------------------


async def test_find_coordinator_v6_answers_share_keys_on_a_single_node(broker):
    topic_id = kafka_uuid(broker.registry.get("t").topic_id)

    async def find(version: int, keys: list[str], key_type: int = 2) -> list[tuple[int, int]]:
        r = await call(find_coordinator, broker, version, {"key_type": key_type, "coordinator_keys": keys})
        return [(c["error_code"], c["port"]) for c in r["coordinators"]]

    good = [f"sg:{topic_id}:0", f"a:b:{topic_id}:1"]  # the group may hold ':'
    assert await find(6, good) == [(0, PORT), (0, PORT)]
    bad = [f"sg:{topic_id}", f"sg:{topic_id}:x", f" :{topic_id}:0", "sg:not-an-id:0", f"sg:{topic_id}:9999999999"]
    assert await find(6, bad) == [(INVALID_REQUEST, -1)] * len(bad)
    assert await find(5, good[:1]) == [(INVALID_REQUEST, -1)]  # share keys are v6's
    assert await find(5, ["g1"], key_type=0) == [(0, PORT)]
    assert await find(6, ["g1"], key_type=3) == [(INVALID_REQUEST, -1)]


# ---- JoinGroup 8-9 ----------------------------------------------------------------------------


def _static_join(member_id: str, reason: str | None = None) -> dict:
    return {
        "group_id": "sg",
        "session_timeout": 30_000,
        "rebalance_timeout": 30_000,
        "member_id": member_id,
        "group_instance_id": "i1",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
        "reason": reason,
    }


async def test_join_group_v9_tells_a_returning_static_leader_to_skip_the_assignment(broker):
    first = await call(join_group, broker, 9, _static_join("", "starting"))
    leader, gen = first["member_id"], first["generation_id"]
    assert first["error_code"] == 0 and first["leader"] == leader and not first["skip_assignment"]
    synced = await call(
        sync_group,
        broker,
        5,
        {
            "group_id": "sg",
            "generation_id": gen,
            "member_id": leader,
            "group_instance_id": "i1",
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": leader, "assignment": b"a"}],
        },
    )
    assert synced["error_code"] == 0
    # the instance restarts: a new member id, the same generation, no rebalance
    back = await call(join_group, broker, 9, _static_join("", "restarted"))
    assert back["error_code"] == 0 and back["generation_id"] == gen and back["member_id"] != leader
    assert back["leader"] == back["member_id"] and back["skip_assignment"]
    assert [m["group_instance_id"] for m in back["members"]] == ["i1"]  # it leads: it sees the members
    # before v9 the returning leader is told the old leader id, and gets no members: it does not assign
    again = await call(join_group, broker, 8, _static_join(""))
    assert again["error_code"] == 0 and again["generation_id"] == gen
    assert again["leader"] == back["member_id"] != again["member_id"] and again["members"] == []


# ---- ListTransactions 2 -------------------------------------------------------------------------


async def test_list_transactions_v2_filters_by_a_transactional_id_pattern(broker):
    for txn_id in ("orders-1", "orders-2", "billing-1"):
        r = await call(
            init_producer_id,
            broker,
            4,
            {"transactional_id": txn_id, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
        )
        assert r["error_code"] == 0

    async def listed(pattern: str | None, version: int = 2) -> tuple[int, list[str]]:
        data = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
        if version >= 2:
            data["transactional_id_pattern"] = pattern
        r = await call(list_transactions, broker, version, data)
        return r["error_code"], sorted(t["transactional_id"] for t in r["transaction_states"])

    everything = (0, ["billing-1", "orders-1", "orders-2"])
    assert await listed(None) == everything and await listed("") == everything
    assert await listed("orders-.*") == (0, ["orders-1", "orders-2"])
    assert await listed("orders") == (0, [])  # the whole id must match, as Java's Matcher.matches
    assert await listed("(orders") == (INVALID_REGULAR_EXPRESSION, [])
    assert await listed(None, version=1) == everything


# ---- OffsetCommit 10, OffsetFetch 10 ----------------------------------------------------------


def _commit(topics: list[dict], *, group: str = "g10", member: str = "", epoch: int = -1) -> dict:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": epoch,
        "member_id": member,
        "group_instance_id": None,
        "topics": topics,
    }


def _parts(*ps: int, offset: int = 7) -> list[dict]:
    return [{"partition_index": p, "committed_offset": offset + p, "committed_metadata": "m"} for p in ps]


def _fetch(topics: list[dict] | None, *, group: str = "g10", member: str | None = None, epoch: int = -1) -> dict:
    return {"groups": [{"group_id": group, "member_id": member, "member_epoch": epoch, "topics": topics}]}


def _codes(resp: dict) -> dict:
    return {(t["topic_id"], p["partition_index"]): p["error_code"] for t in resp["topics"] for p in t["partitions"]}


async def test_offset_commit_and_fetch_v10_name_topics_by_id(broker):
    tid = broker.registry.get("t").topic_id
    nope = uuid.uuid4()
    c = await call(
        offset_commit,
        broker,
        10,
        _commit([{"topic_id": tid, "partitions": _parts(0, 1, 5)}, {"topic_id": nope, "partitions": _parts(0)}]),
    )
    assert _codes(c) == {(tid, 0): 0, (tid, 1): 0, (tid, 5): UNKNOWN_TOPIC_OR_PARTITION, (nope, 0): UNKNOWN_TOPIC_ID}
    # only unknown ids: answered without the group (which a generation of 5 would refuse)
    c = await call(offset_commit, broker, 10, _commit([{"topic_id": nope, "partitions": _parts(0)}], epoch=5))
    assert _codes(c) == {(nope, 0): UNKNOWN_TOPIC_ID}
    # refused by the group: the partitions it was asked about; the unknown id keeps its error
    c = await call(
        offset_commit,
        broker,
        10,
        _commit([{"topic_id": tid, "partitions": _parts(0, 5)}, {"topic_id": nope, "partitions": _parts(0)}], epoch=5),
    )
    # a generation needs a member; what does not exist is said so first, as Kafka
    assert _codes(c) == {(tid, 0): UNKNOWN_MEMBER_ID, (tid, 5): UNKNOWN_TOPIC_OR_PARTITION, (nope, 0): UNKNOWN_TOPIC_ID}

    f = await call(
        offset_fetch,
        broker,
        10,
        _fetch([{"topic_id": tid, "partition_indexes": [0, 1]}, {"topic_id": nope, "partition_indexes": [3]}]),
    )
    g = f["groups"][0]
    assert g["error_code"] == 0
    assert [
        (t["topic_id"], [(p["partition_index"], p["committed_offset"], p["error_code"]) for p in t["partitions"]])
        for t in g["topics"]
    ] == [(tid, [(0, 7, 0), (1, 8, 0)]), (nope, [(3, -1, UNKNOWN_TOPIC_ID)])]
    # every committed topic, by id
    every = await call(offset_fetch, broker, 10, _fetch(None))
    assert [
        (t["topic_id"], sorted(p["partition_index"] for p in t["partitions"])) for t in every["groups"][0]["topics"]
    ] == [(tid, [0, 1])]
    # the same offsets by name at v9
    v9 = await call(
        offset_fetch,
        broker,
        9,
        {
            "groups": [
                {
                    "group_id": "g10",
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": [{"name": "t", "partition_indexes": [1]}],
                }
            ]
        },
    )
    assert v9["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 8


async def test_offset_commit_v10_checks_a_consumer_group_member_s_epochs(broker):
    from .test_consumer_groups import hb, joined, owned, parts

    await joined(broker, "a")  # epoch 2: partitions 0 and 1
    await joined(broker, "b")  # epoch 3: a gives partition 1 to b
    a = await hb(broker, "a", 2, owned=owned(broker, {0, 1}), topics=None)
    assert (a["member_epoch"], parts(a)) == (2, {0})
    a = await hb(broker, "a", 2, owned=owned(broker, {0}), topics=None)
    assert a["member_epoch"] == 3  # partition 0 has been a's since epoch 2, partition 1 is b's
    tid = broker.registry.get("t").topic_id

    async def commit(epoch: int, *ps: int, offset: int = 7) -> set[int]:
        parts_ = _parts(*ps, offset=offset)
        body = _commit([{"topic_id": tid, "partitions": parts_}], group="cg", member="a", epoch=epoch)
        return set(_codes(await call(offset_commit, broker, 10, body)).values())

    assert await commit(3, 0, 1) == {0}  # the current epoch: any partition
    assert await commit(4, 0) == {STALE_MEMBER_EPOCH}  # newer than the member's
    assert await commit(2, 0) == {0}  # older, but partition 0 was a's at epoch 2 (KIP-1251)
    assert await commit(1, 0) == {STALE_MEMBER_EPOCH}  # not yet a's at epoch 1
    # one partition it did not hold at that epoch fails the whole request: nothing is written
    assert await commit(2, 0, 1, offset=100) == {STALE_MEMBER_EPOCH}
    got = await call(offset_fetch, broker, 10, _fetch([{"topic_id": tid, "partition_indexes": [0, 1]}], group="cg"))
    assert [p["committed_offset"] for p in got["groups"][0]["topics"][0]["partitions"]] == [7, 8]

    async def fetch_error(member: str, epoch: int) -> int:
        body = _fetch(
            [{"topic_id": tid, "partition_indexes": [0]}, {"topic_id": uuid.uuid4(), "partition_indexes": [0]}],
            group="cg",
            member=member,
            epoch=epoch,
        )
        g = (await call(offset_fetch, broker, 10, body))["groups"][0]
        assert g["error_code"] or len(g["topics"]) == 2
        return g["error_code"] if g["error_code"] else len(g["topics"][0]["partitions"]) and 0

    assert await fetch_error("a", 3) == 0
    assert await fetch_error("a", 2) == STALE_MEMBER_EPOCH  # a fetch needs the current epoch; no topics then
    assert await fetch_error("zz", 3) == UNKNOWN_MEMBER_ID
