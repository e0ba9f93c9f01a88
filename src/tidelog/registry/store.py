"""The registry's storage: the compacted topic `_schemas` (one partition, formats in `records`),
read and written through the broker's own partitions, as Confluent's KafkaStore does over Kafka.

Contract: `SchemaStore.state` is exactly what the records below the partition's high watermark
say, applied in offset order. `catch_up()` applies whatever was committed since the last call
(records another registry, or a plain producer, wrote included). A write is two steps under the
registry's lock: `sync()` before deciding it (in a cluster: this broker must be the primary, and
its state must include every record of its log, not just the committed ones - a new primary's
log may end with records of the old one that become committed), then `write()`, which appends
through the partition's append path, waits until the records are flushed (when the topic's flush
settings ask) and replicated (acks=all), and catches up: a write is visible in `state` only once
read back from the log, never applied on the side.

A single node creates the topic at `start()` and is always the primary. In a cluster (`cluster`
given) the primary is the leader of `_schemas-0`, elected through etcd like any partition's; the
topic is created through etcd once enough brokers are live for its replication factor, and the
store is `ready` once this broker holds a replica and has read it: before that, and on a broker
that holds none, every request is RegistryError 50004 (HTTP 503, which clients with several
registry URLs fail over on); a write on a broker that is not the primary is 50004 too (the
listener forwards such a write to the primary, `forward`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..log import records as LR
from ..log.errors import LogError
from ..log.schema_state import RegistryState
from ..wire.errors import NOT_COORDINATOR
from .errors import OPERATION_TIMEOUT, STORE_ERROR, UNKNOWN_LEADER, RegistryError

if TYPE_CHECKING:
    from ..core.admin import Created, TopicAdmin
    from ..core.partitions import Partitions
    from ..log.log import PartitionLog

log = logging.getLogger("tidelog.registry")

READ_BYTES = 1 << 20


class Primary(Protocol):
    """Cluster mode: may this broker write the partition now (`check`: an opaque lease, or
    LogError off the leader), and wait until an offset appended under the lease is replicated
    (`cluster.coordinators.CoordinatorWrites` is one)."""

    def check(self, topic: str, partition: int) -> object: ...

    def replicated(self, lease: object, offset: int) -> Awaitable[None]: ...


@dataclass(frozen=True)
class ClusterTopic:
    """What the store needs of a cluster: the primary's guard, topic creation through etcd, how
    many brokers are live, and the topic's replication factor."""

    primary: Primary
    create_topic: Callable[[str, int, int, dict[str, str]], Awaitable[Created]]
    live_brokers: Callable[[], int]
    replication_factor: int


