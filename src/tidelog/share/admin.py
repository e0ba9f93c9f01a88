"""What the group coordinator asks of the share state (KIP-932), through the persister: initialize
the share partitions a share group starts to use, read their start offsets and lags, alter and
delete them (`groups.share_group.ShareStates`, `groups.share_offsets.ShareOffsetStates`).

- initializing writes a state without a start offset (-1, as Kafka's group coordinator does) for a
  share partition that has none; its leader fixes the start offset by the group's
  `share.auto.offset.reset` when it first loads it. A share partition with a state keeps it (a
  coordinator that failed to record that it initialized a partition tries again harmlessly);
- altering initializes the state again at the given start offset, at a state epoch above the
  present one, which fences the writes of a leader that loaded the older state (and makes a new
  share session there load it again: `manager.SharePartitions.refresh`). A state's epoch is taken
  from the clock (`ShareStateAdmin.new_state_epoch`), so one made again after a deletion differs from the old;
- the lag needs the partition's high watermark: this broker's when it leads the partition, else
  the leader's (`remote_end`, cluster mode; None then: no lag).

Every call raises LogError with the persister's error when it fails (the caller answers it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ..log.errors import LogError
from .coordinator import NO_EPOCH

if TYPE_CHECKING:
    from ..core.partitions import Partitions
    from ..core.topics import TopicRegistry
    from .manager import Leadership
    from .persister import Persister

UNINITIALIZED = -1
RemoteEnd = Callable[[str, int], Awaitable[int | None]]


def _check(code: int, what: str) -> None:
    if code:
        raise LogError(code, f"{what}: error {code}")


class ShareStateAdmin:
    def __init__(
        self,
        persister: Persister,
        registry: TopicRegistry,
        partitions: Partitions,
        leadership: Leadership,
        remote_end: RemoteEnd | None = None,
    ) -> None:
        self.persister = persister
        self.registry = registry
        self.partitions = partitions
        self.leadership = leadership
        self.remote_end = remote_end
        self._last_epoch = 0

    def new_state_epoch(self, current: int = -1) -> int:
        """The state epoch of a state made now: above `current`, at least the present second
        (UTC) and above every epoch given here before, so that a state made again after its
        deletion (whose epoch nobody remembers) has another epoch than the one a share-partition
        leader may still hold (int32: good until 2038, when it must move to a counter kept with
        the group)."""
        self._last_epoch = max(current + 1, int(time.time()), self._last_epoch + 1)
        return self._last_epoch

    async def initialize(self, group_id: str, partitions: Mapping[uuid.UUID, Iterable[int]]) -> None:
        for topic_id, ps in partitions.items():
            for p in ps:
                key = (group_id, topic_id, p)
                code, state = await self.persister.read(key, NO_EPOCH)
                _check(code, f"share state of {key} not read")
                if state is None:
                    _check(
                        await self.persister.initialize(key, self.new_state_epoch(), UNINITIALIZED),
                        f"{key} not initialized",
                    )

    async def summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, int, int] | None:
        """(start offset, leader epoch, records past it whose delivery is complete); None without
        state (or when the coordinator does not answer: absence of data, as Kafka's describe)."""
        code, found = await self.persister.summary((group_id, topic_id, partition))
        if code or found is None:
            return None
        return found.start_offset, found.leader_epoch, found.delivery_complete_count

    async def end_offset(self, topic_id: uuid.UUID, partition: int) -> int | None:
        topic = self.registry.by_id.get(topic_id)
        if topic is None:
            return None
        plog = self.partitions.get(topic.name, partition)
        if plog is not None and self.leadership.leader_epoch(topic.name, partition) is not None:
            return int(plog.high_watermark)
        if self.remote_end is not None:
            return await self.remote_end(topic.name, partition)
        return None

    async def reset(self, group_id: str, offsets: Mapping[uuid.UUID, Mapping[int, int]]) -> None:
        for topic_id, ps in offsets.items():
            for p, start in ps.items():
                key = (group_id, topic_id, p)
                code, state = await self.persister.summary(key)
                _check(code, f"share state of {key} not read")
                epoch = self.new_state_epoch(-1 if state is None else state.state_epoch)
                _check(await self.persister.initialize(key, epoch, start), f"{key} not altered")

    async def remove(self, group_id: str, partitions: Mapping[uuid.UUID, Iterable[int]]) -> None:
        for topic_id, ps in partitions.items():
            for p in ps:
                key = (group_id, topic_id, p)
                _check(await self.persister.delete(key), f"share state of {key} not deleted")
