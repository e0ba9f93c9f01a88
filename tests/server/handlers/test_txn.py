"""Transaction handlers, called directly (no socket): AddOffsetsToTxn, TxnOffsetCommit,
WriteTxnMarkers (its `__consumer_offsets` path and its refusals; tests/txn/test_markers.py covers
markers on data partitions), DescribeTransactions, ListTransactions and DescribeProducers. A
transaction is driven through the InitProducerId, AddPartitionsToTxn, Produce and EndTxn handlers."""

from __future__ import annotations

import datetime

from tidelog.server.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    describe_producers,
    describe_transactions,
    end_txn,
    init_producer_id,
    list_transactions,
    offset_fetch,
    txn_offset_commit,
    write_txn_markers,
)

from .kit import (
    ILLEGAL_GENERATION,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    PRODUCER_FENCED,
    T0,
    TRANSACTIONAL_ID_NOT_FOUND,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSTABLE_OFFSET_COMMIT,
    call,
    join,
    produce_records,
)

OFFSETS = "__consumer_offsets"
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


async def init(broker, txn_id: str | None = "tx") -> tuple[int, int]:
    resp = await call(
        init_producer_id,
        broker,
        4,
        {"transactional_id": txn_id, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
    )
    assert resp["error_code"] == 0
    return resp["producer_id"], resp["producer_epoch"]


async def add_partitions(broker, pid: int, epoch: int, partitions: list[int], txn_id: str = "tx") -> None:
    resp = await call(
        add_partitions_to_txn,
        broker,
        3,
        {
            "v3_and_below_transactional_id": txn_id,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": "t", "partitions": partitions}],
        },
    )
    assert all(
        p["partition_error_code"] == 0 for t in resp["results_by_topic_v3_and_below"] for p in t["results_by_partition"]
    ), resp


def add_offsets(broker, pid: int, epoch: int, version: int = 3, txn_id: str = "tx", group: str = "g"):
    return call(
        add_offsets_to_txn,
        broker,
        version,
        {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "group_id": group},
    )


def stage_offsets(broker, pid: int, epoch: int, offsets: dict[int, int], version: int = 3, **member):
    data = {
        "transactional_id": "tx",
        "group_id": "g",
        "producer_id": pid,
        "producer_epoch": epoch,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": o,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "m",
                    }
                    for p, o in offsets.items()
                ],
            }
        ],
    }
    if version >= 3:
        data.update({"generation_id": -1, "member_id": "", "group_instance_id": None, **member})
    return call(txn_offset_commit, broker, version, data)


def codes(resp: dict) -> dict[int, int]:
    return {p["partition_index"]: p["error_code"] for t in resp["topics"] for p in t["partitions"]}


async def fetched(broker, stable: bool) -> dict:
    resp = await call(
        offset_fetch,
        broker,
        8,
        {"require_stable": stable, "groups": [{"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}]},
    )
    p = resp["groups"][0]["topics"][0]["partitions"][0]
    return {"offset": p["committed_offset"], "metadata": p["metadata"], "error_code": p["error_code"]}


async def end(broker, pid: int, epoch: int, commit: bool) -> None:
    resp = await call(
        end_txn, broker, 3, {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch, "committed": commit}
    )
    assert resp["error_code"] == 0


async def describe(broker, *txn_ids: str) -> list[dict]:
    return (await call(describe_transactions, broker, 0, {"transactional_ids": list(txn_ids)}))["transaction_states"]


# ---- AddOffsetsToTxn ------------------------------------------------------------------------


async def test_add_offsets_to_txn_adds_the_groups_offsets_partition(broker):
    pid, epoch = await init(broker)
    resp = await add_offsets(broker, pid, epoch)
    assert resp["error_code"] == 0 and resp["throttle_time"].total_seconds() == 0
    [state] = await describe(broker, "tx")
    assert (state["transaction_state"], state["topics"]) == ("Ongoing", [{"topic": OFFSETS, "partitions": [0]}])


async def test_add_offsets_to_txn_refusals(broker):
    pid, old = await init(broker)
    _, epoch = await init(broker)  # again: the epoch is bumped, the first producer is fenced
    assert epoch == old + 1
    assert (await add_offsets(broker, pid, old))["error_code"] == PRODUCER_FENCED
    assert (await add_offsets(broker, pid, old, version=1))["error_code"] == INVALID_PRODUCER_EPOCH  # before KIP-588
    assert (await add_offsets(broker, pid + 1, epoch))["error_code"] == INVALID_PRODUCER_ID_MAPPING
    assert (await add_offsets(broker, pid, epoch, txn_id="nope"))["error_code"] == INVALID_PRODUCER_ID_MAPPING
    [state] = await describe(broker, "tx")
    assert (state["transaction_state"], state["topics"]) == ("Empty", [])


# ---- TxnOffsetCommit ------------------------------------------------------------------------


async def test_txn_offset_commit_is_committed_by_the_transaction(broker):
    pid, epoch = await init(broker)
    await add_offsets(broker, pid, epoch)
    resp = await stage_offsets(broker, pid, epoch, {0: 7})
    assert resp["topics"] == [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 0}]}]
    # pending: a read_committed consumer (require_stable, KIP-447) is told to retry
    assert await fetched(broker, stable=True) == {"offset": -1, "metadata": "", "error_code": UNSTABLE_OFFSET_COMMIT}
    assert await fetched(broker, stable=False) == {"offset": -1, "metadata": "", "error_code": 0}
    await end(broker, pid, epoch, commit=True)
    assert await fetched(broker, stable=True) == {"offset": 7, "metadata": "m", "error_code": 0}


