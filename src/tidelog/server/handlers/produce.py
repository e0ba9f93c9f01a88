"""Produce (key 0, v0-13): append record sets to partition logs.

v0-2 carry magic 0/1 message sets (the log engine converts them), v3+ record batches v2. Each
partition's record set is appended whole or not at all. acks=0 gets no response at all - and, as
Kafka, a partition refused (not the leader, unknown, a bad batch) closes the connection, so that
the client, which waits for no answer, learns of it and refreshes its metadata; acks=1 and -1 are
answered once appended, after a shared fsync when the topic's flush settings ask for one. Records
are never decoded here: validation works on batch headers.

Transactions: a transactional batch is appended only where the producer's transaction includes
the partition (KIP-890). v3-11 come from clients that added their partitions themselves
(AddPartitionsToTxn): the coordinator is asked to verify it only where the coordinator is another
broker and the transaction is not open here yet. v12+ come from clients of transaction version 2:
the broker adds each partition whose transaction is not open here yet to the transaction first,
through the coordinator (`TxnService.add_for_append`), and appends once it has. v13 names topics
by id (KIP-516): resolved with the topic registry, an unknown one is UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...log.errors import LogError
from ...txn.service import append_error
from ...wire import leader_hint
from ...wire import produce as codec
from ..leader_hints import LeaderHints
from ..router import NO_RESPONSE, NoResponse
from ..router_hot import hot_route
from ._answer import Answer

if TYPE_CHECKING:
    from ...cluster.partition import Lease
    from ...cluster.view import ClusterView
    from ...core.partitions import Partitions
    from ...core.topics import TopicRegistry
    from ...txn.service import TxnService
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    partitions: Partitions
    txn: TxnService
    cluster: ClusterView
    registry: TopicRegistry


FIRST_ADDING_VERSION = 12  # transaction version 2: the broker adds the partitions (KIP-890)


# Kafka answers these before touching the log, with no log start offset (-1); every other append
# error (sequence, epoch, transaction state, timestamps) carries the partition's log start offset.
_NO_LOG_START_ERRORS = frozenset(
    {
        E.corrupt_message.value,
        E.unknown_topic_or_partition.value,
        E.not_leader_or_follower.value,
        E.message_too_large.value,
        E.record_list_too_large.value,
        E.kafka_storage_error.value,
        E.invalid_producer_id_mapping.value,  # KIP-890 verification, before the append
    }
)


def partition_error(index: int, code: int, message: str | None = None) -> codec.ProduceResponsePartition:
    return codec.ProduceResponsePartition(index=index, error_code=code, error_message=message)


def handle(
    deps: Deps, ctx: RequestContext, req: codec.ProduceRequest, refused: dict[tuple[str, int], int] | None = None
) -> Answer[codec.ProduceResponse | NoResponse]:
    """`refused`: partitions whose transactional batch the coordinator did not vouch for or add
    (KIP-890), answered with that error and not appended."""
    cluster = deps.cluster
    version = ctx.api_version
    if refused is None:
        if version >= codec.FIRST_TOPIC_ID_VERSION:
            _resolve_topic_ids(deps.registry, req)
        if req.transactional_id:
            adding = version >= FIRST_ADDING_VERSION
            needs = deps.txn.needs_add if adding else cluster.needs_verification
            pending = [
                (t.name, p.index, tp)
                for t in req.topic_data
                if t.name
                for p in t.partition_data
                if p.records and (tp := needs(t.name, p.index, p.records)) is not None
            ]
            if pending:
                return _verified_then(deps, ctx, req, pending, adding)
    partitions = deps.partitions
    txn = deps.txn
    acks = req.acks
    results = []
    to_flush = []
    replicated: list[tuple[Lease, int, codec.ProduceResponsePartition]] = []
    hints: LeaderHints | None = None  # made for the first partition refused as not led here
    hinted = ctx.api_version >= leader_hint.PRODUCE_FIRST_VERSION
    now_ms = int(time.time() * 1000)
    for t in req.topic_data:
        parts = []
        for p in t.partition_data:
            if acks not in (0, 1, -1):
                parts.append(partition_error(p.index, E.invalid_required_acks.value))
                continue
            if not t.name:  # v13: a topic id no topic has
                parts.append(partition_error(p.index, E.unknown_topic_id.value))
                continue
            if refused and (t.name, p.index) in refused:
                parts.append(partition_error(p.index, refused[(t.name, p.index)]))
                continue
            # the partition's owner admits the append under the leader epoch it leads at now (a
            # replicated partition: the lease to wait under for acks=all)
            code, lease = cluster.admit_append(t.name, p.index, acks)
            if code:
                known = cluster.replicated(t.name, p.index)
                if not known:
                    code = E.unknown_topic_or_partition.value
                err = partition_error(p.index, code)
                hint = None
                if known and code == E.not_leader_or_follower.value and hinted:
                    hints = hints or LeaderHints(cluster, ctx.connection.listener_name)
                    hint = hints.current_leader(t.name, p.index)
                if hint:
                    err.tagged_fields = {leader_hint.PRODUCE_CURRENT_LEADER_TAG: hint}
                parts.append(err)
                continue
            plog = partitions.get(t.name, p.index)
            if plog is None:
                parts.append(partition_error(p.index, E.unknown_topic_or_partition.value))
                continue
            if not p.records:
                parts.append(partition_error(p.index, E.corrupt_message.value, "empty record set"))
                continue
            try:
                info = txn.append(t.name, p.index, plog, p.records, now_ms)
            except LogError as e:
                error = partition_error(p.index, e.error_code, e.message)
                if e.error_code not in _NO_LOG_START_ERRORS:  # as Kafka: the partition's log start too
                    error.log_start_offset = plog.log_start_offset
                parts.append(error)
                continue
            answer = codec.ProduceResponsePartition(
                index=p.index,
                error_code=0,
                base_offset=info.first_offset,
                log_append_time_ms=info.log_append_time,
                log_start_offset=plog.log_start_offset,
            )
            parts.append(answer)
            if lease is not None and acks == -1:
                replicated.append((lease, info.last_offset, answer))
            if info.flush_needed:
                to_flush.append(plog)
        results.append(codec.ProduceResponseTopic(name=t.name, partition_responses=parts, topic_id=t.topic_id))
    group_commit = partitions.group_commit
    if acks == 0:
        if to_flush:
            for plog in to_flush:
                asyncio.ensure_future(group_commit.flush(plog))
        failed = [
            f"{t.name}-{p.index}: error {p.error_code}" for t in results for p in t.partition_responses if p.error_code
        ]
        if failed:
            ctx.connection.close_with(f"acks=0 produce refused ({', '.join(failed[:5])})")
        return NO_RESPONSE
    response = codec.ProduceResponse(responses=results)
    endpoints = hints.node_endpoints() if hints is not None else None
    if endpoints:
        response.tagged_fields = {leader_hint.NODE_ENDPOINTS_TAG: endpoints}
    if replicated:
        return _replicated_then(deps, replicated, to_flush, req.timeout_ms, response)
    if to_flush:
        return _flush_then(group_commit, to_flush, response)
    return response


def _resolve_topic_ids(registry: TopicRegistry, req: codec.ProduceRequest) -> None:
    """v13: each topic's name from its id (left "" for an id no topic has)."""
    by_id = registry.by_id
    for t in req.topic_data:
        topic = by_id.get(t.topic_id) if t.topic_id is not None else None
        t.name = topic.name if topic is not None else ""


