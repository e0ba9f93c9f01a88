"""Share groups in a cluster (KIP-932): the persister that reaches each share partition's share
coordinator - the leader of its partition of `__share_group_state` - with the persister APIs
between brokers (Initialize / Read / Write / Delete / ReadSummary ShareGroupState), or directly
when that leader is this broker; and which data partitions this broker leads, for the share
partitions' leaders.

Routing: the coordinator's partition is the share key's hash modulo the topic's partition count
(`partition_of`, given by the composition root: the same function the coordinator uses). The
topic is created on first use (`share.coordinator.state.topic.*`: replication factor 3, min ISR
2, compacted), as `__consumer_offsets` is. A call answered NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE, or lost on the way (the coordinator's
broker died, the connection broke), is sent again to whoever leads then, for up to
`share.coordinator.write.timeout.ms`; then its error is answered. Every call is idempotent (a
Write or an Initialize carries a whole state), so a call whose first answer was lost may be sent
again safely; a deposed coordinator cannot answer (its write fails), so an answer is the present
coordinator's.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from kio.schema.errors import ErrorCode as E

from ..core.topics import SHARE_STATE_TOPIC
from .peer import Connector, PeerError, PeerPool, tcp_connect

if TYPE_CHECKING:
    from kio.schema.read_share_group_state.v0.response import PartitionResult as ReadResult
    from kio.schema.read_share_group_state_summary.v1.response import PartitionResult as SummaryResult

    from .metadata import MetadataCache
    from .replica import ReplicaManager

log = logging.getLogger("tidelog.cluster")
ShareKey = tuple[str, uuid.UUID, int]
INITIALIZE, READ, WRITE, DELETE, SUMMARY = 83, 84, 85, 86, 87
LIST_OFFSETS = 2
RETRIABLE = frozenset(
    {
        E.not_coordinator.value,
        E.coordinator_load_in_progress.value,
        E.coordinator_not_available.value,
        E.not_enough_replicas.value,
        E.request_timed_out.value,
    }
)
LOST = E.coordinator_not_available.value  # the answer of a call that could not be made


class StateBatchLike(Protocol):
    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def delivery_state(self) -> int: ...
    @property
    def delivery_count(self) -> int: ...


StateT = TypeVar("StateT")  # a share partition's state (`share.state_store.ShareState`)
SummaryT = TypeVar("SummaryT")  # its summary (`share.persister.Summary`)
BatchT = TypeVar("BatchT", bound="StateBatchLike")  # a state batch (`share.state_records.StateBatch`)
StateT_co = TypeVar("StateT_co", covariant=True)
SummaryT_co = TypeVar("SummaryT_co", covariant=True)
BatchT_contra = TypeVar("BatchT_contra", bound="StateBatchLike", contravariant=True)
T = TypeVar("T")


class LocalShareCoordinator(Protocol[StateT_co, SummaryT_co, BatchT_contra]):
    """This broker's share coordinator (`share.coordinator.ShareCoordinator`)."""

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> int: ...
    async def read(self, key: ShareKey, leader_epoch: int) -> tuple[int, StateT_co | None]: ...
    async def write(
        self,
        key: ShareKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: Iterable[BatchT_contra],
    ) -> int: ...
    async def delete(self, key: ShareKey) -> int: ...
    def summary(self, key: ShareKey) -> tuple[int, SummaryT_co | None]: ...


class Placement(Protocol):
    """Where the coordinators' topics are (`coordinators.CoordinatorPlacement`)."""

    async def ensure_topic(self, topic: str) -> int: ...
    def num_partitions(self, topic: str) -> int: ...
    def leader(self, topic: str, key_partition: int) -> int: ...


