"""Committed offsets of groups: OffsetCommit, OffsetFetch, OffsetDelete, TxnOffsetCommit and its
completion at the transaction marker, retention expiry (`offsets.retention.minutes`), and cleanup
when a topic is deleted.

Who may commit is checked against the group's membership (generation, member id, static
instance); for a consumer group (KIP-848) against the member's epoch, and a commit with an older
epoch only when every partition it commits was assigned to the member at or before it (KIP-1251;
otherwise the whole OffsetCommit is STALE_MEMBER_EPOCH, as Kafka's validator throws); for a streams
group (KIP-1071) likewise, a partition standing for the task of its subtopology. What is committed
goes through the coordinator's `OffsetStore`, which writes it to `__consumer_offsets` before it
becomes visible.

For the transaction coordinator (the whole API it needs):

    await offsets.commit_txn(group_id, producer_id, producer_epoch, generation, member_id,
                             instance_id, {(topic, partition): OffsetValue}) -> {tp: error code}
        TxnOffsetCommit: validates like Kafka, then stages the offsets as transactional records
        of `producer_id` in the group's `__consumer_offsets` partition; not visible yet.
    offsets.partition_for(group_id) -> int
        the `__consumer_offsets` partition that holds the group (the transaction's partition).
    await offsets.complete_txn(producer_id, producer_epoch, commit)
        EndTxn reached the group: writes the COMMIT/ABORT marker to every `__consumer_offsets`
        partition holding staged offsets of that producer; on commit they become the committed
        offsets, on abort they are dropped. The caller must not write markers to
        `__consumer_offsets` itself. A replay after a crash applies the same rule.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ..log.clock import wall_clock_ms
from .consumer_views import commit_error, fetch_error
from .group import Group
from .records import OffsetValue
from .state import GroupState as S
from .streams_views import commit_error as streams_commit_error
from .streams_views import fetch_error as streams_fetch_error

if TYPE_CHECKING:
    from ..core.topics import Topic
    from ..wire.responses import OffsetFetchResponsePartition, OffsetFetchResponseTopic
    from .coordinator import GroupCoordinator
    from .store import OffsetStore

log = logging.getLogger("tidelog.groups")
NONE = 0
MAX_METADATA_BYTES = 4096  # offset.metadata.max.bytes
TopicPartition = tuple[str, int]


class GroupOffsets:
    def __init__(self, coord: GroupCoordinator) -> None:
        self.coord = coord
        self.groups = coord.groups
        cfg = coord.config
        self.retention_ms = cfg["offsets.retention.minutes"] * 60_000
        self.check_interval_ms = cfg["offsets.retention.check.interval.ms"]
        self._expiry_timer: asyncio.TimerHandle | None = None

    @property
    def store(self) -> OffsetStore:
        assert self.coord.store is not None
        return self.coord.store

    def partition_for(self, group_id: str) -> int:
        return self.store.partition_for(group_id)

    # ---- commits -----------------------------------------------------------------------------
    def _partition_error(self, topic: str, partition: int) -> int:
        t = self.coord.registry.get(topic)
        if t is None or not 0 <= partition < t.partitions:
            return E.unknown_topic_or_partition.value
        return NONE

    def _validate(
        self, offsets: dict[TopicPartition, OffsetValue]
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, OffsetValue]]:
        """(per-partition error codes, the offsets that may be written)."""
        results: dict[TopicPartition, int] = {}
        accepted: dict[TopicPartition, OffsetValue] = {}
        for (topic, partition), value in offsets.items():
            err = self._partition_error(topic, partition)
            if not err and len(value.metadata.encode()) > MAX_METADATA_BYTES:
                err = E.offset_metadata_too_large.value
            results[(topic, partition)] = err
            if not err:
                accepted[(topic, partition)] = value
        return results, accepted

    def _committer_error(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> int:
        """OffsetCommit's checks of who commits; creates an offsets-only group for a simple consumer."""
        if code := self.coord.status(group_id):
            return code
        if not group_id:
            return E.invalid_group_id.value
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                return E.illegal_generation.value
            self.groups[group_id] = Group(group_id)  # offsets only, no group management
            return NONE
        if group.is_(S.DEAD):
            return E.coordinator_not_available.value
        if group.static_member_fenced(member_id, instance_id):
            return E.fenced_instance_id.value
        if generation < 0 and group.is_(S.EMPTY):
            return NONE  # an admin or simple-consumer commit
        if group.is_(S.COMPLETING_REBALANCE):
            return E.rebalance_in_progress.value
        if member_id not in group.members:
            return E.unknown_member_id.value
        if generation != group.generation:
            return E.illegal_generation.value
        self.coord.membership.touch(group.members[member_id], group)
        return NONE

    def _consumer_check(
        self, group_id: str, member_id: str, instance_id: str | None, epoch: int, version: int, txn: bool
    ) -> tuple[int, Callable[[TopicPartition], int] | None] | None:
        """A consumer or streams group's commit check: (error, per-partition check); None: neither."""
        streams = self.coord.streams.groups.get(group_id)
        if streams is not None:
            if code := self.coord.status(group_id):
                return code, None
            serr, scheck = streams_commit_error(streams, member_id, instance_id, epoch, version, txn)
            if scheck is None:
                return serr, None
            return serr, lambda tp: scheck(tp[0], tp[1])
        group = self.coord.consumer.groups.get(group_id)
        if group is None:
            return None
        if code := self.coord.status(group_id):
            return code, None
        err, check = commit_error(group, member_id, instance_id, epoch, version, txn)
        if check is None:
            return err, None
        registry = self.coord.registry

        def by_name(tp: TopicPartition) -> int:
            topic = registry.get(tp[0])
            return check(topic.topic_id if topic is not None else None, tp[1])

        return err, by_name

    def _checked(
        self, offsets: dict[TopicPartition, OffsetValue], check: Callable[[TopicPartition], int] | None
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, OffsetValue]]:
        results, accepted = self._validate(offsets)
        if check is not None:
            for tp in list(accepted):
                if code := check(tp):
                    results[tp] = code
                    del accepted[tp]
        return results, accepted

    async def commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[TopicPartition, OffsetValue],
        version: int = 8,
    ) -> dict[TopicPartition, int]:
        """OffsetCommit: the error code of each partition. As Kafka (KafkaApis, then the group
        coordinator): a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION whatever
        else is wrong, and when none exists the group is not asked; a refusal of the committer
        (or a consumer group member's partition at an older epoch it did not hold then: Kafka's
        validator throws) answers every existing partition, and nothing is written."""
        results: dict[TopicPartition, int] = {}
        existing: dict[TopicPartition, OffsetValue] = {}
        for tp, value in offsets.items():
            if err := self._partition_error(*tp):
                results[tp] = err
            else:
                existing[tp] = value
        if not existing:
            return results
        check = None
        consumer = self._consumer_check(group_id, member_id, instance_id, generation, version, txn=False)
        if consumer is not None:
            err, check = consumer
        else:
            err = self._committer_error(group_id, generation, member_id, instance_id)
        if not err and check is not None:  # a partition whose metadata is too large is not checked
            fits = (tp for tp, v in existing.items() if len(v.metadata.encode()) <= MAX_METADATA_BYTES)
            err = next((code for tp in fits if (code := check(tp))), NONE)
        if err:
            return results | {tp: err for tp in existing}
        checked, accepted = self._validate(existing)
        results.update(checked)
        try:
            await self.store.commit(group_id, accepted)
        except Exception as e:  # noqa: BLE001 - any failed write is answered, with the guard's code if any
            code = _write_error(group_id, "offset commit", e)
            for tp in accepted:
                results[tp] = code
        return results

    def _txn_committer_error(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> int:
        """TxnOffsetCommit's checks (Kafka's): no rebalance check, a missing group is created."""
        if code := self.coord.status(group_id):
            return code
        if not group_id:
            return E.invalid_group_id.value
        group = self.groups.setdefault(group_id, Group(group_id))
        if group.is_(S.DEAD):
            return E.coordinator_not_available.value
        if member_id and member_id not in group.members:
            return E.unknown_member_id.value
        if generation >= 0 and generation != group.generation:
            return E.illegal_generation.value
        if group.static_member_fenced(member_id, instance_id):
            return E.fenced_instance_id.value
        return NONE

    async def commit_txn(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[TopicPartition, OffsetValue],
    ) -> dict[TopicPartition, int]:
        check = None
        consumer = self._consumer_check(group_id, member_id, instance_id, generation, 5, txn=True)
        if consumer is not None:
            err, check = consumer
        else:
            err = self._txn_committer_error(group_id, generation, member_id, instance_id)
        if err:
            return {tp: err for tp in offsets}
        results, accepted = self._checked(offsets, check)
        if accepted:
            try:
                await self.store.stage(producer_id, producer_epoch, group_id, accepted)
            except Exception as e:  # noqa: BLE001 - as in commit
                code = _write_error(group_id, "transactional offsets", e)
                for tp in accepted:
                    results[tp] = code
        return results

    async def complete_txn(self, producer_id: int, producer_epoch: int, commit: bool) -> None:
        await self.store.complete(producer_id, producer_epoch, commit)

    # ---- fetch and delete --------------------------------------------------------------------
    def fetch(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        require_stable: bool = False,
        member: tuple[str | None, int] | None = None,
    ) -> tuple[int, list[OffsetFetchResponseTopic]]:
        """(group error, topics) for OffsetFetch; `topics` None means every committed partition.
        `member`: (member id, member epoch) of OffsetFetch v9+, checked for a consumer group."""
        if code := self.coord.status(group_id):
            return code, []
        consumer = self.coord.consumer.groups.get(group_id)
        if consumer is not None and member is not None:
            if code := fetch_error(consumer, member[0], member[1]):
                return code, []
        streams = self.coord.streams.groups.get(group_id)
        if streams is not None and member is not None:
            if code := streams_fetch_error(streams, member[0], member[1]):
                return code, []
        committed = self.store.committed(group_id)
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for t, p in sorted(committed):
                by_topic.setdefault(t, []).append(p)
            topics = list(by_topic.items())
        out: list[OffsetFetchResponseTopic] = []
        for name, partitions in topics:
            parts: list[OffsetFetchResponsePartition] = []
            for p in partitions:
                v = committed.get((name, p))
                err = NONE
                if require_stable and self.store.has_pending(group_id, (name, p)):
                    v, err = None, E.unstable_offset_commit.value  # as Kafka: no offset until it settles
                parts.append(
                    {
                        "partition_index": p,
                        "committed_offset": -1 if v is None else v.offset,
                        "committed_leader_epoch": -1 if v is None else v.leader_epoch,
                        "metadata": "" if v is None else v.metadata,
                        "error_code": err,
                    }
                )
            out.append({"name": name, "partitions": parts})
        return NONE, out

    async def delete(self, group_id: str, tps: list[TopicPartition]) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete: (group error, per-partition errors)."""
        if code := self.coord.status(group_id):
            return code, {}
        consumer = self.coord.consumer.groups.get(group_id)
        group = self.groups.get(group_id)
        streams = self.coord.streams.groups.get(group_id)
        subscribed: set[str] | None = set()
        if consumer is not None:
            subscribed = consumer.subscribed_topic_names()
        elif streams is not None:
            subscribed = set(streams.source_topics()) if streams.members else set()
        elif group is None or group.is_(S.DEAD):
            return E.group_id_not_found.value, {}
        elif not group.is_(S.EMPTY):
            subscribed = group.subscribed_topics()
            if subscribed is None:
                return E.non_empty_group.value, {}
        results: dict[TopicPartition, int] = {}
        doomed = []
        for topic, partition in tps:
            if topic in subscribed:  # type: ignore[operator]  # None was answered above
                results[(topic, partition)] = E.group_subscribed_to_topic.value
            elif self.coord.registry.get(topic) is None:
                results[(topic, partition)] = E.unknown_topic_or_partition.value
            else:
                results[(topic, partition)] = NONE
                doomed.append((topic, partition))
        await self.store.delete_offsets(group_id, doomed)
        return NONE, results

    # ---- retention and topic deletion --------------------------------------------------------
    def schedule_expiry(self) -> None:
        loop = asyncio.get_running_loop()
        self._expiry_timer = loop.call_later(self.check_interval_ms / 1000, self._expiry_tick)

    def cancel_expiry(self) -> None:
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None

    def _expiry_tick(self) -> None:
        self.coord.spawn(self.expire())
        self.schedule_expiry()

    async def expire(self, now: int | None = None) -> int:
        """Remove offsets past retention (Kafka 2.1+ rules); drop groups left empty with no offsets.

        An explicit expire timestamp (OffsetCommit v1-v4 retention) wins. Otherwise offsets of an
        Empty consumer group expire `retention` after the group became empty; those of a group with
        no protocol (offsets only) `retention` after their commit; those of an active consumer group
        only for topics no member subscribes to, `retention` after their commit.
        """
        now = wall_clock_ms() if now is None else now
        removed = 0
        for group_id in list(self.groups):
            g = self.groups[group_id]
            committed = self.store.committed(group_id)
            subscribed: set[str] | None = None
            if not g.is_(S.EMPTY):
                subscribed = g.subscribed_topics()
                if subscribed is None:
                    continue
            doomed = []
            for (topic, partition), v in committed.items():
                if v.expire_timestamp >= 0:
                    expired = now >= v.expire_timestamp
                elif g.is_(S.EMPTY) and g.protocol_type:
                    expired = g.state_timestamp + self.retention_ms <= now
                elif g.is_(S.EMPTY) or (subscribed is not None and topic not in subscribed):
                    expired = v.commit_timestamp + self.retention_ms <= now
                else:
                    expired = False
                if expired:
                    doomed.append((topic, partition))
            if doomed:
                await self.store.delete_offsets(group_id, doomed)
                removed += len(doomed)
                log.info("group %s: %d committed offsets expired", group_id, len(doomed))
            if g.is_(S.EMPTY) and not self.store.committed(group_id) and self.groups.get(group_id) is g:
                await self.coord.drop_group(g)
        modern: list[tuple[str, set[str]]] = [
            (gid, cg.subscribed_topic_names() if cg.members else set())
            for gid, cg in self.coord.consumer.groups.items()
        ]
        modern += [
            (gid, set(sg.source_topics()) if sg.members else set()) for gid, sg in self.coord.streams.groups.items()
        ]
        for group_id, subscribed in modern:
            # a consumer or streams group's offsets expire `retention` after their commit, all of them
            # when the group is empty, else those of topics it does not read (Kafka's rule)
            doomed = [
                tp
                for tp, v in self.store.committed(group_id).items()
                if tp[0] not in subscribed
                and (
                    now >= v.expire_timestamp
                    if v.expire_timestamp >= 0
                    else v.commit_timestamp + self.retention_ms <= now
                )
            ]
            if doomed:
                await self.store.delete_offsets(group_id, doomed)
                removed += len(doomed)
                log.info("group %s: %d committed offsets expired", group_id, len(doomed))
        return removed

    def _expired(self, v: OffsetValue, now: int) -> bool:
        if v.expire_timestamp >= 0:
            return now >= v.expire_timestamp
        return bool(v.commit_timestamp + self.retention_ms <= now)

    def topic_event(self, event: str, topic: Topic) -> None:
        if event != "deleted" or self.coord.store is None:
            return
        for group_id, offs in list(self.store.offsets.items()):
            tps = [tp for tp in offs if tp[0] == topic.name]
            if tps:
                self.coord.spawn(self.store.delete_offsets(group_id, tps))


def _write_error(group_id: str, what: str, e: Exception) -> int:
    """The error a failed write of `__consumer_offsets` answers: the guard's (NOT_COORDINATOR when
    leadership moved, COORDINATOR_NOT_AVAILABLE when not replicated in time), the store's
    INVALID_PRODUCER_EPOCH (a transactional write of an ended transaction), else
    COORDINATOR_NOT_AVAILABLE (the client retries)."""
    code = getattr(e, "error_code", None)
    if code in (E.not_coordinator.value, E.coordinator_not_available.value, E.invalid_producer_epoch.value):
        log.info("group %s: %s not written: %s", group_id, what, e)
        return int(code)
    log.error("group %s: %s could not be written", group_id, what, exc_info=e)
    return E.coordinator_not_available.value
