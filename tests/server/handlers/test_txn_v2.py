"""Transaction version 2 (KIP-890 part 2) through the handlers, as a Kafka 4.3.1 producer runs
it: ApiVersions v4 finalizes transaction.version 2; InitProducerId v5; Produce v12 with no
AddPartitionsToTxn (the broker adds each partition); TxnOffsetCommit v5 with no AddOffsetsToTxn;
EndTxn v5, which bumps the epoch and answers it; late requests of the ended epoch fenced.
Produce v13 names topics by id."""

from __future__ import annotations

import uuid

from server.test_handlers_unit import answer, ctx, produce, produce_request

from tidelog.server.handlers import (
    api_versions,
    bound,
    describe_transactions,
    end_txn,
    init_producer_id,
    txn_offset_commit,
)

from .kit import (
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    PRODUCER_FENCED,
    UNKNOWN_TOPIC_ID,
    batch,
    call,
    started_broker,
)
from .test_txn import fetched

TRANSACTION_ABORTABLE = 120


async def init(broker, version: int = 5) -> tuple[int, int]:
    resp = await call(
        init_producer_id,
        broker,
        version,
        {"transactional_id": "tx", "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
    )
    assert resp["error_code"] == 0
    return resp["producer_id"], resp["producer_epoch"]


async def send(broker, pid: int, epoch: int, seq: int, partition: int = 0, version: int = 12, topic: str = "t"):
    """A transactional batch of one record by Produce `version`: its partition's answer."""
    req = produce_request(
        batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True),
        partition,
        topic=topic,
        txn_id="tx",
    )
    resp = await answer(bound(produce, broker)(ctx(broker, 0, version), req))
    return resp.responses[0].partition_responses[0]


async def end(broker, pid: int, epoch: int, commit: bool, version: int = 5) -> dict:
    return await call(
        end_txn,
        broker,
        version,
        {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch, "committed": commit},
    )


def commit_offsets(broker, pid: int, epoch: int, offset: int, version: int = 5):
    return call(
        txn_offset_commit,
        broker,
        version,
        {
            "transactional_id": "tx",
            "group_id": "g",
            "producer_id": pid,
            "producer_epoch": epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "m",
                        }
                    ],
                }
            ],
        },
    )


async def state(broker) -> dict:
    [s] = (await call(describe_transactions, broker, 0, {"transactional_ids": ["tx"]}))["transaction_states"]
    return s


async def test_api_versions_finalizes_transaction_version_2(broker):
    v4 = await call(api_versions, broker, 4, {"client_software_name": "t", "client_software_version": "1"})
    assert v4["supported_features"] == [{"name": "transaction.version", "min_version": 0, "max_version": 2}]
    assert v4["finalized_features"] == [{"name": "transaction.version", "min_version_level": 2, "max_version_level": 2}]
    assert v4["finalized_features_epoch"] > 0
    advertised = {k["api_key"]: (k["min_version"], k["max_version"]) for k in v4["api_keys"]}
    assert {k: advertised[k] for k in (0, 18, 22, 24, 25, 26, 28)} == {
        0: (0, 13),
        18: (0, 4),
        22: (0, 5),
        24: (0, 5),
        25: (0, 4),
        26: (0, 5),
        28: (0, 5),
    }
    # below v4, as Kafka (KAFKA-17492): no supported feature whose lowest level is 0
    v3 = await call(api_versions, broker, 3, {"client_software_name": "t", "client_software_version": "1"})
    assert v3["supported_features"] == [] and v3["finalized_features"] == v4["finalized_features"]


async def test_transaction_version_1_is_kept_by_configuration(tmp_path):
    async with started_broker(tmp_path, "transaction.version=1") as broker:
        resp = await call(api_versions, broker, 4, {"client_software_name": "t", "client_software_version": "1"})
        assert resp["finalized_features"] == [
            {"name": "transaction.version", "min_version_level": 1, "max_version_level": 1}
        ]
        # the records are still Kafka's flexible value version (1 from level 1 up)
        assert broker.txn.coordinator.transaction_version == 1


