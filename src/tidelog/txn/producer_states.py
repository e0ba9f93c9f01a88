"""The producer state of every partition this broker holds: the one owner of it (Kafka's
`ProducerStateManager`, one per log), used by the Produce path, by the replica fetcher and by
marker writes; the transaction coordinator sits above it and never touches it directly.

- `append(...)`: Produce's append. The batch headers are checked against the partition's
  producer state (`producers.PartitionProducers`) between validation and the write; a retried
  batch gets its original offsets back; a transactional batch must belong to an Ongoing
  transaction that includes the partition (the caller's `verify`: KIP-890 verification).
- `append_as_follower(...)` / `rebuild_after_truncate(...)`: a follower replays the leader's
  batches into the same state, so that it can lead with it.
- `write_marker(...)`: a COMMIT/ABORT control batch, always appended (a retry, or a newer
  coordinator's marker where nothing is open, is written too); it closes the producer's open
  transaction on the partition, records aborted transactions in `.txnindex`, moves the LSO.
- State is loaded lazily per partition from the newest valid snapshot plus a replay of the log
  after it (`snapshots`); a snapshot is written at every segment roll and at `stop()`. A crash
  loses nothing: the replay rebuilds what the last snapshot lacks.

`__transaction_state` and `__consumer_offsets` are written by the coordinators, never through
Produce: they have no producer state here (`UNTRACKED`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.topics import OFFSETS_TOPIC, STATE_TOPIC
from ..log.clock import wall_clock_ms
from ..log.errors import LogAppendError, LogError
from ..log.log import AppendInfo, PartitionLog
from ..log.records import CONTROL_ABORT, CONTROL_COMMIT
from ..wire.errors import INVALID_PRODUCER_EPOCH, INVALID_TOPIC_EXCEPTION, TRANSACTION_COORDINATOR_FENCED
from .producers import DuplicateBatch, PartitionProducers
from .snapshots import load_state, replay_appended, write_snapshot

if TYPE_CHECKING:
    from ..core.admin import TopicAdmin
    from ..core.partitions import Partitions
    from ..core.topics import Topic

log = logging.getLogger("tidelog.txn")

UNTRACKED = (STATE_TOPIC, OFFSETS_TOPIC)  # written by coordinators, never through Produce

TopicPartition = tuple[str, int]


class ProducerStates:
    """Built by the composition root after the partitions (the log engine), before the replica
    fetcher and the transaction coordinator, which both use it."""

    def __init__(self, admin: TopicAdmin, partitions: Partitions) -> None:
        self.partitions = partitions
        self.states: dict[TopicPartition, PartitionProducers] = {}
        self._active_base: dict[TopicPartition, int] = {}
        admin.listeners.append(self._topic_event)

    # ---- lifecycle -------------------------------------------------------------------------------
    def load_all(self) -> int:
        """Load the state of every partition log open now; the number of open transactions."""
        for plog in list(self.partitions.manager.logs()):
            if plog.topic not in UNTRACKED:
                self._load(plog)
        return sum(s.open_txn_count() for s in self.states.values())

    def stop(self) -> None:
        """A snapshot of every partition's state (the next start replays nothing)."""
        for (topic, partition), state in list(self.states.items()):
            plog = self.partitions.manager.get(topic, partition)
            if plog is not None:
                try:
                    write_snapshot(plog, state)
                except OSError as e:
                    log.warning("%s-%d: producer snapshot not written: %s", topic, partition, e)

    def _load(self, plog: PartitionLog) -> PartitionProducers:
        state = load_state(plog)
        key = (plog.topic, plog.partition)
        self.states[key] = state
        self._active_base[key] = plog.segments[-1].base_offset
        plog.set_first_unstable_offset(state.first_unstable_offset())
        return state

    def state_for(self, topic: str, partition: int, plog: PartitionLog) -> PartitionProducers:
        state = self.states.get((topic, partition))
        return state if state is not None else self._load(plog)

    def forget(self, topic: str, partition: int) -> None:
        """The partition's local copy is gone (reassigned away): so is its producer state."""
        self.states.pop((topic, partition), None)
        self._active_base.pop((topic, partition), None)

    def _topic_event(self, event: str, topic: Topic) -> None:
        if event == "deleted":
            for key in [k for k in self.states if k[0] == topic.name]:
                self.forget(*key)

    def open_txn_at(self, topic: str, partition: int, producer_id: int, epoch: int) -> bool:
        """Whether this producer's transaction at `epoch` is open on the partition here already."""
        state = self.states.get((topic, partition))
        if state is None or not state.has_open_txn(producer_id):
            return False
        entry = state.producers.get(producer_id)
        return entry is not None and entry.epoch == epoch

    def expire(self, now: int, expiration_ms: int) -> int:
        """Forget producers idle longer than `expiration_ms`; how many were."""
        return sum(s.expire(now, expiration_ms) for s in self.states.values())

    def producer_count(self) -> int:
        pids: set[int] = set()
        for s in self.states.values():
            pids.update(s.producers)
        return len(pids)

    # ---- produce path --------------------------------------------------------------------------
    def append(
        self,
        topic: str,
        partition: int,
        plog: PartitionLog,
        records: bytes | memoryview,
        now: int,
        verify: Callable[[int, int], int],
        issued: Callable[[int], bool],
    ) -> AppendInfo:
        """Produce's append with producer-state checks; same AppendInfo as `plog.append`.
        `verify(producer_id, epoch)`: 0 when a transactional batch of that producer may go to
        this partition now; `issued(producer_id)`: whether that producer id was ever given out."""
        if topic in UNTRACKED:  # as Kafka: clients never write the coordinators' topics
            raise LogAppendError(INVALID_TOPIC_EXCEPTION, f"cannot append to internal topic {topic}")
        state = self.state_for(topic, partition, plog)
        staged = None

        def check(v: Any) -> None:
            nonlocal staged
            staged = state.check(v.batches, verify, issued)

        try:
            info = plog.append(records, now_ms=now, before_write=check)
        except DuplicateBatch as d:
            log.debug("%s-%d: duplicate batch answered with offset %d", topic, partition, d.first_offset)
            return AppendInfo(d.first_offset, d.last_offset, -1, plog.log_start_offset, -1, -1, 0, 0)
        if staged:
            state.apply(staged)
            if any(e.txn_first_offset is not None for e in staged.values()):
                plog.set_first_unstable_offset(state.first_unstable_offset())
            self._after_append(plog, state)
        return info

    def _after_append(self, plog: PartitionLog, state: PartitionProducers) -> None:
        key = (plog.topic, plog.partition)
        base = plog.segments[-1].base_offset
        if self._active_base.get(key) != base:
            self._active_base[key] = base
            try:
                write_snapshot(plog, state)
            except OSError as e:
                log.warning("%s-%d: producer snapshot not written: %s", plog.topic, plog.partition, e)

    # ---- replication (cluster mode: this broker follows the partition's leader) -------------------
    def append_as_follower(self, topic: str, partition: int, plog: PartitionLog, data: bytes) -> None:
        """Append batches fetched from the leader and replay their headers into the producer
        state (sequences, open transactions, markers and the .txnindex, the LSO), so this
        replica can lead with the same state."""
        state = self.state_for(topic, partition, plog)
        v = plog.append_as_follower(data)
        if not v.batches:
            return
        replay_appended(plog, state, data, v.batches)
        plog.set_first_unstable_offset(state.first_unstable_offset())
        self._after_append(plog, state)

    def rebuild_after_truncate(self, topic: str, partition: int, plog: PartitionLog) -> None:
        """The log was truncated: producer state is rebuilt from the newest snapshot still valid
        (`load_state` drops the snapshots past the new log end)."""
        self.states.pop((topic, partition), None)
        self._load(plog)

    # ---- markers ----------------------------------------------------------------------------------
    def write_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int = 0,
        transaction_version: int = 0,
    ) -> tuple[PartitionLog, int] | None:
        """Append a COMMIT/ABORT marker for the producer, closing its open transaction on the
        partition if it has one: (the log written to, to flush; the marker's offset, to wait
        for its replication), or None when the partition does not exist here.

        The marker is appended even when nothing is open (as Kafka): a retried marker - the
        first one's replication wait failed, or its answer was lost - is then waited on like the
        first, and the coordinator epoch of a newer coordinator is recorded where its
        transaction left nothing, so that a deposed coordinator's late marker is refused there
        (TRANSACTION_COORDINATOR_FENCED) instead of ending the producer's next transaction. A
        marker of an older producer epoch is refused (INVALID_PRODUCER_EPOCH).

        Transaction version 2 (KIP-890, KIP-1228): the coordinator bumped the epoch before writing
        the markers, so a valid marker's epoch is above the producer's epoch here; one at the same
        epoch is a late marker of an earlier transaction and refused (INVALID_PRODUCER_EPOCH)
        unless nothing is open (a retry of a marker already written, written again)."""
        plog: PartitionLog | None = self.partitions.get(topic, partition)
        if plog is None:
            return None
        state = self.state_for(topic, partition, plog)
        known = state.producers.get(producer_id)
        if known is not None and coordinator_epoch < known.coordinator_epoch:
            # a deposed coordinator (its partition has a newer leader epoch) must not end the
            # transaction the new one owns (Kafka's TRANSACTION_COORDINATOR_FENCED)
            raise LogError(
                TRANSACTION_COORDINATOR_FENCED,
                f"{topic}-{partition}: marker of coordinator epoch {coordinator_epoch} for producer "
                f"{producer_id}, which saw epoch {known.coordinator_epoch}",
            )
        stale = known is not None and (
            producer_epoch < known.epoch
            or transaction_version >= 2
            and producer_epoch == known.epoch
            and known.txn_first_offset is not None
        )
        if known is not None and stale:
            raise LogError(
                INVALID_PRODUCER_EPOCH,
                f"{topic}-{partition}: marker of producer {producer_id} epoch "
                f"{producer_epoch}, which is at epoch {known.epoch}",
            )
        info = plog.append_control(
            CONTROL_COMMIT if commit else CONTROL_ABORT, producer_id, producer_epoch, coordinator_epoch
        )
        aborted = state.complete_txn(
            producer_id, producer_epoch, info.first_offset, commit, coordinator_epoch, wall_clock_ms()
        )
        if aborted is not None:
            plog.append_aborted_txn(aborted)
        plog.set_first_unstable_offset(state.first_unstable_offset())
        self._after_append(plog, state)
        return plog, info.first_offset
