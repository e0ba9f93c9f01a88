"""Handlers called directly: `handle(broker, ctx, request)` on a real Broker (its composition root,
a real log on a temporary directory; no listeners, no sockets), with typed requests and the
answers checked field by field. The real-client tests in tests/interop cover the same APIs over
TCP; these pin each handler's own logic."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from tidelog.core.config import load_config
from tidelog.log.records import Record, build_batch
from tidelog.server.broker import Broker
from tidelog.server.connection import RequestContext
from tidelog.server.handlers import (
    add_partitions_to_txn,
    bound,
    end_txn,
    fetch,
    heartbeat,
    init_producer_id,
    join_group,
    list_offsets,
    produce,
    sync_group,
)
from tidelog.server.router import NO_RESPONSE
from tidelog.wire import control
from tidelog.wire import fetch as fetch_codec
from tidelog.wire import list_offsets as lo_codec
from tidelog.wire import produce as produce_codec
from tidelog.wire.header import RequestHeader
from tidelog.wire.schemas import request_schema

T0 = 1_767_225_600_000


@contextlib.asynccontextmanager
async def started_broker(tmp_path, *settings: str):
    """A Broker from its composition root on `tmp_path`, its services started, topic "t" (2
    partitions) created unless it is there already; stopped on exit. No listener is opened."""
    b = Broker(
        load_config(
            None,
            [
                f"log.dirs={tmp_path / 'data'}",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "offsets.topic.num.partitions=1",
                "transaction.state.log.num.partitions=1",
                *settings,
            ],
        )
    )
    b.partitions.start()
    if b.share_state is not None:
        b.share_state.start()
    b.groups.start()
    b.txn.start()
    if b.registry.get("t") is None:  # a restart on the same directory keeps the topic (and its id)
        b.admin.create("t", 2, {})
    try:
        yield b
    finally:
        b.txn.stop()
        b.groups.stop()
        if b.shares is not None:
            b.shares.stop()
        b.partitions.stop()


@pytest.fixture
async def broker(tmp_path):
    async with started_broker(tmp_path, "group.initial.rebalance.delay.ms=0") as b:
        yield b


def ctx(broker, api_key: int, version: int) -> RequestContext:
    header = RequestHeader(api_key, version, 1, "unit")
    connection = SimpleNamespace(listener_name="PLAINTEXT", peer=("127.0.0.1", 1), security=None)
    return RequestContext(header, connection, broker)


def control_request(api_key: int, version: int, data: dict):
    return control.build(request_schema(api_key, version), data)


def produce_request(records: bytes, partition: int = 0, acks: int = -1, topic: str = "t", txn_id=None):
    return produce_codec.ProduceRequest(
        acks,
        10_000,
        [
            produce_codec.ProduceRequestTopic(
                topic, [produce_codec.ProduceRequestPartition(partition, bytearray(records))]
            )
        ],
        transactional_id=txn_id,
    )


def batch(n: int, start_ts: int = T0, **kw) -> bytes:
    return build_batch([Record(b"k%d" % i, b"v%d" % i, start_ts + i) for i in range(n)], **kw)


async def answer(result):
    return await result if hasattr(result, "__await__") else result


async def test_produce_assigns_offsets_and_reports_errors(broker):
    first = await answer(bound(produce, broker)(ctx(broker, 0, 9), produce_request(batch(3))))
    second = await answer(bound(produce, broker)(ctx(broker, 0, 9), produce_request(batch(2))))
    assert [p.base_offset for p in first.responses[0].partition_responses] == [0]
    assert [p.base_offset for p in second.responses[0].partition_responses] == [3]
    assert broker.partitions.get("t", 0).log_end_offset == 5
    unknown = await answer(bound(produce, broker)(ctx(broker, 0, 9), produce_request(batch(1), topic="nope")))
    assert unknown.responses[0].partition_responses[0].error_code == 3
    bad_acks = await answer(bound(produce, broker)(ctx(broker, 0, 9), produce_request(batch(1), acks=2)))
    assert bad_acks.responses[0].partition_responses[0].error_code == 21  # INVALID_REQUIRED_ACKS
    assert bound(produce, broker)(ctx(broker, 0, 9), produce_request(batch(1), acks=0)) is NO_RESPONSE
    assert broker.partitions.get("t", 0).log_end_offset == 6  # acks=0 still appends


def test_acks_0_produce_refused_closes_the_connection(broker):
    """As Kafka: the client of an acks=0 produce waits for no answer, so a refused partition
    (here an unknown topic; in a cluster, a broker that does not lead it) closes the connection:
    the client reconnects and refreshes its metadata instead of writing into the void."""
    closed: list[str] = []

    def request_ctx():
        c = ctx(broker, 0, 9)
        c.connection.close_with = closed.append
        return c

    assert bound(produce, broker)(request_ctx(), produce_request(batch(1), acks=0)) is NO_RESPONSE
    assert closed == []
    assert bound(produce, broker)(request_ctx(), produce_request(batch(1), acks=0, topic="nope")) is NO_RESPONSE
    assert len(closed) == 1 and "nope-0: error 3" in closed[0], closed


async def test_fetch_returns_whole_batches_and_out_of_range_offsets(broker):
    await answer(bound(produce, broker)(ctx(broker, 0, 9), produce_request(batch(4))))

    def request(offset: int, version: int = 11):
        return fetch_codec.FetchRequest(
            0,
            1,
            [fetch_codec.FetchRequestTopic("t", [fetch_codec.FetchRequestPartition(0, offset, 1 << 20)])],
            max_bytes=1 << 20,
        )

    got = await answer(bound(fetch, broker)(ctx(broker, 1, 11), request(1)))
    part = got.responses[0].partitions[0]
    assert part.error_code == 0 and part.high_watermark == 4 and part.last_stable_offset == 4
    assert part.records, "the batch holding offset 1 is returned whole"
    out = await answer(bound(fetch, broker)(ctx(broker, 1, 11), request(99)))
    part = out.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark, part.log_start_offset) == (1, -1, -1)  # as Kafka


async def test_list_offsets_sentinels_and_time_lookup(broker):
    await answer(bound(produce, broker)(ctx(broker, 0, 9), produce_request(batch(5))))

    def ask(ts: int):
        req = lo_codec.ListOffsetsRequest(
            -1, [lo_codec.ListOffsetsRequestTopic("t", [lo_codec.ListOffsetsRequestPartition(0, ts)])]
        )
        resp = bound(list_offsets, broker)(ctx(broker, 2, 7), req)
        p = resp.topics[0].partitions[0]
        return p.error_code, p.offset, p.timestamp

    assert ask(-2) == (0, 0, -1)  # earliest
    assert ask(-1) == (0, 5, -1)  # latest
    assert ask(T0 + 2) == (0, 2, T0 + 2)  # first record at or after the time
    assert ask(-3) == (0, 4, T0 + 4)  # v7+: the record with the largest timestamp
    assert ask(T0 + 99) == (0, -1, -1)  # nothing that late


async def test_group_join_sync_heartbeat(broker):
    sub = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"

    def join_request(member_id: str):
        return control_request(
            11,
            5,
            {
                "group_id": "g",
                "session_timeout": 10_000,
                "rebalance_timeout": 10_000,
                "member_id": member_id,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": sub}],
            },
        )

    first = await bound(join_group, broker)(ctx(broker, 11, 5), join_request(""))
    assert first["error_code"] == 79 and first["member_id"]  # MEMBER_ID_REQUIRED (KIP-394): join again with it
    join = await bound(join_group, broker)(ctx(broker, 11, 5), join_request(first["member_id"]))
    assert join["error_code"] == 0 and join["generation_id"] == 1 and join["protocol_name"] == "range"
    member = join["member_id"]
    sync = await bound(sync_group, broker)(
        ctx(broker, 14, 4),
        control_request(
            14,
            4,
            {
                "group_id": "g",
                "generation_id": 1,
                "member_id": member,
                "group_instance_id": None,
                "assignments": [{"member_id": member, "assignment": b"A"}],
            },
        ),
    )
    assert sync["error_code"] == 0 and bytes(sync["assignment"]) == b"A"
    beat = bound(heartbeat, broker)(
        ctx(broker, 12, 4),
        control_request(12, 4, {"group_id": "g", "generation_id": 1, "member_id": member, "group_instance_id": None}),
    )
    assert (await answer(beat))["error_code"] == 0
    stale = bound(heartbeat, broker)(
        ctx(broker, 12, 4),
        control_request(12, 4, {"group_id": "g", "generation_id": 7, "member_id": member, "group_instance_id": None}),
    )
    assert (await answer(stale))["error_code"] == 22  # ILLEGAL_GENERATION


async def test_transaction_moves_the_lso_and_commits(broker):
    init = await bound(init_producer_id, broker)(
        ctx(broker, 22, 4),
        control_request(
            22, 4, {"transactional_id": "tx", "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1}
        ),
    )
    assert init["error_code"] == 0
    pid, epoch = init["producer_id"], init["producer_epoch"]
    added = await bound(add_partitions_to_txn, broker)(
        ctx(broker, 24, 3),
        control_request(
            24,
            3,
            {
                "v3_and_below_transactional_id": "tx",
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": "t", "partitions": [0]}],
            },
        ),
    )
    assert added["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
    records = batch(3, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    resp = await answer(bound(produce, broker)(ctx(broker, 0, 9), produce_request(records, txn_id="tx")))
    assert resp.responses[0].partition_responses[0].error_code == 0
    plog = broker.partitions.get("t", 0)
    assert plog.last_stable_offset == 0 and plog.high_watermark == 3  # open: read_committed sees nothing
    done = await bound(end_txn, broker)(
        ctx(broker, 26, 3),
        control_request(
            26, 3, {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch, "committed": True}
        ),
    )
    assert done["error_code"] == 0
    assert plog.last_stable_offset == plog.log_end_offset == 4  # 3 records + the COMMIT marker


async def test_no_log_is_opened_again_once_the_partitions_stopped(tmp_path):
    """A long poll woken by the shutdown looks its partition up after the logs closed: it must
    find none, not a fresh unreplicated copy that answers a follower with its log end as the high
    watermark (simulation seed 1801 of issue 26: a follower's high watermark went back)."""
    b = Broker(load_config(None, [f"log.dirs={tmp_path / 'data'}", "listeners=PLAINTEXT://127.0.0.1:0"]))
    b.partitions.start()
    b.admin.create("t", 1, {})
    assert b.partitions.get("t", 0) is not None
    b.partitions.stop()
    assert b.partitions.get("t", 0) is None and b.partitions.manager.get("t", 0) is None
