"""Cluster, partition and log-directory handlers of a single node, called directly (no socket):
DescribeCluster, ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments,
AlterReplicaLogDirs, DescribeLogDirs, OffsetForLeaderEpoch, DeleteRecords and ApiVersions. Node 1
is the whole cluster, its controller, and the only replica (leader epoch 0) of every partition."""

from __future__ import annotations

from pathlib import Path

from tidelog.server import handlers
from tidelog.server.handlers import (
    alter_partition_reassignments,
    alter_replica_log_dirs,
    api_versions,
    delete_records,
    describe_cluster,
    describe_log_dirs,
    elect_leaders,
    list_partition_reassignments,
    offset_for_leader_epoch,
)

from .kit import (
    ELECTION_NOT_NEEDED,
    HOST,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REQUEST,
    LOG_DIR_NOT_FOUND,
    MISMATCHED_ENDPOINT_TYPE,
    NO_AUTHORIZED_OPERATIONS,
    NO_REASSIGNMENT_IN_PROGRESS,
    OFFSET_OUT_OF_RANGE,
    POLICY_VIOLATION,
    PORT,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSUPPORTED_ENDPOINT_TYPE,
    call,
    produce_records,
)

# Kafka's AclOperation codes a cluster supports: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
# DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
ALL_CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
PREFERRED, UNCLEAN = 0, 1
BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2


# ---- DescribeCluster ------------------------------------------------------------------------


async def test_describe_cluster(broker):
    resp = await call(
        describe_cluster, broker, 1, {"include_cluster_authorized_operations": True, "endpoint_type": BROKER_ENDPOINT}
    )
    assert resp == {
        "throttle_time": resp["throttle_time"],
        "error_code": 0,
        "error_message": None,
        "endpoint_type": BROKER_ENDPOINT,
        "cluster_id": broker.registry.cluster_id,
        "controller_id": 1,
        "brokers": [{"broker_id": 1, "host": HOST, "port": PORT, "rack": None}],
        "cluster_authorized_operations": ALL_CLUSTER_OPERATIONS,
    }
    v0 = await call(describe_cluster, broker, 0, {"include_cluster_authorized_operations": False})
    assert (v0["error_code"], v0["controller_id"], v0["cluster_authorized_operations"]) == (
        0,
        1,
        NO_AUTHORIZED_OPERATIONS,
    )
    assert v0["brokers"] == resp["brokers"]


async def test_describe_cluster_refuses_an_endpoint_type_other_than_broker(broker):
    controller = await call(describe_cluster, broker, 1, {"endpoint_type": CONTROLLER_ENDPOINT})
    assert (controller["error_code"], controller["brokers"]) == (MISMATCHED_ENDPOINT_TYPE, [])
    unknown = await call(describe_cluster, broker, 1, {"endpoint_type": 7})
    assert (unknown["error_code"], unknown["brokers"]) == (UNSUPPORTED_ENDPOINT_TYPE, [])


# ---- ElectLeaders ---------------------------------------------------------------------------


def elect(broker, partitions: dict[str, list[int]] | None, election: int = PREFERRED, version: int = 2):
    data = {
        "topic_partitions": None
        if partitions is None
        else [{"topic": t, "partitions": ps} for t, ps in partitions.items()],
        "timeout": 10_000,
    }
    if version >= 1:
        data["election_type"] = election
    return call(elect_leaders, broker, version, data)


def election_codes(resp: dict) -> dict[tuple[str, int], int]:
    return {
        (t["topic"], p["partition_id"]): p["error_code"]
        for t in resp["replica_election_results"]
        for p in t["partition_result"]
    }