async def test_a_tv2_transaction_from_produce_to_end(broker):
    pid, e = await init(broker)
    # no AddPartitionsToTxn: Produce v12 adds the partition to the transaction
    first = await send(broker, pid, e, 0)
    assert first.error_code == 0
    assert (await state(broker))["topics"] == [{"topic": "t", "partitions": [0]}]
    assert (await send(broker, pid, e, 1)).error_code == 0  # open here now: no second add
    # no AddOffsetsToTxn: TxnOffsetCommit v5 adds the group's partition
    resp = await commit_offsets(broker, pid, e, 7)
    assert resp["topics"][0]["partitions"][0]["error_code"] == 0
    s = await state(broker)
    assert s["transaction_state"] == "Ongoing"
    assert sorted((t["topic"], t["partitions"]) for t in s["topics"]) == [("__consumer_offsets", [0]), ("t", [0])]
    # EndTxn v5: committed, the epoch bumped and answered
    resp = await end(broker, pid, e, True)
    assert (resp["error_code"], resp["producer_id"], resp["producer_epoch"]) == (0, pid, e + 1)
    s = await state(broker)
    assert (s["transaction_state"], s["producer_epoch"]) == ("CompleteCommit", e + 1)
    assert await fetched(broker, stable=True) == {"offset": 7, "metadata": "m", "error_code": 0}
    # the marker carried the bumped epoch: the partition knows the new one
    assert broker.producers.states[("t", 0)].producers[pid].epoch == e + 1
    # late requests of the ended epoch are fenced
    late = await send(broker, pid, e, 2)
    assert late.error_code == INVALID_PRODUCER_EPOCH
    late_other = await send(broker, pid, e, 0, partition=1)  # a partition it never wrote to
    assert late_other.error_code == INVALID_PRODUCER_EPOCH
    # as Kafka: the coordinator's PRODUCER_FENCED comes back as the partition writer's error
    late_offsets = await commit_offsets(broker, pid, e, 9)
    assert late_offsets["topics"][0]["partitions"][0]["error_code"] == INVALID_PRODUCER_EPOCH
    # a retried EndTxn is answered with the epoch it gave
    resp = await end(broker, pid, e, True)
    assert (resp["error_code"], resp["producer_id"], resp["producer_epoch"]) == (0, pid, e + 1)
    # the next transaction, at the new epoch, sequences from 0
    assert (await send(broker, pid, e + 1, 0)).error_code == 0
    resp = await end(broker, pid, e + 1, False)
    assert (resp["error_code"], resp["producer_epoch"]) == (0, e + 2)
    assert await fetched(broker, stable=True) == {"offset": 7, "metadata": "m", "error_code": 0}


async def test_end_txn_v5_refusals_and_v4_keeps_the_epoch(broker):
    pid, e = await init(broker)
    resp = await end(broker, pid, e, True)
    assert (resp["error_code"], resp["producer_id"], resp["producer_epoch"]) == (INVALID_TXN_STATE, -1, -1)
    assert (await end(broker, pid + 1, e, False))["error_code"] == INVALID_PRODUCER_ID_MAPPING
    assert (await end(broker, pid, e + 1, False))["error_code"] == PRODUCER_FENCED
    # an abort with nothing added still bumps
    assert (await end(broker, pid, e, False))["producer_epoch"] == e + 1
    # v4 (transaction version 1): the client added its partition; no bump
    await send(broker, pid, e + 1, 0, version=12)
    resp = await end(broker, pid, e + 1, True, version=4)
    assert resp["error_code"] == 0
    assert (await state(broker))["producer_epoch"] == e + 1


async def test_produce_v11_does_not_add_and_txn_offset_commit_v4_is_abortable(broker):
    pid, e = await init(broker)
    # a transaction version 1 client must add its partitions: Produce v11 only verifies
    assert (await send(broker, pid, e, 0, version=11)).error_code == INVALID_TXN_STATE
    assert (await state(broker))["transaction_state"] == "Empty"
    resp = await commit_offsets(broker, pid, e, 3, version=4)
    assert resp["topics"][0]["partitions"][0]["error_code"] == TRANSACTION_ABORTABLE
    resp = await commit_offsets(broker, pid, e, 3, version=3)
    assert resp["topics"][0]["partitions"][0]["error_code"] == INVALID_TXN_STATE


async def test_produce_v13_names_topics_by_id(broker):
    topic_id = broker.registry.get("t").topic_id
    req = produce_request(batch(2), 1)
    req.topic_data[0].name, req.topic_data[0].topic_id = "", topic_id
    resp = await answer(bound(produce, broker)(ctx(broker, 0, 13), req))
    [t] = resp.responses
    assert t.topic_id == topic_id and t.partition_responses[0].error_code == 0
    assert broker.partitions.get("t", 1).log_end_offset == 2
    req = produce_request(batch(1), 0)
    req.topic_data[0].name, req.topic_data[0].topic_id = "", uuid.uuid4()
    resp = await answer(bound(produce, broker)(ctx(broker, 0, 13), req))
    assert resp.responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC_ID
    # a transactional batch by id joins the transaction under its topic's name
    pid, e = await init(broker)
    req = produce_request(
        batch(1, producer_id=pid, producer_epoch=e, base_sequence=0, transactional=True), 0, txn_id="tx"
    )
    req.topic_data[0].name, req.topic_data[0].topic_id = "", topic_id
    resp = await answer(bound(produce, broker)(ctx(broker, 0, 13), req))
    assert resp.responses[0].partition_responses[0].error_code == 0
    assert (await state(broker))["topics"] == [{"topic": "t", "partitions": [0]}]
