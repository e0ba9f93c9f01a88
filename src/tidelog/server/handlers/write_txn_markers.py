"""WriteTxnMarkers (key 27, v0-2; v0 derived in `wire.schemas`; v2 names each marker's transaction
version, KIP-1228): write COMMIT/ABORT markers for a producer on the named
partitions. On a single node the coordinator writes markers itself and this API is served for
completeness (tools, tests); in a cluster the coordinator sends it to each partition's leader
(cluster/markers.py), which answers NOT_LEADER_OR_FOLLOWER off the leader and answers once the
marker is replicated (the high watermark passed it, under the leader epoch it was written at).
A marker is written even where the producer has nothing open (a retry is waited on like the
first); a `__consumer_offsets` partition completes the offsets the producer staged for the
groups that partition holds, as Kafka (in a cluster: on that partition's leader, the group
coordinator). A single node and a cluster are served by the same code: the cluster view
(cluster/view.py) admits each append, with a lease to wait under only where it replicates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...core.topics import OFFSETS_TOPIC
from ...log.errors import LogError
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.write_txn_markers.v2.request import WritableTxnMarker, WriteTxnMarkersRequest

    from ...cluster.view import ClusterView
    from ...core.partitions import Partitions
    from ...core.topics import TopicRegistry
    from ...log.log import PartitionLog
    from ...txn.producer_states import ProducerStates
    from ...txn.service import TxnService
    from ...wire.responses import (
        WritableTxnMarkerPartitionResult,
        WritableTxnMarkerResult,
        WritableTxnMarkerTopicResult,
        WriteTxnMarkersResponse,
    )
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    partitions: Partitions
    txn: TxnService
    cluster: ClusterView
    registry: TopicRegistry
    producers: ProducerStates


async def handle(deps: Deps, ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    txn = deps.txn
    cluster = deps.cluster
    out: list[WritableTxnMarkerResult] = []
    for m in request.markers:
        commit = bool(m.transaction_result)
        topics: list[WritableTxnMarkerTopicResult] = []
        to_flush: list[PartitionLog] = []
        for t in m.topics:
            parts: list[WritableTxnMarkerPartitionResult] = []
            for p in t.partition_indexes:
                topic = deps.registry.get(t.name)
                if topic is None or not 0 <= p < topic.partitions:
                    code: int = E.unknown_topic_or_partition.value
                elif t.name == OFFSETS_TOPIC:
                    _, leader = cluster.leader_check(t.name, p, -1)
                    code = (
                        E.not_leader_or_follower.value
                        if leader is None or leader.draining
                        else await txn.groups.complete_txn_partition(m.producer_id, m.producer_epoch, commit, p)
                    )
                else:
                    code = await _on_leader(deps, t.name, p, m, commit, to_flush)
                parts.append({"partition_index": p, "error_code": code})
            topics.append({"name": t.name, "partitions": parts})
        for plog in to_flush:
            await txn.partitions.group_commit.flush(plog)
        out.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": out}


async def _on_leader(
    deps: Deps, topic: str, p: int, m: WritableTxnMarker, commit: bool, to_flush: list[PartitionLog]
) -> int:
    """The marker appended under the partition owner's lease (the leader epoch now), answered
    once replicated under that same epoch: a leader deposed meanwhile answers
    NOT_LEADER_OR_FOLLOWER and the coordinator sends it again to the new leader. Without a lease
    (a single node) the log joins `to_flush`, flushed once for the whole marker."""
    cluster = deps.cluster
    code, lease = cluster.admit_append(topic, p, -1)
    if code:
        return code
    try:
        written = deps.producers.write_marker(
            topic, p, m.producer_id, m.producer_epoch, commit, m.coordinator_epoch, getattr(m, "transaction_version", 0)
        )
    except LogError as e:  # TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH
        return e.error_code
    if written is None:
        return E.unknown_topic_or_partition.value
    plog, offset = written
    if lease is None:
        to_flush.append(plog)
        return 0
    await deps.partitions.group_commit.flush(plog)
    return await cluster.wait_replicated(lease, offset, 30.0)


ROUTE = control_route(ApiKey.WRITE_TXN_MARKERS, 0, 2, handle)
