"""The registry's storage: the compacted topic `_schemas` (one partition, formats in `records`),
read and written through the broker's own partitions, as Confluent's KafkaStore does over Kafka.

Contract: `SchemaStore.state` is exactly what the records below the partition's high watermark
say, applied in offset order. `catch_up()` applies whatever was committed since the last call
(records another registry, or a plain producer, wrote included); `write()` appends one record
through the partition's append path, waits until it is flushed (when the topic's flush settings
ask) and below the high watermark (`committed`: acks=all in a cluster), then catches up: a write
is visible in `state` only once read back from the log, never applied on the side.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..log import records as LR
from ..log.errors import LogError
from .errors import STORE_ERROR, RegistryError
from .state import RegistryState

if TYPE_CHECKING:
    from ..core.admin import TopicAdmin
    from ..core.partitions import Partitions
    from ..log.log import PartitionLog

log = logging.getLogger("tidelog.registry")

READ_BYTES = 1 << 20


async def _at_once(plog: PartitionLog, offset: int) -> None:
    """A single node: an appended record is committed at once."""


class SchemaStore:
    def __init__(
        self,
        admin: TopicAdmin,
        partitions: Partitions,
        topic: str = "_schemas",
        committed: Callable[[PartitionLog, int], Awaitable[None]] = _at_once,
    ) -> None:
        """`committed(plog, offset)`: returns once the record at `offset` is replicated (below the
        high watermark); a single node's default returns at once."""
        self.admin = admin
        self.partitions = partitions
        self.topic = topic
        self.committed = committed
        self.state = RegistryState()
        self.position = 0  # the next offset to read
        self.skipped = 0  # records this registry could not read (another vendor's extensions)

    def _log(self) -> PartitionLog:
        plog = self.partitions.get(self.topic, 0)
        if plog is None:
            raise RuntimeError(f"{self.topic}-0 is not hosted here")
        return plog

    def start(self) -> None:
        """Create the topic if missing (1 partition, compacted) and read it from its start."""
        self.admin.ensure_internal(self.topic, 1, {"cleanup.policy": "compact"})
        t0 = time.monotonic()
        n = self.catch_up()
        log.info(
            "schema registry: %d records of %s read in %.0f ms: %d subjects, %d schema ids",
            n,
            self.topic,
            (time.monotonic() - t0) * 1000,
            len(self.state.subjects),
            len(self.state.ids),
        )

    def catch_up(self) -> int:
        """Apply the records committed since the last call; how many."""
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

    async def write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        """Append `records` as one batch and return once they are read back into `state`; a
        refused append (a record over the topic's limits, a full disk) is RegistryError 50001."""
        plog = self._log()
        now = int(time.time() * 1000)
        try:
            info = plog.append_records([LR.Record(k, v, now) for k, v in records])
        except (LogError, OSError) as e:
            raise RegistryError(STORE_ERROR, f"Error while writing to {self.topic}: {e}", 500) from e
        self.partitions.notify(self.topic, 0)
        if info.flush_needed:
            await self.partitions.group_commit.flush(plog)
        await self.committed(plog, info.last_offset)
        self.catch_up()