async def test_elect_leaders_not_needed_on_a_single_node(broker):
    resp = await elect(broker, {"t": [0, 1]})
    assert resp["error_code"] == 0
    [topic] = resp["replica_election_results"]
    assert topic["topic"] == "t"
    assert [(p["partition_id"], p["error_code"]) for p in topic["partition_result"]] == [
        (0, ELECTION_NOT_NEEDED),
        (1, ELECTION_NOT_NEEDED),
    ]
    assert all(p["error_message"] for p in topic["partition_result"])
    unclean = await elect(broker, {"t": [1]}, UNCLEAN)
    assert election_codes(unclean) == {("t", 1): ELECTION_NOT_NEEDED}
    v0 = await elect(broker, {"t": [0]}, version=0)
    assert election_codes(v0) == {("t", 0): ELECTION_NOT_NEEDED} and "error_code" not in v0


async def test_elect_leaders_refusals(broker):
    resp = await elect(broker, {"t": [0, 2], "nope": [0]})
    assert election_codes(resp) == {
        ("t", 0): ELECTION_NOT_NEEDED,
        ("t", 2): UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION,
    }
    bad_type = await elect(broker, {"t": [0]}, election=5)
    assert bad_type["error_code"] == INVALID_REQUEST
    assert election_codes(bad_type) == {("t", 0): INVALID_REQUEST}


async def test_elect_leaders_for_every_partition_omits_those_already_led(broker):
    resp = await elect(broker, None)
    assert resp["error_code"] == 0
    assert election_codes(resp) == {}


# ---- AlterPartitionReassignments / ListPartitionReassignments --------------------------------


def reassign(broker, moves: dict[tuple[str, int], list[int] | None]):
    topics: dict[str, list] = {}
    for (t, p), replicas in moves.items():
        topics.setdefault(t, []).append({"partition_index": p, "replicas": replicas})
    return call(
        alter_partition_reassignments,
        broker,
        1,
        {
            "timeout": 10_000,
            "allow_replication_factor_change": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        },
    )


async def test_alter_partition_reassignments_to_the_only_broker(broker):
    resp = await reassign(broker, {("t", 0): [1], ("t", 1): [1]})
    assert (resp["error_code"], resp["error_message"]) == (0, None)
    assert resp["responses"] == [
        {
            "name": "t",
            "partitions": [
                {"partition_index": 0, "error_code": 0, "error_message": None},
                {"partition_index": 1, "error_code": 0, "error_message": None},
            ],
        }
    ]