async def test_txn_offset_commit_dropped_by_an_abort(broker):
    pid, epoch = await init(broker)
    await add_offsets(broker, pid, epoch)
    assert codes(await stage_offsets(broker, pid, epoch, {0: 7}, version=2)) == {0: 0}
    await end(broker, pid, epoch, commit=False)
    assert await fetched(broker, stable=True) == {"offset": -1, "metadata": "", "error_code": 0}


async def test_txn_offset_commit_refusals(broker):
    pid, old = await init(broker)
    # the group's partition has not joined the transaction (no AddOffsetsToTxn)
    assert codes(await stage_offsets(broker, pid, old, {0: 1})) == {0: INVALID_TXN_STATE}
    _, epoch = await init(broker)
    await add_offsets(broker, pid, epoch)
    assert codes(await stage_offsets(broker, pid, old, {0: 1})) == {0: PRODUCER_FENCED}
    assert codes(await stage_offsets(broker, pid, old, {0: 1}, version=2)) == {0: INVALID_PRODUCER_EPOCH}
    # v3 (KIP-447): the consumer's generation and member id are checked by the group coordinator
    member, generation = await join(broker)
    assert codes(await stage_offsets(broker, pid, epoch, {0: 1}, generation_id=generation + 1, member_id=member)) == {
        0: ILLEGAL_GENERATION
    }
    assert codes(await stage_offsets(broker, pid, epoch, {0: 1}, generation_id=generation, member_id="stranger")) == {
        0: UNKNOWN_MEMBER_ID
    }
    assert codes(await stage_offsets(broker, pid, epoch, {0: 1}, generation_id=generation, member_id=member)) == {0: 0}
    await end(broker, pid, epoch, commit=True)
    assert await fetched(broker, stable=True) == {"offset": 1, "metadata": "m", "error_code": 0}  # the accepted one


# ---- WriteTxnMarkers ------------------------------------------------------------------------


def markers(broker, pid: int, epoch: int, commit: bool, topics: dict[str, list[int]]):
    return call(
        write_txn_markers,
        broker,
        1,
        {
            "markers": [
                {
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "transaction_result": commit,
                    "coordinator_epoch": 0,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                }
            ]
        },
    )


async def test_write_txn_markers_on_the_offsets_topic_completes_staged_offsets(broker):
    pid, epoch = await init(broker)
    await add_offsets(broker, pid, epoch)
    await stage_offsets(broker, pid, epoch, {0: 11})
    resp = await markers(broker, pid, epoch, True, {OFFSETS: [0]})
    assert resp == {
        "markers": [
            {"producer_id": pid, "topics": [{"name": OFFSETS, "partitions": [{"partition_index": 0, "error_code": 0}]}]}
        ]
    }
    assert await fetched(broker, stable=True) == {"offset": 11, "metadata": "m", "error_code": 0}


async def test_write_txn_markers_unknown_partitions(broker):
    pid, epoch = await init(broker)
    resp = await markers(broker, pid, epoch, True, {"t": [2, -1], "nope": [0]})
    assert resp["markers"][0]["topics"] == [
        {
            "name": "t",
            "partitions": [
                {"partition_index": 2, "error_code": UNKNOWN_TOPIC_OR_PARTITION},
                {"partition_index": -1, "error_code": UNKNOWN_TOPIC_OR_PARTITION},
            ],
        },
        {"name": "nope", "partitions": [{"partition_index": 0, "error_code": UNKNOWN_TOPIC_OR_PARTITION}]},
    ]
    assert broker.partitions.get("t", 0).log_end_offset == 0  # nothing written


# ---- DescribeTransactions -------------------------------------------------------------------


async def test_describe_transactions_through_a_transactions_life(broker):
    pid, epoch = await init(broker)
    [empty] = await describe(broker, "tx")
    # not started: tidelog sends 0 where Kafka sends -1 (both read as "no start time")
    assert empty == {
        "error_code": 0,
        "transactional_id": "tx",
        "transaction_state": "Empty",
        "transaction_timeout": datetime.timedelta(seconds=60),
        "transaction_start_time": EPOCH,
        "producer_id": pid,
        "producer_epoch": epoch,
        "topics": [],
    }
    await add_partitions(broker, pid, epoch, [1, 0])
    [ongoing] = await describe(broker, "tx")
    assert (ongoing["transaction_state"], ongoing["topics"]) == ("Ongoing", [{"topic": "t", "partitions": [0, 1]}])
    start_ms = broker.txn.coordinator.txns["tx"].start_ms
    assert start_ms > 0
    assert round((ongoing["transaction_start_time"] - EPOCH).total_seconds() * 1000) == start_ms
    await end(broker, pid, epoch, commit=True)
    [done] = await describe(broker, "tx")
    assert (done["transaction_state"], done["topics"], done["producer_epoch"]) == ("CompleteCommit", [], epoch)


