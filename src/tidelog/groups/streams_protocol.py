"""Streams groups (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe, the member timers, and
the records that make a streams group durable, as Kafka 4.3.1's GroupMetadataManager runs them
(the state model is `streams_group`'s, the topology's configuration `streams_topology`'s).

One heartbeat:

1. Checks (`streams_requests.invalid`): 4.3.1 supports no static members, task offsets, warm-up
   tasks or source regexes yet (INVALID_REQUEST); epoch 0 joins with a topology and a rebalance
   timeout, -1 leaves.
2. The group (epoch 0 creates it; an empty classic group of that id becomes a streams group) and
   the member (epoch 0 creates it; another epoch than the member's is FENCED_MEMBER_EPOCH, but for
   its previous epoch with tasks it still holds). The member's metadata is updated: a change is
   written and bumps the group epoch.
3. The topology: the first member's initializes the group's (written); an older epoch's is stale
   (status STALE_TOPOLOGY for such a member); another at the same epoch is INVALID_REQUEST.
4. The topology is configured against the topics' metadata (`streams_topology.configure`) when the
   group has none configured or the topics changed; a new metadata hash, a newly validated
   topology, or other assignment configs (`num.standby.replicas`) bump the group epoch. Missing
   internal topics are returned to the handler, which creates them (status MISSING_INTERNAL_TOPICS).
5. A group epoch past the assignment epoch computes a new target with the sticky task assignor
   (empty while the topology is not ready), unless the group's initial rebalance delay is running
   (`group.streams.initial.rebalance.delay.ms` after its first member joins: status
   ASSIGNMENT_DELAYED, then the timer computes it) or the last one is younger than
   `group.streams.assignment.interval.ms` (ASSIGNMENT_DELAYED; the next heartbeat computes it).
6. The member is reconciled one step (`streams_group.reconcile`), its session timeout armed
   (`group.streams.session.timeout.ms`), and its rebalance timeout while it must revoke tasks.
7. The records are written to the group's `__consumer_offsets` partition, then the answer: the
   tasks when they changed or the member joined, the endpoints' partitions when the member's
   endpoint epoch is behind, and the statuses.

A write that fails answers its error; the state in memory is then ahead of the log until the
group's next write (as for consumer groups; Kafka's runtime rolls back instead).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ..log.errors import LogError
from . import streams_persist as P
from .streams_assignor import MemberSpec, StickyTaskAssignor, SubtopologySpec
from .streams_group import (
    EMPTY_TASKS,
    FencedUnknownState,
    Member,
    MemberState,
    StreamsGroup,
    TasksTuple,
    reconcile,
)
from .streams_internal import InternalTopics
from .streams_records import StreamsGroupTopologyKey, StreamsGroupTopologyValue
from .streams_requests import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    StreamsError,
    StreamsHeartbeat,
    apply_heartbeat,
    check_epoch,
    check_tasks,
    error_response,
    invalid,
)
from .streams_topology import (
    ASSIGNMENT_DELAYED,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    ConfiguredTopology,
    InternalTopic,
    TopologyError,
    configure,
    required_topics,
    same_topology,
)
from .streams_views import described, described_error, endpoint_to_partitions, heartbeat_tasks, listed

if TYPE_CHECKING:
    from ..core.group_configs import GroupConfigs
    from ..wire.responses import ListedGroup, StreamsGroupDescribeDescribedGroup, StreamsGroupHeartbeatResponse
    from .coordinator import GroupCoordinator

log = logging.getLogger("tidelog.groups")
NONE = 0
MAX_TIMEOUT_MS = 2**31 - 1
Status = tuple[int, str]


@dataclass
class HeartbeatResult:
    response: StreamsGroupHeartbeatResponse
    to_create: dict[str, InternalTopic]


class StreamsGroups:
    """The streams groups coordinated here, beside the classic and consumer ones (a group id is one
    of them). Owned by the `GroupCoordinator`, which loads and unloads them with `__consumer_offsets`
    partitions."""

    def __init__(self, coord: GroupCoordinator, group_configs: GroupConfigs | None = None) -> None:
        self.coord = coord
        self.group_configs = group_configs
        self.max_size: int = coord.config["group.streams.max.size"]
        self.assignor = StickyTaskAssignor()
        self.groups: dict[str, StreamsGroup] = {}
        self._session: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._rebalance: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._initial_delay: dict[str, asyncio.TimerHandle] = {}
        self.internal_topics = InternalTopics(coord.admin, coord.spawn)

    def _config(self, group_id: str, key: str) -> int:
        """A group's `streams.*` config, else the broker's `group.streams.*`."""
        if self.group_configs is not None:
            return self.group_configs.get_int(group_id, f"streams.{key}")
        return int(self.coord.config[f"group.streams.{key}"])

    # ---- the heartbeat ---------------------------------------------------------------------------
    async def heartbeat(self, hb: StreamsHeartbeat) -> HeartbeatResult:
        if bad := invalid(hb):
            return HeartbeatResult(error_response(*bad), {})
        if code := self.coord.status(hb.group_id):
            return HeartbeatResult(error_response(E(code)), {})
        try:
            to_create: dict[str, InternalTopic] = {}
            response: StreamsGroupHeartbeatResponse | None = None
            if hb.member_epoch == LEAVE_EPOCH:
                records = self._leave(hb)
            else:
                records, response, to_create = self._heartbeat(hb)
        except StreamsError as e:
            return HeartbeatResult(error_response(e.code, e.message), {})
        except TopologyError as e:
            return HeartbeatResult(error_response(e.code, e.message), {})
        if records:
            try:
                await self._write(hb.group_id, records)
            except LogError as e:
                return HeartbeatResult(error_response(E(e.error_code), e.message), {})
        if response is None:
            response = {
                **error_response(E.none),
                "member_id": hb.member_id,
                "member_epoch": hb.member_epoch,
            }
        return HeartbeatResult(response, to_create)

    def _heartbeat(
        self, hb: StreamsHeartbeat
    ) -> tuple[list[P.Record], StreamsGroupHeartbeatResponse, dict[str, InternalTopic]]:
        records: list[P.Record] = []
        statuses: list[Status] = []
        joining = hb.member_epoch == JOIN_EPOCH
        group = self._group(hb.group_id, joining, records)
        created = group.group_id not in self.groups
        member, updated = self._member(group, hb, joining)
        bump = False
        if hb.member_id not in group.members or updated.metadata() != member.metadata():
            records.append(P.member_record(group.group_id, updated))
            bump = True
        old_topology = group.topology
        topology = self._topology(group, hb, records)
        if old_topology is not None and updated.topology_epoch < old_topology.epoch:
            statuses.append(
                (
                    STALE_TOPOLOGY,
                    f"The member's topology epoch {updated.topology_epoch} is behind the group's topology epoch "
                    f"{old_topology.epoch}.",
                )
            )
        group.topology = topology
        configured, metadata_hash, changed = self._configured(group, old_topology is None)
        validated = -1
        if configured.ready:
            validated = topology.epoch
            for tasks in (hb.active, hb.standby, hb.warmup):
                check_tasks(configured, tasks)
        configs = {"num.standby.replicas": str(self._config(group.group_id, "num.standby.replicas"))}
        bump = bump or changed or validated != group.validated_topology_epoch
        bump = bump or configs != group.last_assignment_configs
        was_empty = not group.members
        group.put_member(updated)
        if bump:
            self._bump(group, metadata_hash, validated, configs, records)
        if was_empty:
            self._start_initial_delay(group.group_id)
        target_epoch, target = self._target(group, updated.member_id, configured, statuses, records)
        try:
            reconciled = self._reconciled(group, updated, target_epoch, target, hb.owned(), records)
        except FencedUnknownState:
            raise StreamsError(
                E.fenced_member_epoch,
                "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin.",
            ) from None
        self._arm_session(group.group_id, reconciled.member_id)
        if hb.shutdown_application and group.shutdown_requested_by is None:
            group.shutdown_requested_by = reconciled.member_id
            log.info("streams group %s: member %s requested the application's shutdown", group.group_id, hb.member_id)
        if created:
            self.groups[group.group_id] = group
        response = self._response(group, hb, member, reconciled, created)
        to_create: dict[str, InternalTopic] = {}
        if configured.status is not None:
            to_create = configured.to_create
            statuses.append(configured.status)
        if group.shutdown_requested_by is not None:
            statuses.append(
                (
                    SHUTDOWN_APPLICATION,
                    f"Streams group member {group.shutdown_requested_by} encountered a fatal error and requested "
                    "a shutdown for the entire application.",
                )
            )
        response["status"] = [{"status_code": c, "status_detail": d} for c, d in statuses]
        return records, response, to_create

    def _member(self, group: StreamsGroup, hb: StreamsHeartbeat, joining: bool) -> tuple[Member, Member]:
        """(the member as it was, as this heartbeat updates it); a joining member is created."""
        if joining and len(group.members) >= self.max_size:
            raise StreamsError(
                E.group_max_size_reached,
                f"The streams group has reached its maximum capacity of {self.max_size} members.",
            )
        member = group.members.get(hb.member_id)
        if member is None:
            if not joining:
                raise StreamsError(
                    E.unknown_member_id, f"Member {hb.member_id} is not a member of group {group.group_id}."
                )
            member = Member(hb.member_id)
            log.info("streams group %s: member %s joins", group.group_id, hb.member_id)
        check_epoch(member, hb)
        return member, apply_heartbeat(member, hb)

    def _configured(self, group: StreamsGroup, new_topology: bool) -> tuple[ConfiguredTopology, int, bool]:
        """(the group's topology configured against the topics, the topics' metadata hash, whether
        that hash changed). Configured again when the topology is new or the topics changed."""
        assert group.topology is not None
        configured = group.configured
        metadata_hash = group.metadata_hash
        changed = False
        if new_topology or configured is None or group.metadata_expired:
            metadata_hash = self._metadata_hash(required_topics(group.topology))
            changed = metadata_hash != group.metadata_hash
            if new_topology or changed or configured is None:
                configured = configure(group.topology, self._partitions, metadata_hash)
                group.configured = configured
                log.info(
                    "streams group %s: topology epoch %d configured%s",
                    group.group_id,
                    group.topology.epoch,
                    "" if configured.ready else f" but not ready: {configured.status}",
                )
        return configured, metadata_hash, changed

    def _bump(
        self, group: StreamsGroup, metadata_hash: int, validated: int, configs: dict[str, str], records: list[P.Record]
    ) -> None:
        group.group_epoch += 1
        group.metadata_hash = metadata_hash
        group.validated_topology_epoch = validated
        group.last_assignment_configs = configs
        group.metadata_expired = False
        records.append(P.metadata_record(group))
        log.info("streams group %s: epoch %d", group.group_id, group.group_epoch)

    def _response(
        self, group: StreamsGroup, hb: StreamsHeartbeat, before: Member, member: Member, created: bool
    ) -> StreamsGroupHeartbeatResponse:
        """The answer, less its statuses: the tasks when they changed or the member joined, the
        endpoints' partitions when the member's endpoint epoch is behind the group's."""
        response: StreamsGroupHeartbeatResponse = {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": None,
            "member_id": member.member_id,
            "member_epoch": member.member_epoch,
            "heartbeat_interval": self._config(group.group_id, "heartbeat.interval.ms"),
            "acceptable_recovery_lag": 0,
            "task_offset_interval": 0,
            "status": [],
            "active_tasks": None,
            "standby_tasks": None,
            "warmup_tasks": None,
            "endpoint_information_epoch": 0,
            "partitions_by_user_endpoint": None,
        }
        if hb.member_epoch == JOIN_EPOCH or member.assigned != before.assigned:
            response["active_tasks"] = heartbeat_tasks(member.assigned.active)
            response["standby_tasks"] = heartbeat_tasks(member.assigned.standby)
            response["warmup_tasks"] = heartbeat_tasks(member.assigned.warmup)
            if member.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != hb.endpoint_information_epoch:
            others = [m for m in group.members.values() if m.member_id != member.member_id]
            endpoints = [endpoint_to_partitions(group, m, self._partitions) for m in [*others, member]]
            response["partitions_by_user_endpoint"] = [e for e in endpoints if e is not None]
        if not created:  # a group created by this heartbeat answers epoch 0, as Kafka
            response["endpoint_information_epoch"] = group.endpoint_information_epoch
        return response

    def _topology(
        self, group: StreamsGroup, hb: StreamsHeartbeat, records: list[P.Record]
    ) -> StreamsGroupTopologyValue:
        """The group's topology after this heartbeat (the request's initializes it)."""
        current = group.topology
        if hb.topology is not None:
            if current is None:
                log.info("streams group %s: topology epoch %d initialized", group.group_id, hb.topology.epoch)
                records.append((StreamsGroupTopologyKey(group.group_id), hb.topology))
                return hb.topology
            if current.epoch > hb.topology.epoch:
                return current
            if not same_topology(current, hb.topology):
                raise StreamsError(E.invalid_request, "Topology updates are not supported yet.")
            return current
        if current is None:
            raise StreamsError(E.unknown_server_error, "The topology is null and the group topology is also null.")
        return current

    def _group(self, group_id: str, create: bool, records: list[P.Record]) -> StreamsGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if group_id in self.coord.consumer.groups or (
            self.coord.share is not None and group_id in self.coord.share.groups
        ):
            raise StreamsError(E.group_id_not_found, f"Group {group_id} is not a streams group.")
        classic = self.coord.groups.get(group_id)
        if classic is not None and not classic.is_empty_classic():
            raise StreamsError(E.group_id_not_found, f"Group {group_id} is not a streams group.")
        if not create:
            raise StreamsError(E.group_id_not_found, f"Streams group {group_id} not found.")
        if classic is not None:
            self.coord.forget_classic(group_id, records)
            log.info("group %s: the empty classic group is now a streams group", group_id)
        return StreamsGroup(group_id)

    # ---- the target assignment -----------------------------------------------------------------
    def _target(
        self,
        group: StreamsGroup,
        member_id: str,
        configured: ConfiguredTopology,
        statuses: list[Status] | None,
        records: list[P.Record],
    ) -> tuple[int, TasksTuple]:
        now = int(time.time() * 1000)
        if group.group_id in self._initial_delay:
            if statuses is not None:
                statuses.append(
                    (ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay.")
                )
            return group.assignment_epoch, EMPTY_TASKS
        if group.assignment_epoch >= group.group_epoch:
            return group.assignment_epoch, group.target.get(member_id, EMPTY_TASKS)
        interval = self._config(group.group_id, "assignment.interval.ms")
        if group.assignment_timestamp and interval and now < group.assignment_timestamp + interval:
            if statuses is not None:
                statuses.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured assignment interval."))
            return group.assignment_epoch, group.target.get(member_id, EMPTY_TASKS)
        self._assign(group, configured, records, now)
        return group.assignment_epoch, group.target.get(member_id, EMPTY_TASKS)

    def _assign(self, group: StreamsGroup, configured: ConfiguredTopology, records: list[P.Record], now: int) -> None:
        new: dict[str, TasksTuple] = {}
        if configured.ready and configured.subtopologies:
            specs = {
                m.member_id: MemberSpec(
                    m.process_id,
                    group.target.get(m.member_id, EMPTY_TASKS).active,
                    group.target.get(m.member_id, EMPTY_TASKS).standby,
                )
                for m in group.members.values()
            }
            subs = {
                sid: SubtopologySpec(sub.tasks, bool(sub.changelog_topics))
                for sid, sub in configured.subtopologies.items()
            }
            result = self.assignor.assign(specs, subs, group.last_assignment_configs)
            for member_id in group.members:
                active, standby = result.get(member_id, ({}, {}))
                new[member_id] = TasksTuple(active, standby, {})
        else:
            new = dict.fromkeys(group.members, EMPTY_TASKS)
        for member_id, tasks in new.items():
            old = group.target.get(member_id)
            if old is None or old != tasks:
                records.append(P.target_record(group.group_id, member_id, tasks))
        group.target = new
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp = now
        records.append(P.target_metadata_record(group))
        log.info("streams group %s: target assignment for epoch %d", group.group_id, group.assignment_epoch)

    def _start_initial_delay(self, group_id: str) -> None:
        """A group's first member joined: its first assignment waits for the initial rebalance delay."""
        delay = self._config(group_id, "initial.rebalance.delay.ms")
        if delay > 0 and group_id not in self._initial_delay:
            loop = asyncio.get_running_loop()
            self._initial_delay[group_id] = loop.call_later(delay / 1000, self._initial_delay_over, group_id)

    def _initial_delay_over(self, group_id: str) -> None:
        """The initial rebalance delay of a new group passed: its first target is computed."""
        self._initial_delay.pop(group_id, None)
        group = self.groups.get(group_id)
        if group is None or not group.members or group.configured is None or self.coord.status(group_id):
            return
        if group.group_epoch <= group.assignment_epoch:
            return
        records: list[P.Record] = []
        self._assign(group, group.configured, records, int(time.time() * 1000))
        self.coord.spawn(self._write_logged(group_id, records))

    def _reconciled(
        self,
        group: StreamsGroup,
        member: Member,
        target_epoch: int,
        target: TasksTuple,
        owned: TasksTuple | None,
        records: list[P.Record],
    ) -> Member:
        if member.is_reconciled_to(target_epoch):
            return member
        moved = reconcile(member, target_epoch, target, group, owned)
        if moved == member:
            return member
        group.put_member(moved)
        records.append(P.assignment_record(group.group_id, moved))
        log.info(
            "streams group %s: member %s at epoch %d (%s)",
            group.group_id,
            moved.member_id,
            moved.member_epoch,
            moved.state.name,
        )
        if moved.state is MemberState.UNREVOKED_TASKS:
            self._arm_rebalance(group.group_id, moved)
        else:
            self._cancel(self._rebalance, (group.group_id, moved.member_id))
        return moved

    # ---- leaving and fencing ---------------------------------------------------------------------
    def _leave(self, hb: StreamsHeartbeat) -> list[P.Record]:
        group = self.groups.get(hb.group_id)
        if group is None:
            is_other = hb.group_id in self.coord.groups or hb.group_id in self.coord.consumer.groups
            what = "is not a streams group" if is_other else "not found"
            raise StreamsError(E.group_id_not_found, f"Group {hb.group_id} {what}.")
        if hb.shutdown_application and group.shutdown_requested_by is None:
            group.shutdown_requested_by = hb.member_id
        member = group.members.get(hb.member_id)
        if member is None:
            raise StreamsError(E.unknown_member_id, f"Member {hb.member_id} is not a member of group {hb.group_id}.")
        log.info("streams group %s: member %s left", hb.group_id, hb.member_id)
        return self._fence(group, member)

    def _fence(self, group: StreamsGroup, member: Member) -> list[P.Record]:
        records = P.member_tombstones(group.group_id, member.member_id)
        group.remove_member(member.member_id)
        self._cancel(self._session, (group.group_id, member.member_id))
        self._cancel(self._rebalance, (group.group_id, member.member_id))
        group.group_epoch += 1
        records.append(P.metadata_record(group))
        log.info("streams group %s: epoch %d", group.group_id, group.group_epoch)
        return records

    # ---- internal topics (created by the handler's call, in the background) ---------------------
    def create_internal_topics(self, topics: dict[str, InternalTopic], group_id: str) -> None:
        ttl = 2 * self._config(group_id, "heartbeat.interval.ms") / 1000
        self.internal_topics.create(topics, ttl)

    def creation_errors(self, names: list[str]) -> list[tuple[str, str]]:
        return self.internal_topics.errors(names)

    # ---- metadata --------------------------------------------------------------------------------
    def _partitions(self, topic: str) -> int | None:
        t = self.coord.registry.get(topic)
        return None if t is None else t.partitions

    def _metadata_hash(self, names: set[str]) -> int:
        """A digest of the topology's topics as the broker knows them (id, partitions): when it changes,
        the topology is configured again and the group assigned again."""
        registry = self.coord.registry
        h = hashlib.blake2b(digest_size=8)
        for n in sorted(names):
            t = registry.get(n)
            if t is not None:
                h.update(f"{n}\0{t.topic_id}\0{t.partitions}\n".encode())
        return int.from_bytes(h.digest(), "big", signed=True)

    def topic_event(self, event: str, topic: Any) -> None:
        """A topic was created, deleted or grew: every group looks at its topics again at its next
        heartbeat (Kafka refreshes the groups that use the topic)."""
        name = getattr(topic, "name", None)
        for group in self.groups.values():
            if group.topology is None or name is None or name in required_topics(group.topology):
                group.metadata_expired = True

    # ---- timers ----------------------------------------------------------------------------------
    def _arm_session(self, group_id: str, member_id: str) -> None:
        key = (group_id, member_id)
        self._cancel(self._session, key)
        loop = asyncio.get_running_loop()
        timeout = self._config(group_id, "session.timeout.ms") / 1000
        self._session[key] = loop.call_later(timeout, self._expired, group_id, member_id, None)

    def _arm_rebalance(self, group_id: str, member: Member) -> None:
        key = (group_id, member.member_id)
        self._cancel(self._rebalance, key)
        loop = asyncio.get_running_loop()
        timeout = max(0, min(member.rebalance_timeout_ms, MAX_TIMEOUT_MS)) / 1000
        self._rebalance[key] = loop.call_later(timeout, self._expired, group_id, member.member_id, member.member_epoch)

    @staticmethod
    def _cancel(timers: dict[Any, asyncio.TimerHandle], key: Any) -> None:
        t = timers.pop(key, None)
        if t is not None:
            t.cancel()

    def _expired(self, group_id: str, member_id: str, epoch: int | None) -> None:
        (self._session if epoch is None else self._rebalance).pop((group_id, member_id), None)
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or (epoch is not None and member.member_epoch != epoch):
            return
        why = "its session expired" if epoch is None else f"it did not revoke its tasks at epoch {epoch} in time"
        log.info("streams group %s: member %s fenced: %s", group_id, member_id, why)
        self.coord.spawn(self._write_logged(group_id, self._fence(group, member)))

    async def _write_logged(self, group_id: str, records: list[P.Record]) -> None:
        try:
            await self._write(group_id, records)
        except LogError as e:
            log.info("streams group %s: records not written: %s", group_id, e)

    # ---- durability ----------------------------------------------------------------------------
    async def _write(self, group_id: str, records: list[P.Record]) -> None:
        assert self.coord.store is not None
        await self.coord.store.write_streams(group_id, records)

    def restore(self, partition: int | None = None) -> int:
        """Rebuild the streams groups from the store's records (of one partition, or all)."""
        assert self.coord.store is not None
        mine = self.coord.store.partition_for
        n = 0
        for group_id, recs in self.coord.store.streams.items():
            if partition is not None and mine(group_id) != partition:
                continue
            group = P.group_from(group_id, recs)
            if group is None:
                continue
            self.groups[group_id] = group
            n += 1
            for member_id in group.members:
                self._arm_session(group_id, member_id)
        return n

    def unload(self, partition: int) -> None:
        assert self.coord.store is not None
        mine = self.coord.store.partition_for
        for group_id in [g for g in self.groups if mine(g) == partition]:
            self.forget(group_id)

    def forget(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        self._cancel(self._initial_delay, group_id)
        if group is not None:
            for member_id in group.members:
                self._cancel(self._session, (group_id, member_id))
                self._cancel(self._rebalance, (group_id, member_id))

    def stop(self) -> None:
        for timers in (self._session, self._rebalance, self._initial_delay):
            for t in timers.values():
                t.cancel()
            timers.clear()

    async def drop(self, group: StreamsGroup) -> None:
        """Delete an empty group's records (DeleteGroups); its committed offsets are the caller's."""
        await self._write(group.group_id, P.tombstones(group))
        self.forget(group.group_id)
        log.info("streams group %s deleted", group.group_id)

    # ---- describing and listing ----------------------------------------------------------------
    def describe(self, group_id: str) -> StreamsGroupDescribeDescribedGroup:
        if not group_id:
            return described_error("", E.invalid_group_id, None)
        if code := self.coord.status(group_id):
            return described_error(group_id, E(code), None)
        group = self.groups.get(group_id)
        if group is None:
            known = (
                group_id in self.coord.groups
                or group_id in self.coord.consumer.groups
                or (self.coord.share is not None and group_id in self.coord.share.groups)
            )
            what = "is not a streams group" if known else "not found"
            return described_error(group_id, E.group_id_not_found, f"Group {group_id} {what}.")
        return described(group)

    def listed(self, states: set[str]) -> list[ListedGroup]:
        return listed(self.groups.values(), states)


__all__ = ["HeartbeatResult", "StreamsGroups", "StreamsHeartbeat"]