async def test_alter_partition_reassignments_refusals(broker):
    resp = await reassign(broker, {("t", 0): [2], ("t", 1): None, ("t", 9): [1], ("nope", 0): [1]})
    codes = {(t["name"], p["partition_index"]): p["error_code"] for t in resp["responses"] for p in t["partitions"]}
    assert codes == {
        ("t", 0): INVALID_REPLICA_ASSIGNMENT,  # broker 2 does not exist
        ("t", 1): NO_REASSIGNMENT_IN_PROGRESS,  # cancelling: nothing moves
        ("t", 9): UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert all(p["error_message"] for t in resp["responses"] for p in t["partitions"])
    assert resp["error_code"] == 0


async def test_list_partition_reassignments_none_in_progress(broker):
    await reassign(broker, {("t", 0): [1]})  # done at once: nothing is left in progress
    for topics in (None, [{"name": "t", "partition_indexes": [0, 1]}], [{"name": "nope", "partition_indexes": [0]}]):
        resp = await call(list_partition_reassignments, broker, 0, {"timeout": 10_000, "topics": topics})
        assert (resp["error_code"], resp["error_message"], resp["topics"]) == (0, None, []), topics


# ---- AlterReplicaLogDirs / DescribeLogDirs --------------------------------------------------


def log_dir(broker) -> str:
    return str(Path(broker.config.log_dirs[0]).resolve())


async def test_alter_replica_log_dirs(broker):
    here, elsewhere = log_dir(broker), str(Path(log_dir(broker)).parent / "other")
    resp = await call(
        alter_replica_log_dirs,
        broker,
        2,
        {
            "dirs": [
                {"path": here, "topics": [{"name": "t", "partitions": [0, 1]}]},
                {"path": elsewhere, "topics": [{"name": "__consumer_offsets", "partitions": [0]}]},
                {"path": here, "topics": [{"name": "nope", "partitions": [0]}]},
            ]
        },
    )
    assert resp["results"] == [
        {
            "topic_name": "t",
            "partitions": [
                {"partition_index": 0, "error_code": 0},  # already there
                {"partition_index": 1, "error_code": 0},
            ],
        },
        {"topic_name": "__consumer_offsets", "partitions": [{"partition_index": 0, "error_code": LOG_DIR_NOT_FOUND}]},
        {"topic_name": "nope", "partitions": [{"partition_index": 0, "error_code": UNKNOWN_TOPIC_OR_PARTITION}]},
    ]


async def test_describe_log_dirs_every_partition(broker):
    await produce_records(broker, 4, partition=0)
    resp = await call(describe_log_dirs, broker, 4, {"topics": None})
    assert resp["error_code"] == 0
    [result] = resp["results"]
    assert (result["error_code"], result["log_dir"]) == (0, log_dir(broker))
    assert 0 < result["usable_bytes"] <= result["total_bytes"]
    sizes = {
        (t["name"], p["partition_index"]): (p["partition_size"], p["offset_lag"], p["is_future_key"])
        for t in result["topics"]
        for p in t["partitions"]
    }
    t0 = broker.partitions.get("t", 0).size
    assert t0 > 0
    assert sizes == {
        ("__consumer_offsets", 0): (0, 0, False),
        ("__transaction_state", 0): (0, 0, False),
        ("t", 0): (t0, 0, False),
        ("t", 1): (0, 0, False),
    }


async def test_describe_log_dirs_named_partitions_leave_out_unknown_ones(broker):
    resp = await call(
        describe_log_dirs,
        broker,
        1,
        {"topics": [{"topic": "t", "partitions": [1, 7]}, {"topic": "nope", "partitions": [0]}]},
    )
    [result] = resp["results"]
    assert result["topics"] == [
        {
            "name": "t",
            "partitions": [{"partition_index": 1, "partition_size": 0, "offset_lag": 0, "is_future_key": False}],
        }
    ]
    assert "error_code" not in resp and "total_bytes" not in result  # v3 and v4 fields


# ---- OffsetForLeaderEpoch -------------------------------------------------------------------


def epoch_ends(broker, asks: list[tuple[int, int, int]], topic: str = "t"):
    return call(
        offset_for_leader_epoch,
        broker,
        4,
        {
            "replica_id": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": p, "current_leader_epoch": current, "leader_epoch": epoch}
                        for p, current, epoch in asks
                    ],
                }
            ],
        },
    )


async def test_offset_for_leader_epoch(broker):
    await produce_records(broker, 5, partition=0)
    resp = await epoch_ends(broker, [(0, 0, 0), (0, -1, -1), (1, -1, 0)])
    assert resp["topics"] == [
        {
            "topic": "t",
            "partitions": [
                {"error_code": 0, "partition": 0, "leader_epoch": 0, "end_offset": 5},  # the current epoch: the log end
                {"error_code": 0, "partition": 0, "leader_epoch": -1, "end_offset": -1},  # UNDEFINED_EPOCH asked
                {"error_code": 0, "partition": 1, "leader_epoch": 0, "end_offset": 0},  # empty partition
            ],
        }
    ]


async def test_offset_for_leader_epoch_unknown_partitions(broker):
    resp = await epoch_ends(broker, [(2, -1, 0)])
    unknown = await epoch_ends(broker, [(0, -1, 0)], topic="nope")
    for r, p in ((resp, 2), (unknown, 0)):
        assert r["topics"][0]["partitions"] == [
            {"error_code": UNKNOWN_TOPIC_OR_PARTITION, "partition": p, "leader_epoch": -1, "end_offset": -1}
        ]


# ---- DeleteRecords --------------------------------------------------------------------------


