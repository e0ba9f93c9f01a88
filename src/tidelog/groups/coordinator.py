"""The group coordinator: owns the groups and the offset store, loads them from
`__consumer_offsets` on start, and answers listing, describing and deleting groups. The protocols
live beside it: `membership` (the classic protocol: JoinGroup/SyncGroup/Heartbeat/LeaveGroup,
rebalances, session expiry), `consumer_protocol` (Kafka 4's consumer protocol, KIP-848:
ConsumerGroupHeartbeat, ConsumerGroupDescribe), `streams_protocol` (Kafka Streams' protocol, KIP-1071:
StreamsGroupHeartbeat, StreamsGroupDescribe), `share_group` (KIP-932) and `offsets`
(OffsetCommit/OffsetFetch/OffsetDelete, TxnOffsetCommit, retention). A group id names one group of
one of these kinds.

A single node coordinates every group. In a cluster (`start_clustered`) the coordinator of group
G is the leader of `__consumer_offsets` partition `partition_for(G)`, as in Kafka: the cluster node
calls `load_partition` when this broker becomes that leader (the partition's groups and offsets
are replayed) and `unload_partition` when it stops (parked requests get NOT_COORDINATOR and the
clients find the new coordinator); requests for groups of other partitions get NOT_COORDINATOR.
All state lives on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ..core.topics import OFFSETS_TOPIC
from ..log.errors import LogError
from .consumer_group import ConsumerGroup
from .consumer_protocol import ConsumerGroups
from .group import Group, Member
from .membership import ClassicJoin, Membership, join_error, sync_error
from .offsets import GroupOffsets
from .records import GroupKey, OffsetValue
from .share_group import ShareGroups
from .share_offsets import ShareOffsets, ShareOffsetStates
from .state import Event
from .state import GroupState as S
from .store import GroupLog, OffsetStore
from .streams_protocol import StreamsGroups

if TYPE_CHECKING:
    from ..core.admin import TopicAdmin
    from ..core.config import BrokerConfig
    from ..core.group_configs import GroupConfigs
    from ..wire.responses import (
        DescribedGroup,
        JoinGroupResponse,
        ListedGroup,
        MemberResponse,
        OffsetFetchResponseTopic,
        SyncGroupResponse,
    )

log = logging.getLogger("tidelog.groups")

NONE = 0


class GroupCoordinator:
    """Built by the broker's composition root with its narrow collaborators: the broker
    configuration (group.* and offsets.* keys), the topic admin (creates `__consumer_offsets`,
    tells of topic changes, knows which topics exist) and the `GroupLog` the offsets are
    written to (the log engine's `EngineGroupLog`; tests may give a `MemoryGroupLog`)."""

    def __init__(
        self,
        config: BrokerConfig,
        admin: TopicAdmin,
        group_log: GroupLog,
        shares: ShareOffsetStates | None = None,
        group_configs: GroupConfigs | None = None,
    ) -> None:
        self.config = config
        self.admin = admin
        self.registry = admin.registry
        self.num_partitions = config["offsets.topic.num.partitions"]
        self._group_log = group_log
        self.store: OffsetStore | None = None
        self.groups: dict[str, Group] = {}
        self.loaded = False
        # cluster mode: the __consumer_offsets partitions led (and loaded) here -> leader epoch
        self.owned: dict[int, int] | None = None
        # cluster mode: partitions led here whose log is not all committed yet (not loaded)
        self.loading: set[int] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.membership = Membership(self)
        self.consumer = ConsumerGroups(self)
        # streams groups (KIP-1071), with the groups' own `streams.*` configs when given
        self.streams = StreamsGroups(self, group_configs)
        # share groups (KIP-932), with the share state their partitions keep (None: no share groups,
        # as in tests that give no share state)
        self.share = ShareGroups(self, shares) if shares is not None else None
        self.share_offsets = ShareOffsets(self.share, shares) if self.share is not None and shares else None
        self.offsets = GroupOffsets(self)

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        topic = self.admin.ensure_internal(
            OFFSETS_TOPIC,
            self.num_partitions,
            {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.config["offsets.topic.segment.bytes"]),
            },
        )
        self.num_partitions = topic.partitions
        self.store = OffsetStore(self._group_log, self.num_partitions)
        self.store.load()
        self._restore()
        self.consumer.restore()
        self.streams.restore()
        if self.share is not None:
            self.share.restore()
        self.admin.listeners.append(self.offsets.topic_event)
        self.admin.listeners.append(self.consumer.topic_event)
        self.admin.listeners.append(self.streams.topic_event)
        self.loaded = True
        self.offsets.schedule_expiry()

    def start_clustered(self, num_partitions: int) -> None:
        """Cluster mode: nothing is loaded until this broker leads a partition of the topic."""
        self.num_partitions = num_partitions
        self.store = OffsetStore(self._group_log, num_partitions)
        self.owned = {}
        self.admin.listeners.append(self.offsets.topic_event)
        self.admin.listeners.append(self.consumer.topic_event)
        self.admin.listeners.append(self.streams.topic_event)
        self.loaded = True
        self.offsets.schedule_expiry()

    def set_num_partitions(self, n: int) -> None:
        """`__consumer_offsets` has `n` partitions (cluster mode: known once the topic exists)."""
        self.num_partitions = n
        if self.store is not None:
            self.store.set_num_partitions(n)

    def status(self, group_id: str) -> int:
        """NONE when this broker coordinates `group_id` now, else the error a client retries on."""
        if not self.loaded or self.store is None:
            return E.coordinator_load_in_progress.value
        if self.owned is None:
            return NONE
        partition = self.store.partition_for(group_id)
        if partition in self.owned:
            return NONE
        return E.coordinator_load_in_progress.value if partition in self.loading else E.not_coordinator.value

    def begin_load(self, partition: int) -> None:
        """Cluster mode: this broker leads `partition` but is still waiting for its log to be
        committed; its groups get COORDINATOR_LOAD_IN_PROGRESS until `load_partition`."""
        self.loading.add(partition)

    def load_partition(self, partition: int, leader_epoch: int) -> None:
        assert self.store is not None and self.owned is not None
        self.loading.discard(partition)
        n = self.store.load_partition(partition)
        restored = self._restore(partition) + self.consumer.restore(partition) + self.streams.restore(partition)
        if self.share is not None:
            restored += self.share.restore(partition)
        self.owned[partition] = leader_epoch
        log.info(
            "%s-%d: coordinating its groups (epoch %d): %d records, %d groups",
            OFFSETS_TOPIC,
            partition,
            leader_epoch,
            n,
            restored,
        )

    def unload_partition(self, partition: int) -> None:
        assert self.store is not None and self.owned is not None
        self.loading.discard(partition)
        self.owned.pop(partition, None)
        mine = self.store.partition_for
        for group_id in [g for g in self.groups if mine(g) == partition]:
            self.membership.shutdown(self.groups.pop(group_id), E.not_coordinator)
        self.consumer.unload(partition)
        self.streams.unload(partition)
        if self.share is not None:
            self.share.unload(partition)
        self.store.forget_partition(partition)
        log.info("%s-%d: no longer coordinating its groups", OFFSETS_TOPIC, partition)

    async def resume(self) -> None:
        """Nothing to finish after a load: a group's state is whole in its records."""

    async def complete_txn_partition(self, producer_id: int, producer_epoch: int, commit: bool, partition: int) -> int:
        """A transaction marker for `__consumer_offsets`-`partition` (cluster mode: sent by the
        transaction coordinator to this partition's leader): the producer's offsets staged there
        become visible or are dropped. 0, or the error of the write (NOT_COORDINATOR: moved)."""
        if self.store is None or (self.owned is not None and partition not in self.owned):
            return E.not_coordinator.value
        try:
            await self.store.complete_partition(producer_id, producer_epoch, commit, partition)
        except LogError as e:
            log.info("%s-%d: offsets of producer %d not completed: %s", OFFSETS_TOPIC, partition, producer_id, e)
            return e.error_code
        return NONE

    def stop(self) -> None:
        self.loaded = False
        self.offsets.cancel_expiry()
        for group in self.groups.values():
            self.membership.shutdown(group)
        self.consumer.stop()
        self.streams.stop()
        if self.share is not None:
            self.share.stop()
        for t in self._tasks:
            t.cancel()

    def _restore(self, partition: int | None = None) -> int:
        """Groups from the store's view (of one partition, or all); how many."""
        assert self.store is not None
        mine = self.store.partition_for
        restored = 0
        for group_id, value in self.store.groups.items():
            if partition is not None and mine(group_id) != partition:
                continue
            restored += 1
            group = Group(
                group_id,
                generation=value.generation,
                protocol_type=value.protocol_type or None,
                protocol_name=value.protocol,
            )
            if value.current_state_timestamp > 0:
                group.state_timestamp = value.current_state_timestamp
            for mv in value.members:
                member = Member(
                    mv.member_id,
                    mv.group_instance_id,
                    mv.client_id,
                    mv.client_host,
                    mv.rebalance_timeout,
                    mv.session_timeout,
                    value.protocol_type,
                    [(value.protocol or "", mv.subscription)],
                    mv.assignment,
                    is_new=False,
                )
                group.add(member)
                self.membership.touch(member, group)
            group.leader_id = value.leader if value.leader in group.members else group.leader_id
            if group.members:
                group.transition(Event.LOADED_ACTIVE)
            self.groups[group_id] = group
        for group_id in self.store.offsets:
            if (
                (partition is None or mine(group_id) == partition)
                and group_id not in self.store.consumer
                and group_id not in self.store.share
                and group_id not in self.store.streams
            ):
                self.groups.setdefault(group_id, Group(group_id))
        if partition is None:
            active = sum(1 for g in self.groups.values() if g.members)
            log.info("restored %d groups (%d with members)", len(self.groups), active)
        return restored

    def forget_classic(self, group_id: str, records: list[Any]) -> None:
        """An empty classic group gives its id to a consumer group: its metadata record is deleted
        with the consumer group's first records (its committed offsets stay, the group's own)."""
        g = self.groups.pop(group_id, None)
        if g is not None:
            self.membership.cancel_rebalance_timer(g)
        assert self.store is not None
        if group_id in self.store.groups:
            records.append((GroupKey(group_id), None))

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("group coordinator task failed", exc_info=task.exception())

    # ---- the protocol, as the handlers call it -----------------------------------------------
    async def join(self, req: ClassicJoin) -> JoinGroupResponse:
        """JoinGroup (see `membership.GroupMembership.join`)."""
        group_id, member_id = req.group_id, req.member_id
        streams = self.streams.groups.get(group_id)
        if streams is not None and not self.status(group_id):
            if streams.members:  # Kafka converts only an empty streams group to a classic one
                return join_error(E.inconsistent_group_protocol, "")
            try:
                await self.streams.drop(streams)
            except LogError as e:
                return join_error(E(e.error_code), member_id)
        consumer = self.consumer.groups.get(group_id)
        if consumer is not None and not self.status(group_id):
            if consumer.members:
                # the consumer group serves the classic member (online migration, `consumer_classic`)
                if not self.membership.min_session_ms <= req.session_ms <= self.membership.max_session_ms:
                    return join_error(E.invalid_session_timeout, member_id)
                return await self.consumer.classic.join(consumer, req)
            try:  # an empty consumer group becomes a classic group, as in Kafka
                await self.consumer.drop(consumer)
            except LogError as e:
                return join_error(E(e.error_code), member_id)
        return await self.membership.join(req)

    async def sync(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncGroupResponse:
        consumer = self._consumer_group(group_id)
        if consumer is not None:
            if not consumer.members:
                return sync_error(E.unknown_member_id)
            return self.consumer.classic.sync(
                consumer, member_id, instance_id, generation, protocol_type, protocol_name
            )
        return await self.membership.sync(
            group_id, member_id, instance_id, generation, protocol_type, protocol_name, assignments
        )

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> int:
        consumer = self._consumer_group(group_id)
        if consumer is not None:
            return self.consumer.classic.heartbeat(consumer, member_id, instance_id, generation)
        return self.membership.heartbeat(group_id, member_id, instance_id, generation)

    async def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[int, list[MemberResponse]]:
        consumer = self._consumer_group(group_id)
        if consumer is not None:
            return await self.consumer.classic.leave(consumer, leaving)
        return self.membership.leave(group_id, leaving)

    def _consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of that id coordinated here now, whose classic members (online
        migration) SyncGroup, Heartbeat and LeaveGroup go to."""
        if self.status(group_id):
            return None
        return self.consumer.groups.get(group_id)

    async def commit_offsets(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[tuple[str, int], OffsetValue],
        version: int = 8,
    ) -> dict[tuple[str, int], int]:
        return await self.offsets.commit(group_id, generation, member_id, instance_id, offsets, version)

    def fetch_offsets(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        require_stable: bool = False,
        member: tuple[str | None, int] | None = None,
    ) -> tuple[int, list[OffsetFetchResponseTopic]]:
        return self.offsets.fetch(group_id, topics, require_stable, member)

    async def delete_offsets(self, group_id: str, tps: list[tuple[str, int]]) -> tuple[int, dict[tuple[str, int], int]]:
        return await self.offsets.delete(group_id, tps)

    async def expire_offsets(self, now: int | None = None) -> int:
        return await self.offsets.expire(now)

    # ---- listing, describing, deleting -------------------------------------------------------
    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> tuple[int, list[ListedGroup]]:
        if not self.loaded:  # cluster mode: the groups coordinated here (Kafka's ListGroups is per broker)
            return E.coordinator_load_in_progress.value, []
        wanted = {s.lower() for s in states}
        kinds = {t.lower() for t in types}
        out: list[ListedGroup] = []
        if not kinds or "consumer" in kinds:
            out.extend(self.consumer.listed(wanted))
        if not kinds or "streams" in kinds:
            out.extend(self.streams.listed(wanted))
        if self.share is not None and (not kinds or "share" in kinds):
            out.extend(self.share.listed(wanted))
        for g in sorted(self.groups.values(), key=lambda g: g.group_id):
            if kinds and "classic" not in kinds:
                break
            if g.is_(S.DEAD) or (wanted and g.state.value.lower() not in wanted):
                continue
            out.append(
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type or "",
                    "group_state": g.state.value,
                    "group_type": "classic",
                }
            )
        return NONE, sorted(out, key=lambda g: g["group_id"])

    def describe(self, group_id: str, version: int = 6) -> DescribedGroup:
        base: DescribedGroup = {
            "error_code": NONE,
            "group_id": group_id,
            "group_state": S.DEAD.value,
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
        }
        if code := self.status(group_id):
            return {**base, "error_code": code}
        g = self.groups.get(group_id)
        if g is None:
            if version < 6:
                return base
            other = (
                group_id in self.consumer.groups
                or group_id in self.streams.groups
                or (self.share is not None and group_id in self.share.groups)
            )
            what = "is not a classic group" if other else "not found"
            return {**base, "error_code": E.group_id_not_found, "error_message": f"Group {group_id} {what}."}
        stable = g.is_(S.STABLE)
        return {
            **base,
            "group_state": g.state.value,
            "protocol_type": g.protocol_type or "",
            "protocol_data": (g.protocol_name or "") if stable else "",
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": m.metadata(g.protocol_name) if stable else b"",
                    # as Kafka: the last assignment, in every state (metadata only when Stable)
                    "member_assignment": m.assignment,
                }
                for m in g.members.values()
            ],
        }

    async def delete_group(self, group_id: str) -> int:
        if code := self.status(group_id):
            return code
        if not group_id:
            return E.invalid_group_id.value
        consumer = self.consumer.groups.get(group_id)
        if consumer is not None:
            if consumer.members:
                return E.non_empty_group.value
            await self.consumer.drop(consumer)
            assert self.store is not None
            await self.store.delete_group(group_id)
            return NONE
        streams = self.streams.groups.get(group_id)
        if streams is not None:
            if streams.members:
                return E.non_empty_group.value
            await self.streams.drop(streams)
            assert self.store is not None
            await self.store.delete_group(group_id)
            return NONE
        share = self.share.groups.get(group_id) if self.share is not None else None
        if share is not None and self.share is not None:
            if share.members:
                return E.non_empty_group.value
            await self.share.drop(share)
            return NONE
        g = self.groups.get(group_id)
        if g is None or g.is_(S.DEAD):
            return E.group_id_not_found.value
        if not g.is_(S.EMPTY):
            return E.non_empty_group.value
        await self.drop_group(g)
        return NONE

    async def drop_group(self, g: Group) -> None:
        g.transition(Event.DELETED)
        self.membership.cancel_rebalance_timer(g)
        if self.groups.get(g.group_id) is g:
            del self.groups[g.group_id]
        assert self.store is not None
        await self.store.delete_group(g.group_id)
        log.info("group %s deleted", g.group_id)