async def test_describe_transactions_unknown_id(broker):
    [unknown] = await describe(broker, "nope")
    assert unknown == {
        "error_code": TRANSACTIONAL_ID_NOT_FOUND,
        "transactional_id": "nope",
        "transaction_state": "",
        "transaction_timeout": datetime.timedelta(0),
        "transaction_start_time": EPOCH,
        "producer_id": -1,
        "producer_epoch": -1,
        "topics": [],
    }


# ---- ListTransactions -----------------------------------------------------------------------


async def test_list_transactions_filters(broker):
    pid, epoch = await init(broker, "tx")
    other, _ = await init(broker, "idle")
    await add_partitions(broker, pid, epoch, [0])

    async def listed(states=(), pids=(), duration=-1) -> tuple[list, list]:
        resp = await call(
            list_transactions,
            broker,
            1,
            {"state_filters": list(states), "producer_id_filters": list(pids), "duration_filter": duration},
        )
        assert resp["error_code"] == 0
        return (
            sorted(
                (t["transactional_id"], t["producer_id"], t["transaction_state"]) for t in resp["transaction_states"]
            ),
            resp["unknown_state_filters"],
        )

    assert await listed() == ([("idle", other, "Empty"), ("tx", pid, "Ongoing")], [])
    assert await listed(states=["Ongoing"]) == ([("tx", pid, "Ongoing")], [])
    assert await listed(pids=[other]) == ([("idle", other, "Empty")], [])
    assert await listed(states=["Ongoing"], duration=3_600_000) == ([], [])  # not running for an hour yet
    # an unknown state is reported back, as Kafka, not refused
    assert await listed(states=["Ongoing", "Bogus"]) == ([("tx", pid, "Ongoing")], ["Bogus"])


# ---- DescribeProducers ----------------------------------------------------------------------


async def test_describe_producers_idempotent_and_transactional(broker):
    idem, idem_epoch = await init(broker, None)
    await produce_records(broker, 3, partition=1, producer_id=idem, producer_epoch=idem_epoch, base_sequence=0)
    pid, epoch = await init(broker)
    await add_partitions(broker, pid, epoch, [0])
    await produce_records(broker, 2, partition=0)  # offsets 0-1, no producer id
    await produce_records(
        broker, 3, partition=0, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True
    )  # offsets 2-4, open
    resp = await call(describe_producers, broker, 0, {"topics": [{"name": "t", "partition_indexes": [0, 1]}]})
    p0, p1 = resp["topics"][0]["partitions"]
    assert p1 == {
        "partition_index": 1,
        "error_code": 0,
        "error_message": None,
        "active_producers": [
            {
                "producer_id": idem,
                "producer_epoch": idem_epoch,
                "last_sequence": 2,
                "last_timestamp": T0 + 2,
                "coordinator_epoch": -1,
                "current_txn_start_offset": -1,
            }
        ],
    }
    assert p0["active_producers"] == [
        {
            "producer_id": pid,
            "producer_epoch": epoch,
            "last_sequence": 2,
            "last_timestamp": T0 + 2,
            "coordinator_epoch": -1,
            "current_txn_start_offset": 2,
        }
    ]
    await end(broker, pid, epoch, commit=True)
    resp = await call(describe_producers, broker, 0, {"topics": [{"name": "t", "partition_indexes": [0]}]})
    [after] = resp["topics"][0]["partitions"][0]["active_producers"]
    # the marker closed the transaction and recorded its coordinator's epoch
    assert (after["current_txn_start_offset"], after["coordinator_epoch"], after["last_sequence"]) == (-1, 0, 2)


async def test_describe_producers_unknown_partitions(broker):
    resp = await call(
        describe_producers,
        broker,
        0,
        {"topics": [{"name": "t", "partition_indexes": [5]}, {"name": "nope", "partition_indexes": [0]}]},
    )
    assert resp["topics"] == [
        {
            "name": "t",
            "partitions": [
                {
                    "partition_index": 5,
                    "error_code": UNKNOWN_TOPIC_OR_PARTITION,
                    "error_message": None,
                    "active_producers": [],
                }
            ],
        },
        {
            "name": "nope",
            "partitions": [
                {
                    "partition_index": 0,
                    "error_code": UNKNOWN_TOPIC_OR_PARTITION,
                    "error_message": None,
                    "active_producers": [],
                }
            ],
        },
    ]