def delete(broker, offsets: dict[tuple[str, int], int]):
    topics: dict[str, list] = {}
    for (t, p), offset in offsets.items():
        topics.setdefault(t, []).append({"partition_index": p, "offset": offset})
    return call(
        delete_records,
        broker,
        2,
        {"timeout": 10_000, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]},
    )


def low_watermarks(resp: dict) -> dict:
    return {
        (t["name"], p["partition_index"]): (p["error_code"], p["low_watermark"])
        for t in resp["topics"]
        for p in t["partitions"]
    }


async def test_delete_records_moves_the_log_start(broker):
    await produce_records(broker, 5, partition=0)
    await produce_records(broker, 2, partition=1)
    resp = await delete(broker, {("t", 0): 3, ("t", 1): -1})  # -1: up to the high watermark
    assert resp["topics"] == [
        {
            "name": "t",
            "partitions": [
                {"partition_index": 0, "low_watermark": 3, "error_code": 0},
                {"partition_index": 1, "low_watermark": 2, "error_code": 0},
            ],
        }
    ]
    assert broker.partitions.get("t", 0).log_start_offset == 3
    assert broker.partitions.get("t", 1).log_start_offset == 2


async def test_delete_records_refusals(broker):
    await produce_records(broker, 5, partition=0)
    resp = await delete(broker, {("t", 0): 6, ("t", 9): 0, ("nope", 0): 0})
    assert low_watermarks(resp) == {
        ("t", 0): (OFFSET_OUT_OF_RANGE, -1),  # past the high watermark
        ("t", 9): (UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("nope", 0): (UNKNOWN_TOPIC_OR_PARTITION, -1),
    }
    assert low_watermarks(await delete(broker, {("t", 0): -2})) == {("t", 0): (OFFSET_OUT_OF_RANGE, -1)}
    assert broker.partitions.get("t", 0).log_start_offset == 0


async def test_delete_records_below_the_log_start_is_a_no_op(broker):
    await produce_records(broker, 5, partition=0)
    await delete(broker, {("t", 0): 3})
    assert low_watermarks(await delete(broker, {("t", 0): 1})) == {("t", 0): (0, 3)}


async def test_delete_records_refused_on_a_compacted_topic(broker):
    broker.admin.create("compacted", 1, {"cleanup.policy": "compact"})
    await produce_records(broker, 3, topic="compacted")
    assert low_watermarks(await delete(broker, {("compacted", 0): 2})) == {("compacted", 0): (POLICY_VIOLATION, -1)}
    assert broker.partitions.get("compacted", 0).log_start_offset == 0


# ---- ApiVersions ----------------------------------------------------------------------------


async def test_api_versions_advertises_exactly_the_routed_apis(broker):
    resp = await call(
        api_versions, broker, 3, {"client_software_name": "tidelog-tests", "client_software_version": "1.0"}
    )
    assert resp["error_code"] == 0 and resp["throttle_time"].total_seconds() == 0
    advertised = {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]}
    declared = {r.api_key: (r.min_version, r.max_version) for r in (m.ROUTE for m in handlers.modules())}
    assert advertised == declared
    assert len(resp["api_keys"]) == len(advertised)  # each key once
    # a few that clients depend on, as Kafka numbers them
    assert advertised[18] == (0, 4)  # ApiVersions
    assert advertised[3] == (0, 13)  # Metadata
    assert advertised[10] == (0, 6)  # FindCoordinator (v4: batched keys, v6: share keys)
    assert 67 not in advertised  # AllocateProducerIds is broker-to-controller only
    v0 = await call(api_versions, broker, 0, {})
    assert {k["api_key"]: (k["min_version"], k["max_version"]) for k in v0["api_keys"]} == advertised


async def test_api_versions_refuses_an_invalid_client_software_name(broker):
    resp = await call(api_versions, broker, 3, {"client_software_name": "bad name!", "client_software_version": "1.0"})
    assert resp["error_code"] == INVALID_REQUEST
