"""WriteTxnMarkers (key 27, v0-1; v0 derived in `wire.schemas`): write COMMIT/ABORT markers for a producer on the named
partitions. On a single node the coordinator writes markers itself and this API is served for
completeness (tools, tests); in a cluster the coordinator sends it to each partition's leader
(cluster/markers.py), which answers NOT_LEADER_OR_FOLLOWER off the leader and answers once the
marker is replicated (the high watermark passed it, under the leader epoch it was written at).
A marker is written even where the producer has nothing open (a retry is waited on like the
first); group offsets staged by the producer are completed when `__consumer_offsets` is named
(in a cluster: on that partition's leader, the group coordinator)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...core.topics import OFFSETS_TOPIC
from ...log.errors import LogError
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.write_txn_markers.v1.request import WriteTxnMarkersRequest

    from ..broker import Broker
    from ..connection import RequestContext


async def handle(broker: Broker, ctx: RequestContext, request: WriteTxnMarkersRequest) -> Any:
    txn = broker.txn
    cluster = broker.cluster if broker.cluster.clustered else None
    out = []
    for m in request.markers:
        commit = bool(m.transaction_result)
        topics = []
        to_flush = []
        for t in m.topics:
            parts = []
            for p in t.partition_indexes:
                topic = broker.registry.get(t.name)
                if topic is None or not 0 <= p < topic.partitions:
                    code = E.unknown_topic_or_partition.value
                elif t.name == OFFSETS_TOPIC and cluster is not None:
                    replica = cluster.leader_replica(t.name, p)
                    code = (
                        E.not_leader_or_follower.value
                        if replica is None or replica.draining
                        else await txn.groups.complete_txn_partition(m.producer_id, m.producer_epoch, commit, p)
                    )
                elif t.name == OFFSETS_TOPIC:
                    if txn.groups.store is not None:
                        await txn.groups.store.complete(m.producer_id, m.producer_epoch, commit)
                    code = 0
                elif cluster is not None:
                    code = await _on_leader(broker, cluster, t.name, p, m, commit)
                else:
                    try:
                        written = broker.producers.write_marker(
                            t.name, p, m.producer_id, m.producer_epoch, commit, m.coordinator_epoch
                        )
                    except LogError as e:
                        written, code = None, e.error_code
                    else:
                        code = 0
                    if written is not None:
                        to_flush.append(written[0])
                parts.append({"partition_index": p, "error_code": code})
            topics.append({"name": t.name, "partitions": parts})
        for plog in to_flush:
            await txn.partitions.group_commit.flush(plog)
        out.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": out}


async def _on_leader(broker: Broker, cluster: Any, topic: str, p: int, m: Any, commit: bool) -> int:
    """The marker appended under the partition owner's lease (the leader epoch now), answered
    once replicated under that same epoch: a leader deposed meanwhile answers
    NOT_LEADER_OR_FOLLOWER and the coordinator sends it again to the new leader."""
    code, lease = cluster.replicas.leader_for_append(topic, p, -1)
    if code:
        return int(code)
    try:
        written = broker.producers.write_marker(topic, p, m.producer_id, m.producer_epoch, commit, m.coordinator_epoch)
    except LogError as e:  # TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH
        return e.error_code
    if written is None:
        return E.unknown_topic_or_partition.value
    plog, offset = written
    await broker.partitions.group_commit.flush(plog)
    result: int = await cluster.replicas.wait_replicated(lease, offset, 30.0)
    return result


ROUTE = control_route(ApiKey.WRITE_TXN_MARKERS, 0, 1, handle)