class ShareLeadership:
    """The share partitions' `Leadership`: this broker's leader epoch of a data partition it leads
    and takes appends for (not while it hands the partition over)."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self.replicas = replicas

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        p = self.replicas.leader(topic, partition)
        if p is None or p.draining or p.state is None:
            return None
        return p.leader_epoch


class RoutedPersister(Generic[StateT, SummaryT, BatchT]):
    def __init__(
        self,
        node_id: int,
        cache: MetadataCache,
        local: LocalShareCoordinator[StateT, SummaryT, BatchT],
        placement: Placement,
        partition_of: Callable[[ShareKey, int], int],
        read_from: Callable[[ReadResult], StateT | None],
        summary_from: Callable[[SummaryResult], SummaryT],
        listener: str,
        timeout_s: float,
        connect: Connector = tcp_connect,
    ) -> None:
        self.node_id = node_id
        self.cache = cache
        self.local = local
        self.placement = placement
        self.partition_of = partition_of
        self.read_from = read_from  # a Read answer's partition -> the state (None: no state)
        self.summary_from = summary_from  # a ReadSummary answer's partition -> the summary
        self.timeout_s = timeout_s
        self._pool = PeerPool(cache, listener, f"tidelog-share-{node_id}", min(timeout_s, 10.0), connect)

    # ---- the persister's calls ---------------------------------------------------------------------
    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> int:
        part = {"partition": key[2], "state_epoch": state_epoch, "start_offset": start_offset}

        async def here() -> tuple[int, None]:
            return await self.local.initialize(key, state_epoch, start_offset), None

        code, _ = await self._call(key, here, INITIALIZE, 0, _request(key, part), _nothing)
        return code

    async def read(self, key: ShareKey, leader_epoch: int) -> tuple[int, StateT | None]:
        part = {"partition": key[2], "leader_epoch": leader_epoch}
        return await self._call(
            key, lambda: self.local.read(key, leader_epoch), READ, 0, _request(key, part), self.read_from
        )

    async def write(
        self,
        key: ShareKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: Iterable[BatchT],
    ) -> int:
        kept = list(batches)
        part = {
            "partition": key[2],
            "state_epoch": state_epoch,
            "leader_epoch": leader_epoch,
            "start_offset": start_offset,
            "delivery_complete_count": -1,
            "state_batches": [
                {
                    "first_offset": b.first_offset,
                    "last_offset": b.last_offset,
                    "delivery_state": b.delivery_state,
                    "delivery_count": b.delivery_count,
                }
                for b in kept
            ],
        }

        async def here() -> tuple[int, None]:
            return await self.local.write(key, state_epoch, leader_epoch, start_offset, kept), None

        code, _ = await self._call(key, here, WRITE, 1, _request(key, part), _nothing)
        return code

    async def delete(self, key: ShareKey) -> int:
        async def here() -> tuple[int, None]:
            return await self.local.delete(key), None

        code, _ = await self._call(key, here, DELETE, 0, _request(key, {"partition": key[2]}), _nothing)
        return code

    async def summary(self, key: ShareKey) -> tuple[int, SummaryT | None]:
        async def here() -> tuple[int, SummaryT | None]:
            return self.local.summary(key)

        part = {"partition": key[2], "leader_epoch": -1}
        return await self._call(key, here, SUMMARY, 1, _request(key, part), self.summary_from)

    # ---- a partition's end, for a share group's lag -------------------------------------------------
    async def end_offset(self, topic: str, partition: int) -> int | None:
        """The high watermark of a partition led elsewhere (ListOffsets -1 to its leader), asked
        again of whoever leads while the leadership moves, for up to the timeout; None then."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        delay = 0.05
        while True:
            found = await self._end_offset_once(topic, partition)
            if found is not None or loop.time() + delay >= deadline:
                return found
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _end_offset_once(self, topic: str, partition: int) -> int | None:
        st = self.cache.state(topic, partition)
        leader = st.leader if st is not None else -1
        peer = self._pool.get(leader) if leader >= 0 else None
        if peer is None:
            return None
        try:
            async with peer[1]:
                resp = await peer[0].control(
                    LIST_OFFSETS,
                    5,
                    {
                        "replica_id": -1,
                        "isolation_level": 0,
                        "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
                    },
                )
        except PeerError:
            return None
        p = resp.topics[0].partitions[0]
        return None if int(p.error_code.value) else int(p.offset)

    # ---- routing --------------------------------------------------------------------------------
    async def _call(
        self,
        key: ShareKey,
        here: Callable[[], Awaitable[tuple[int, T | None]]],
        api_key: int,
        version: int,
        data: dict[str, Any],
        from_remote: Callable[[Any], T | None],
    ) -> tuple[int, T | None]:
        """`here()` when this broker coordinates the key, else the request to whoever does;
        retried while the answer is retriable, for up to the timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        delay = 0.05
        while True:
            code, answer = await self._once(key, here, api_key, version, data, from_remote)
            if code not in RETRIABLE or loop.time() + delay >= deadline:
                return code, answer
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _once(
        self,
        key: ShareKey,
        here: Callable[[], Awaitable[tuple[int, T | None]]],
        api_key: int,
        version: int,
        data: dict[str, Any],
        from_remote: Callable[[Any], T | None],
    ) -> tuple[int, T | None]:
        if code := await self.placement.ensure_topic(SHARE_STATE_TOPIC):
            return code, None
        n = self.placement.num_partitions(SHARE_STATE_TOPIC)
        leader = self.placement.leader(SHARE_STATE_TOPIC, self.partition_of(key, n))
        if leader == self.node_id:
            return await here()
        peer = self._pool.get(leader) if leader >= 0 else None
        if peer is None:
            return LOST, None
        try:
            async with peer[1]:
                resp = await peer[0].control(api_key, version, data)
        except PeerError as e:
            log.info("share state of %s: broker %d did not answer: %s", key, leader, e)
            return LOST, None
        p = resp.results[0].partitions[0]
        code = int(p.error_code.value)
        return (code, None) if code else (NONE_CODE, from_remote(p))

    def close(self) -> None:
        self._pool.close()


def _request(key: ShareKey, partition: dict[str, Any]) -> dict[str, Any]:
    """A persister request for one share partition."""
    return {"group_id": key[0], "topics": [{"topic_id": key[1], "partitions": [partition]}]}


def _nothing(_partition: object) -> None:
    return None


NONE_CODE = 0
