"""Transaction markers in cluster mode: the coordinator's COMMIT/ABORT markers are written by each
data partition's leader, as in Kafka (TransactionMarkerChannelManager): locally when this broker
leads the partition, else with a WriteTxnMarkers request to the leader. A marker counts once the
partition's high watermark passed it (acks=all: a failover cannot lose it). Partitions without a
leader, a leader that moved (NOT_LEADER_OR_FOLLOWER) or is unreachable are retried with backoff
until every marker is written, which is what keeps the transaction in PrepareCommit/PrepareAbort
meanwhile. A retry writes a second marker, which is harmless (readers skip a marker with
nothing open). A `__consumer_offsets` partition's marker goes to its
leader, the group coordinator, which completes the offsets the producer staged there.

Each marker counts only once replicated under the leader epoch it was written at (a leader
deposed while its marker's flush or replication was under way answers NOT_LEADER_OR_FOLLOWER,
and the marker is sent again to the new leader). A marker is always written, a retry too, so a
retry waits for the replication of its own marker. The sender stops as soon as this broker no
longer coordinates the transaction at the coordinator epoch it started with (`still_owned`), as
Kafka removes a resigned coordinator's pending markers: its successor completes the
transaction."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.topics import OFFSETS_TOPIC
from ..log.errors import LogError
from ..wire.errors import NOT_COORDINATOR, TRANSACTION_COORDINATOR_FENCED
from .peer import Connector, PeerError, PeerPool, tcp_connect
from .ports import GroupOffsets, MarkerLog

if TYPE_CHECKING:
    from ..core.partitions import Partitions
    from .metadata import MetadataCache
    from .replica import ReplicaManager

log = logging.getLogger("tidelog.cluster")

WRITE_TXN_MARKERS = 27
WRITE_TXN_MARKERS_VERSION = 2  # v2 (KIP-1228): each marker names its transaction version
REPLICATED_TIMEOUT_S = 30.0


class MarkersFenced(LogError):
    """A partition leader saw a newer coordinator epoch for the producer (it answered
    TRANSACTION_COORDINATOR_FENCED): this broker no longer coordinates the transaction, stops
    sending, and tells its client NOT_COORDINATOR (the new coordinator completes it)."""

    def __init__(self, message: str) -> None:
        super().__init__(NOT_COORDINATOR, message)


class MarkerSender:
    def __init__(
        self,
        node_id: int,
        cache: MetadataCache,
        replicas: ReplicaManager,
        producers: MarkerLog,
        partitions: Partitions,
        listener: str,
        groups: GroupOffsets,
        connect: Connector = tcp_connect,
    ) -> None:
        self.node_id = node_id
        self.groups = groups
        self.cache = cache
        self.replicas = replicas
        self.producers = producers
        self.partitions = partitions
        self.listener = listener
        self._pool = PeerPool(cache, listener, f"tidelog-markers-{node_id}", REPLICATED_TIMEOUT_S + 5, connect)

    async def __call__(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        partitions: list[tuple[str, int]],
        coordinator_epoch: int = 0,
        still_owned: Callable[[], bool] = lambda: True,
        transaction_version: int = 0,
    ) -> None:
        pending = set(partitions)
        delay = 0.05
        while pending:
            if not still_owned():
                raise MarkersFenced(
                    f"markers of producer {producer_id}: this broker no longer coordinates the "
                    f"transaction (coordinator epoch {coordinator_epoch})"
                )
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for tp in pending:
                st = self.cache.state(*tp)
                by_leader.setdefault(st.leader if st is not None else -1, []).append(tp)
            results = await asyncio.gather(
                *(
                    self._local(producer_id, producer_epoch, commit, tps, coordinator_epoch, transaction_version)
                    if leader == self.node_id
                    else self._remote(
                        leader, producer_id, producer_epoch, commit, tps, coordinator_epoch, transaction_version
                    )
                    for leader, tps in by_leader.items()
                    if leader >= 0
                )
            )
            for done in results:
                pending -= done
            if pending:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _local(
        self, pid: int, epoch: int, commit: bool, tps: list[tuple[str, int]], coordinator_epoch: int, tv: int
    ) -> set[tuple[str, int]]:
        done = set()
        for topic, p in tps:
            code, lease = self.replicas.leader_for_append(topic, p, -1)
            if code or lease is None:
                continue  # not (yet) leading it here, or too few in sync: retried
            if topic == OFFSETS_TOPIC:
                if await self.groups.complete_txn_partition(pid, epoch, commit, p) == 0:
                    done.add((topic, p))
                continue
            try:
                written = self.producers.write_marker(topic, p, pid, epoch, commit, coordinator_epoch, tv)
            except LogError as e:  # fenced: a newer coordinator owns this transaction now
                log.info("%s-%d: marker of producer %d refused: %s", topic, p, pid, e)
                raise MarkersFenced(str(e)) from None
            if written is None:
                continue
            plog, offset = written
            await self.partitions.group_commit.flush(plog)
            code = await self.replicas.wait_replicated(lease, offset, REPLICATED_TIMEOUT_S)
            if code == 0:
                done.add((topic, p))
            else:
                log.info("%s-%d: marker of producer %d not replicated (error %d): retrying", topic, p, pid, code)
        return done

    async def _remote(
        self,
        leader: int,
        pid: int,
        epoch: int,
        commit: bool,
        tps: list[tuple[str, int]],
        coordinator_epoch: int,
        tv: int,
    ) -> set[tuple[str, int]]:
        got = self._pool.get(leader)
        if got is None:
            return set()
        peer, lock = got
        topics: dict[str, list[int]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(p)
        request = {
            "markers": [
                {
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "transaction_result": commit,
                    "coordinator_epoch": coordinator_epoch,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                    "transaction_version": tv,
                }
            ]
        }
        try:
            async with lock:
                resp = await peer.control(WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, request)
        except PeerError as e:
            log.info("markers of producer %d to broker %d not sent (%s): retrying", pid, leader, e)
            return set()
        done = set()
        for m in resp.markers:
            for t in m.topics:
                for part in t.partitions:
                    if part.error_code.value == 0:
                        done.add((t.name, part.partition_index))
                    elif part.error_code.value == TRANSACTION_COORDINATOR_FENCED:
                        raise MarkersFenced(f"{t.name}-{part.partition_index}: a newer coordinator owns producer {pid}")
        return done

    def close(self) -> None:
        self._pool.close()
