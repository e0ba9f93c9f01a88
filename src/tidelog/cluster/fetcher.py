"""Followers fetch from leaders: one fetcher task per source broker, as Kafka's replica fetchers.

A partition joins the fetcher of its leader when this broker becomes its follower (at a leader
epoch). Before its first fetch at that epoch it is truncated to the point where its log and the
leader's diverge (KIP-101/279): OffsetForLeaderEpoch for the follower's latest epoch answers the
leader's end offset of that epoch (or of the largest epoch below it), and the follower truncates to
the smaller of that and its own end of the same epoch - when it has that epoch; when it does not, it
asks about its own latest epoch before the one answered, until the two meet. Then it fetches from
its log end offset with `replica_id` set and its leader epoch, appends the leader's batches as they
are (offsets, epochs and CRCs unchanged) and takes the leader's high watermark, capped at its own
log end. Errors (the leader moved, not reachable) back off and retry; a leadership change arrives
from etcd and moves the partition to another fetcher.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode as E

from ..log.errors import LogError
from ..wire import fetch as codec
from .peer import Connector, Peer, PeerError, tcp_connect

if TYPE_CHECKING:
    from ..core.config import BrokerConfig
    from ..core.partitions import Partitions
    from ..log.log import PartitionLog
    from .metadata import MetadataCache

log = logging.getLogger("tidelog.cluster")

_RETRY_S = 0.2


@dataclass
class FetchState:
    leader_epoch: int
    truncated: bool = False
    ask_epoch: int | None = None  # the epoch to ask the leader about next (None: our latest)


class ReplicaFetcher:
    def __init__(self, manager: FetcherManager, leader_id: int) -> None:
        self.m = manager
        self.leader_id = leader_id
        self.parts: dict[tuple[str, int], FetchState] = {}
        self.wake = asyncio.Event()
        self.peer: Peer | None = None
        self._last_error: dict[tuple[str, int], int] = {}
        self.task: asyncio.Task[None] = asyncio.ensure_future(self._run())

    def stop(self) -> None:
        self.task.cancel()
        if self.peer is not None:
            self.peer.close()

    def _endpoint(self) -> tuple[str, int] | None:
        ep = self.m.cache.endpoint(self.leader_id, self.m.listener)
        return (ep.host, ep.port) if ep is not None else None

    async def _run(self) -> None:
        while True:
            if not self.parts:
                self.wake.clear()
                await self.wake.wait()
                continue
            ep = self._endpoint()
            if ep is None:
                await asyncio.sleep(_RETRY_S)
                continue
            if self.peer is None or (self.peer.host, self.peer.port) != ep:
                if self.peer is not None:
                    self.peer.close()
                self.peer = Peer(ep[0], ep[1], f"tidelog-replica-{self.m.node_id}", connect=self.m.connect)
            try:
                if any(not s.truncated for s in self.parts.values()):
                    await self._truncate()
                backoff = await self._fetch_once()
            except asyncio.CancelledError:
                raise
            except PeerError as e:
                log.debug("fetcher from %d: %s", self.leader_id, e)
                backoff = True
            except Exception:
                log.exception("fetcher from %d failed", self.leader_id)
                backoff = True
            if backoff:
                await asyncio.sleep(_RETRY_S)

    async def _truncate(self) -> None:
        assert self.peer is not None
        todo = {k: s for k, s in self.parts.items() if not s.truncated}
        ask: dict[str, list[tuple[int, int, int]]] = {}
        for (t, p), s in todo.items():
            plog = self.m.partitions.get(t, p)
            if plog is None:
                continue
            latest = plog.latest_epoch() if s.ask_epoch is None else s.ask_epoch
            if latest < 0:
                # no epochs to compare (an empty log, or the epoch checkpoint was lost): what is
                # past the high watermark may have diverged, so it goes (Kafka's
                # truncateToHighWatermark) and is fetched again
                hw = plog.high_watermark
                if hw < plog.log_end_offset:
                    log.info(
                        "%s-%d: no leader epochs: truncating to the high watermark %d (log end %d)",
                        t,
                        p,
                        hw,
                        plog.log_end_offset,
                    )
                    self.m.truncate(t, p, plog, hw)
                s.truncated = True
                continue
            ask.setdefault(t, []).append((p, s.leader_epoch, latest))
        if not ask:
            return
        resp = await self.peer.offsets_for_leader_epoch(self.m.node_id, ask)
        for tr in resp.topics:
            for pr in tr.partitions:
                key = (tr.topic, pr.partition)
                st = self.parts.get(key)
                if st is None or st is not todo.get(key):
                    continue
                if pr.error_code.value != 0:  # retried at the next round; said once per change
                    if self._last_error.get(key) != pr.error_code.value:
                        log.info(
                            "%s-%d: offsets for leader epoch from %d answered error %d",
                            key[0],
                            key[1],
                            self.leader_id,
                            pr.error_code.value,
                        )
                    self._last_error[key] = pr.error_code.value
                    continue
                plog = self.m.partitions.get(*key)
                if plog is None:
                    continue
                leo = plog.log_end_offset
                if pr.end_offset < 0:
                    target = plog.high_watermark
                else:
                    # KIP-279: the end offsets compare only for the same epoch. When the leader
                    # answers an earlier epoch than asked and this log has no such epoch, its
                    # latest epoch before that one is asked about in turn (each round asks an
                    # earlier epoch, so this ends)
                    mine_epoch, mine = plog.epoch_end(pr.leader_epoch)
                    if 0 <= mine_epoch < pr.leader_epoch:
                        st.ask_epoch = mine_epoch
                        continue
                    target = min(pr.end_offset, mine if mine_epoch >= 0 else pr.end_offset, leo)
                if target < leo:
                    log.info(
                        "%s-%d: truncating to %d (log end %d) to follow %d at epoch %d",
                        key[0],
                        key[1],
                        target,
                        leo,
                        self.leader_id,
                        st.leader_epoch,
                    )
                    self.m.truncate(key[0], key[1], plog, target)
                st.truncated = True

    async def _fetch_once(self) -> bool:
        assert self.peer is not None
        by_topic: dict[str, list[codec.FetchRequestPartition]] = {}
        sent: dict[tuple[str, int], FetchState] = {}
        for (t, p), s in self.parts.items():
            if not s.truncated:
                continue
            plog = self.m.partitions.get(t, p)
            if plog is None:
                continue
            sent[(t, p)] = s
            by_topic.setdefault(t, []).append(
                codec.FetchRequestPartition(
                    partition=p,
                    fetch_offset=plog.log_end_offset,
                    partition_max_bytes=self.m.max_partition_bytes,
                    current_leader_epoch=s.leader_epoch,
                    log_start_offset=plog.log_start_offset,
                )
            )
        if not sent:
            return True
        req = codec.FetchRequest(
            max_wait_ms=self.m.max_wait_ms,
            min_bytes=1,
            max_bytes=self.m.max_bytes,
            topics=[codec.FetchRequestTopic(t, ps) for t, ps in by_topic.items()],
            replica_id=self.m.node_id,
        )
        resp = await self.peer.fetch(req)
        backoff = False
        for tr in resp.responses:
            for pr in tr.partitions:
                key = (tr.topic, pr.partition_index)
                st = self.parts.get(key)
                if st is None or st is not sent.get(key):
                    continue  # moved or re-added meanwhile
                plog = self.m.partitions.get(*key)
                if plog is None:
                    continue
                code = pr.error_code
                if self.m.stopped:
                    return True  # stopping: nothing more is appended to logs being closed
                if code == 0:
                    if pr.records:
                        data = b"".join(bytes(c) for c in pr.records)
                        if data:
                            try:
                                self.m.append(key[0], key[1], plog, data)
                            except LogError as e:
                                # the logs diverged where truncation did not see it: reconcile again
                                log.warning(
                                    "%s-%d: cannot append what %d sent (%s): truncating again",
                                    key[0],
                                    key[1],
                                    self.leader_id,
                                    e,
                                )
                                st.truncated, st.ask_epoch = False, None
                                backoff = True
                                continue
                    if plog.update_high_watermark(min(pr.high_watermark, plog.log_end_offset)):
                        self.m.partitions.notify(*key)
                    if pr.log_start_offset > plog.log_start_offset:
                        plog.follow_log_start_offset(pr.log_start_offset)
                elif code == E.offset_out_of_range.value:
                    self._out_of_range(key, plog, pr)
                else:
                    if self._last_error.get(key) != code:  # once per change: a stuck follower says why
                        log.info("%s-%d: fetch from %d answered error %d", key[0], key[1], self.leader_id, code)
                    backoff = True
                self._last_error[key] = code
        return backoff

    def _out_of_range(self, key: tuple[str, int], plog: PartitionLog, pr: codec.FetchResponsePartition) -> None:
        leo = plog.log_end_offset
        if pr.log_start_offset >= 0 and leo < pr.log_start_offset:
            log.info("%s-%d: below the leader's log start %d: starting there", key[0], key[1], pr.log_start_offset)
            self.m.truncate_fully(key[0], key[1], plog, pr.log_start_offset)
        elif pr.high_watermark >= 0 and leo > pr.high_watermark:
            self.m.truncate(key[0], key[1], plog, pr.high_watermark)


class FollowerProducerState(Protocol):
    """What a follower needs of the producer state's owner (txn.producer_states.ProducerStates):
    fetched batches replayed into it, rebuilt after a truncation, forgotten with the replica."""

    def append_as_follower(self, topic: str, partition: int, plog: PartitionLog, data: bytes) -> None: ...

    def rebuild_after_truncate(self, topic: str, partition: int, plog: PartitionLog) -> None: ...

    def forget(self, topic: str, partition: int) -> None: ...


class FetcherManager:
    def __init__(
        self,
        node_id: int,
        cache: MetadataCache,
        partitions: Partitions,
        producers: FollowerProducerState,
        config: BrokerConfig,
        listener: str,
        connect: Connector = tcp_connect,
    ) -> None:
        self.node_id = node_id
        self.connect = connect
        self.cache = cache
        self.partitions = partitions
        self.producers = producers
        self.listener = listener
        self.max_wait_ms = config["replica.fetch.wait.max.ms"]
        self.max_partition_bytes = config["replica.fetch.max.bytes"]
        self.max_bytes = config["replica.fetch.response.max.bytes"]
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.where: dict[tuple[str, int], int] = {}
        self.stopped = False

    def add(self, topic: str, partition: int, leader: int, epoch: int) -> None:
        if self.stopped:
            return
        self.remove(topic, partition)
        f = self.fetchers.get(leader)
        if f is None:
            f = self.fetchers[leader] = ReplicaFetcher(self, leader)
        f.parts[(topic, partition)] = FetchState(epoch)
        self.where[(topic, partition)] = leader
        f.wake.set()

    def remove(self, topic: str, partition: int) -> None:
        leader = self.where.pop((topic, partition), None)
        if leader is not None and leader in self.fetchers:
            self.fetchers[leader].parts.pop((topic, partition), None)

    def append(self, topic: str, partition: int, plog: PartitionLog, data: bytes) -> None:
        self.producers.append_as_follower(topic, partition, plog, data)
        self.partitions.notify(topic, partition)

    def truncate(self, topic: str, partition: int, plog: PartitionLog, offset: int) -> None:
        plog.truncate_to(offset)
        self.producers.rebuild_after_truncate(topic, partition, plog)

    def truncate_fully(self, topic: str, partition: int, plog: PartitionLog, offset: int) -> None:
        plog.truncate_fully_and_start_at(offset)
        self.producers.rebuild_after_truncate(topic, partition, plog)

    def stop(self) -> None:
        self.stopped = True
        for f in self.fetchers.values():
            f.stop()
        self.fetchers.clear()
