"""Transaction markers on a partition (WriteTxnMarkers, through its handler on a real single-node
broker): a marker is always written, so that a retried marker is waited on like the first and a
newer coordinator's epoch is recorded even where the transaction left nothing open (issue 26,
defects 3 and 4)."""

from __future__ import annotations

import pytest
from server.test_handlers_unit import (  # the request helpers of the handler unit tests
    add_partitions_to_txn,
    answer,
    batch,
    control_request,
    ctx,
    init_producer_id,
    produce,
    produce_request,
    started_broker,
)

from tidelog.log.records import CONTROL_FLAG_MASK, H_ATTRIBUTES, decode_batches
from tidelog.server.handlers import bound, write_txn_markers


@pytest.fixture
async def broker(tmp_path):
    async with started_broker(tmp_path) as b:
        yield b


TRANSACTION_COORDINATOR_FENCED = 52


async def begin(broker, txn_id: str, partitions: list[int]) -> tuple[int, int]:
    init = await bound(init_producer_id, broker)(
        ctx(broker, 22, 4),
        control_request(
            22, 4, {"transactional_id": txn_id, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1}
        ),
    )
    pid, epoch = init["producer_id"], init["producer_epoch"]
    await add_to(broker, txn_id, pid, epoch, partitions)
    return pid, epoch


async def add_to(broker, txn_id: str, pid: int, epoch: int, partitions: list[int]) -> None:
    added = await bound(add_partitions_to_txn, broker)(
        ctx(broker, 24, 3),
        control_request(
            24,
            3,
            {
                "v3_and_below_transactional_id": txn_id,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": "t", "partitions": partitions}],
            },
        ),
    )
    assert all(
        p["partition_error_code"] == 0 for p in added["results_by_topic_v3_and_below"][0]["results_by_partition"]
    )


async def send(broker, txn_id: str, pid: int, epoch: int, partition: int, seq: int) -> None:
    records = batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)
    resp = await answer(bound(produce, broker)(ctx(broker, 0, 9), produce_request(records, partition, txn_id=txn_id)))
    assert resp.responses[0].partition_responses[0].error_code == 0


async def markers(
    broker, pid: int, epoch: int, commit: bool, partitions: list[int], coordinator_epoch: int
) -> list[int]:
    out = await bound(write_txn_markers, broker)(
        ctx(broker, 27, 1),
        control_request(
            27,
            1,
            {
                "markers": [
                    {
                        "producer_id": pid,
                        "producer_epoch": epoch,
                        "transaction_result": commit,
                        "coordinator_epoch": coordinator_epoch,
                        "topics": [{"name": "t", "partition_indexes": partitions}],
                    }
                ]
            },
        ),
    )
    return [p["error_code"] for p in out["markers"][0]["topics"][0]["partitions"]]


def control_batches(broker, partition: int) -> int:
    plog = broker.partitions.get("t", partition)
    data = b"".join(seg.log.pread(0, seg.log.size) for seg in plog.segments)
    return sum(1 for b in decode_batches(data) if b.header[H_ATTRIBUTES] & CONTROL_FLAG_MASK)


async def test_a_retried_marker_is_written_again(broker):
    """The first attempt's marker may not be replicated (its wait timed out, its answer was lost):
    the retry must append a marker of its own, whose replication it then waits for, rather than
    answer at once because the transaction is closed here already (defect 3)."""
    pid, epoch = await begin(broker, "tx3", [0])
    await send(broker, "tx3", pid, epoch, 0, 0)
    assert await markers(broker, pid, epoch, True, [0], 1) == [0]
    assert control_batches(broker, 0) == 1
    assert await markers(broker, pid, epoch, True, [0], 1) == [0]
    assert control_batches(broker, 0) == 2


async def test_a_deposed_coordinators_late_marker_is_fenced_where_nothing_was_open(broker):
    """A new coordinator (epoch 5) ends a transaction: its marker reaches a partition where the
    producer has nothing open. The producer then opens a transaction there. The deposed
    coordinator's late ABORT (epoch 4) must be refused, not abort that next transaction (defect 4)."""
    pid, epoch = await begin(broker, "tx4", [0])
    await send(broker, "tx4", pid, epoch, 0, 0)
    assert await markers(broker, pid, epoch, False, [0, 1], 5) == [0, 0]
    await add_to(broker, "tx4", pid, epoch, [1])
    await send(broker, "tx4", pid, epoch, 1, 2)
    plog = broker.partitions.get("t", 1)
    open_at = plog.last_stable_offset
    assert await markers(broker, pid, epoch, False, [1], 4) == [TRANSACTION_COORDINATOR_FENCED]
    assert plog.last_stable_offset == open_at  # the transaction on partition 1 is still open