class SchemaStore:
    RETRY_S = 1.0  # cluster mode: how often start-up looks again for the topic and its replica

    def __init__(
        self, admin: TopicAdmin, partitions: Partitions, topic: str = "_schemas", cluster: ClusterTopic | None = None
    ) -> None:
        self.admin = admin
        self.partitions = partitions
        self.topic = topic
        self.cluster = cluster
        self.state = RegistryState()
        self.position = 0  # the next offset to read
        self.skipped = 0  # records this registry could not read (another vendor's extensions)
        self.ready = False
        self._lease: object = None  # cluster mode: the lease `sync` wrote under
        self._task: asyncio.Task[None] | None = None

    def _log(self) -> PartitionLog:
        plog = self.partitions.get(self.topic, 0)
        if plog is None:
            raise RegistryError(UNKNOWN_LEADER, f"this broker holds no replica of {self.topic}", 503)
        return plog

    # ---- start-up -----------------------------------------------------------------------
    def start(self) -> None:
        """A single node: create the topic if missing (1 partition, compacted) and read it from
        its start. A cluster member: do so in the background, as soon as it can."""
        if self.cluster is None:
            self.admin.ensure_internal(self.topic, 1, {"cleanup.policy": "compact"})
            self._loaded()
        else:
            self._task = asyncio.ensure_future(self._start_clustered(self.cluster))

    def _loaded(self) -> None:
        t0 = time.monotonic()
        self.ready = True
        n = self.catch_up()
        log.info(
            "schema registry: %d records of %s read in %.0f ms: %d subjects, %d schema ids",
            n,
            self.topic,
            (time.monotonic() - t0) * 1000,
            len(self.state.subjects),
            len(self.state.ids),
        )

    async def _start_clustered(self, cluster: ClusterTopic) -> None:
        while self.partitions.get(self.topic, 0) is None:
            if self.admin.registry.get(self.topic) is None:
                await self._create(cluster)
            await asyncio.sleep(self.RETRY_S)
        self._loaded()

    async def _create(self, cluster: ClusterTopic) -> None:
        rf, live = cluster.replication_factor, cluster.live_brokers()
        if live < rf:
            log.info("schema registry: %s waits for %d live brokers (%d are)", self.topic, rf, live)
            return
        configs = {"cleanup.policy": "compact", "min.insync.replicas": str(min(2, rf))}
        code, msg, _ = await cluster.create_topic(self.topic, 1, rf, configs)
        if code:
            log.info("schema registry: %s not created here: %s", self.topic, msg)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    # ---- reading ------------------------------------------------------------------------
    def catch_up(self) -> int:
        """Apply the records committed since the last call; how many."""
        if not self.ready:
            raise RegistryError(UNKNOWN_LEADER, f"the schema registry has not read {self.topic} yet", 503)
        plog = self._log()
        self.position = max(self.position, plog.log_start_offset)
        end, n = plog.high_watermark, 0
        while self.position < end:
            data = plog.read(self.position, READ_BYTES, max_offset=end).data
            if not data:
                break
            for batch in LR.decode_batches(data):
                h = batch.header
                if not h[LR.H_ATTRIBUTES] & LR.CONTROL_FLAG_MASK:
                    for r in batch.records:
                        if r.offset >= self.position:
                            n += 1
                            if not self.state.apply(r.key, r.value):
                                self.skipped += 1
                self.position = max(self.position, h[LR.H_BASE_OFFSET] + h[LR.H_LAST_OFFSET_DELTA] + 1)
        return n

    # ---- writing ------------------------------------------------------------------------
    async def sync(self) -> None:
        """Before deciding a write: be the primary, and have read every record of the log (a
        new primary waits until its whole log is replicated, then reads it)."""
        if self.cluster is None:
            self.catch_up()
            return
        self.catch_up()  # not ready: refused here
        plog = self._log()
        try:
            self._lease = self.cluster.primary.check(self.topic, 0)
            end = plog.log_end_offset
            if plog.high_watermark < end:
                await self.cluster.primary.replicated(self._lease, end - 1)
        except LogError as e:
            raise _not_primary(self.topic, e) from e
        self.catch_up()

    async def write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        """Append `records` as one batch (after `sync`, under the same lock) and return once they
        are read back into `state`; a refused append (a record over the topic's limits, a full
        disk) is RegistryError 50001, a lost primacy 50004."""
        plog = self._log()
        now = int(time.time() * 1000)
        try:
            info = plog.append_records([LR.Record(k, v, now) for k, v in records])
        except (LogError, OSError) as e:
            raise RegistryError(STORE_ERROR, f"Error while writing to {self.topic}: {e}", 500) from e
        self.partitions.notify(self.topic, 0)
        if info.flush_needed:
            await self.partitions.group_commit.flush(plog)
        if self.cluster is not None:
            try:
                await self.cluster.primary.replicated(self._lease, info.last_offset)
            except LogError as e:
                raise _not_primary(self.topic, e) from e
        self.catch_up()


def _not_primary(topic: str, e: LogError) -> RegistryError:
    if e.error_code == NOT_COORDINATOR:
        return RegistryError(
            UNKNOWN_LEADER, f"this broker is not the registry's primary (the leader of {topic}-0)", 503
        )
    return RegistryError(OPERATION_TIMEOUT, f"the write to {topic} was not replicated: {e}", 503)