async def _verified_then(
    deps: Deps,
    ctx: RequestContext,
    req: codec.ProduceRequest,
    pending: list[tuple[str, int, tuple[int, int]]],
    adding: bool,
) -> codec.ProduceResponse | NoResponse:
    """KIP-890: the coordinator vouches for each first transactional batch (a remote coordinator,
    v3-11) or adds its partition to the transaction (v12+) first."""
    by_producer: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for topic, index, producer in pending:
        by_producer.setdefault(producer, []).append((topic, index))
    txn_id = req.transactional_id
    assert txn_id is not None
    refused: dict[tuple[str, int], int] = {}
    for (pid, epoch), tps in by_producer.items():
        if adding:
            answers = await deps.txn.add_for_append(txn_id, pid, epoch, tps, deps.cluster.verify)
        else:
            answers = await deps.cluster.verify(txn_id, pid, epoch, tps)
        refused.update({tp: append_error(code, adding) for tp, code in answers.items() if code})
    result = handle(deps, ctx, req, refused)
    return await result if isinstance(result, Awaitable) else result


async def _replicated_then(
    deps: Deps,
    waits: list[tuple[Lease, int, codec.ProduceResponsePartition]],
    to_flush: list[Any],
    timeout_ms: int,
    response: codec.ProduceResponse,
) -> codec.ProduceResponse:
    """acks=all on a replicated partition: answered once the high watermark passes the batch under
    the leader epoch it was appended at (never across a leadership change)."""
    cluster = deps.cluster
    if to_flush:
        await asyncio.gather(*(deps.partitions.group_commit.flush(plog) for plog in to_flush))
    codes = await cluster.wait_all_replicated([(lease, last) for lease, last, _ in waits], timeout_ms / 1000)
    for (_r, _last, answer), code in zip(waits, codes):
        if code:
            answer.error_code = code
            answer.base_offset = -1
            answer.log_append_time_ms = -1
    return response


async def _flush_then(group_commit: Any, logs: list[Any], response: codec.ProduceResponse) -> codec.ProduceResponse:
    await asyncio.gather(*(group_commit.flush(plog) for plog in logs))
    return response


ROUTE = hot_route(codec, handle)
