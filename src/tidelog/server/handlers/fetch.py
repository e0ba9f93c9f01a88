"""Fetch (key 1, v0-18): whole batches from partition logs, with long polling.

The response carries each partition's file bytes as they are on disk (no record is decoded),
v4+ as a `FileSlice` the connection sends with os.sendfile;
v0-3 get magic 0/1 message sets converted from v2. KIP-74: at least one whole batch is returned
for the first partition with data even past `max_bytes`. When less than `min_bytes` is available
the request parks until an append to one of its partitions, or `max_wait_ms`, or shutdown.
Fetch sessions (KIP-227) are declined: every response has session_id 0, so clients send full
fetch requests (the measured choice for a single node; see bench/README.md).
v17's replica directory id (KIP-853) and v18's follower high watermark (KIP-1166) are decoded and
not used, as Kafka's brokers use neither (only its KRaft controllers' quorum fetches do): a
follower's fetch is answered from its fetch offset and the leader's own high watermark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...log.errors import OffsetOutOfRangeError
from ...log.legacy import downconvert
from ...wire import fetch as codec
from ...wire import leader_hint
from ..leader_hints import LeaderHints
from ..router_hot import hot_route
from ._answer import Answer

if TYPE_CHECKING:
    import asyncio

    from ...cluster.view import ClusterView
    from ...core.partitions import Partitions
    from ...core.topics import TopicRegistry
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    partitions: Partitions
    cluster: ClusterView
    registry: TopicRegistry
    stopping: asyncio.Event


READ_COMMITTED = 1


def read_all(
    deps: Deps, req: codec.FetchRequest, version: int, listener: str = ""
) -> tuple[codec.FetchResponse, int, bool, list[tuple[str, int]]]:
    partitions = deps.partitions
    registry = deps.registry
    remaining = req.max_bytes if version >= 3 else 0x7FFF_FFFF
    total = 0
    errors = False
    keys: list[tuple[str, int]] = []
    topics: list[codec.FetchResponseTopic] = []
    committed = version >= 4 and req.isolation_level == READ_COMMITTED
    cluster = deps.cluster
    hints: LeaderHints | None = None  # made for the first partition refused as not led here

    def current_leader(name: str, partition: int) -> bytes | None:
        nonlocal hints
        if version < 12:
            return None
        hints = hints or LeaderHints(cluster, listener)
        return hints.current_leader(name, partition)

    for t in req.topics:
        name: str | None = t.topic
        if version >= 13:
            topic = registry.by_id.get(t.topic_id) if t.topic_id is not None else None
            name = topic.name if topic is not None else None
        parts = []
        for p in t.partitions:
            plog = partitions.get(name, p.partition) if name is not None else None
            if plog is None:
                code: int = E.unknown_topic_id.value if version >= 13 else E.unknown_topic_or_partition.value
                hint = None
                if name is not None and cluster.replicated(name, p.partition):
                    code = E.not_leader_or_follower.value  # another broker holds it
                    hint = current_leader(name, p.partition)
                parts.append(_refused(p.partition, code, version, hint))
                errors = True
                continue
            assert name is not None  # a log was found under it
            code, leader = cluster.leader_check(name, p.partition, p.current_leader_epoch)
            if code or leader is None:
                hint = (
                    current_leader(name, p.partition)
                    if code in (E.not_leader_or_follower.value, E.fenced_leader_epoch.value)
                    else None
                )
                parts.append(_refused(p.partition, code, version, hint))
                errors = True
                continue
            # a replica's fetch (Kafka's replica_id): only of a replicated partition, read to the log end
            follower = req.replica_id if req.replica_id >= 0 and leader.replicated else -1
            keys.append((name, p.partition))
            hw = plog.high_watermark
            lso = plog.last_stable_offset
            start = plog.log_start_offset
            out = codec.FetchResponsePartition(
                partition_index=p.partition,
                high_watermark=hw,
                last_stable_offset=lso,
                log_start_offset=start,
                aborted_transactions=[] if committed else None,
            )
            limit = min(p.partition_max_bytes, remaining)
            if limit <= 0 and total > 0:
                parts.append(out)
                continue
            try:
                upto = plog.log_end_offset if follower >= 0 else (lso if committed else hw)
                info = plog.read(p.fetch_offset, max(limit, 0), upto, min_one=(total == 0), load=version <= 3)
            except OffsetOutOfRangeError:
                # as Kafka: an out-of-range partition carries no offsets (-1), no aborted list;
                # a follower is told the leader's log start and high watermark to restart from
                out.error_code = E.offset_out_of_range.value
                if follower < 0:
                    out.high_watermark = out.last_stable_offset = out.log_start_offset = -1
                out.aborted_transactions = None
                errors = True
                parts.append(out)
                continue
            if follower >= 0:  # a position only once it was read
                cluster.follower_fetched(leader, follower, p.fetch_offset)
            chunk = info.records
            if chunk is not None:
                # v4+: the FileSlice itself; the connection sends it with sendfile (or reads it
                # into bytes when it cannot), so record bytes never pass through Python here.
                data = chunk if version > 3 else downconvert(chunk.tobytes(), 0 if version <= 1 else 1)
                out.records = [data]  # type: ignore[list-item]  # a FileSlice passes the codec as an opaque chunk
                out.records_size = len(data)
                total += len(data)
                remaining -= len(data)
                if committed:
                    out.aborted_transactions = [
                        codec.FetchAbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                        for a in plog.collect_aborted(p.fetch_offset, chunk.last_offset + 1)
                    ]
            parts.append(out)
        topics.append(codec.FetchResponseTopic(topic=t.topic, partitions=parts, topic_id=t.topic_id))
    endpoints = hints.node_endpoints() if hints is not None and version >= 16 else None
    return (
        codec.FetchResponse(
            responses=topics,
            session_id=0,
            tagged_fields={leader_hint.NODE_ENDPOINTS_TAG: endpoints} if endpoints else None,
        ),
        total,
        errors,
        keys,
    )


def _refused(partition: int, code: int, version: int, hint: bytes | None) -> codec.FetchResponsePartition:
    """A partition answered with an error and no records (with where its leader is, v12+)."""
    return codec.FetchResponsePartition(
        partition_index=partition,
        error_code=code,
        aborted_transactions=[] if version >= 13 else None,
        tagged_fields={leader_hint.FETCH_CURRENT_LEADER_TAG: hint} if hint else None,
    )


def handle(deps: Deps, ctx: RequestContext, req: codec.FetchRequest) -> Answer[codec.FetchResponse]:
    version = ctx.api_version
    resp, total, errors, keys = read_all(deps, req, version, ctx.connection.listener_name)
    if total >= req.min_bytes or req.max_wait_ms <= 0 or errors or not keys:
        return resp
    return _long_poll(deps, req, version, keys, time.monotonic() + req.max_wait_ms / 1000, ctx.connection.listener_name)


async def _long_poll(
    deps: Deps, req: codec.FetchRequest, version: int, keys: list[tuple[str, int]], deadline: float, listener: str
) -> codec.FetchResponse:
    waiters = deps.partitions.waiters
    while True:
        remaining = deadline - time.monotonic()
        woken = await waiters.wait_any(keys, remaining)
        resp, total, errors, keys = read_all(deps, req, version, listener)
        if total >= req.min_bytes or errors or not woken or deps.stopping.is_set() or time.monotonic() >= deadline:
            return resp


ROUTE = hot_route(codec, handle)
