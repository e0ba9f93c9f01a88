"""Share groups (KIP-932, "queues for Kafka"): the group coordinator's side - ShareGroupHeartbeat,
ShareGroupDescribe, membership and the assignment of partitions to members.

A share group's members may share partitions (the records of a partition are handed out one by one
by the partition's leader: `tidelog.share`), so there is no revocation protocol: a heartbeat gives
the member its target assignment at once. As in Kafka 4.3:

- a new group starts at group and assignment epoch 1; a member joining or leaving, a subscription
  changing, or a subscribed topic created, deleted or grown bumps the group epoch;
- a partition is assigned only once its share state is *initialized* (its start offset fixed by
  the group's `share.auto.offset.reset`, written by the share state store): the coordinator
  initializes newly subscribed partitions before it assigns them (`ShareStates`), and keeps
  which are initialized in a ShareGroupStatePartitionMetadata record;
- the target assignment is Kafka's `simple` assignor's (`share_assignor`), which spreads the
  partitions over the members and shares a partition when members outnumber partitions;
- a member's epoch other than its current or previous one is FENCED_MEMBER_EPOCH; a member not
  heartbeating for `group.share.session.timeout.ms` is removed; epoch -1 leaves.

Every change is written to `__consumer_offsets` in Kafka 4.3.1's record formats (`share_records`)
before the answer, and replayed when this broker starts coordinating the group. A write that fails
answers its error; the state in memory is then ahead of the log until the group's next write (Kafka
rolls it back).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode as E

from ..log.errors import LogError
from . import share_records as SR
from .assignors import MemberSpec, TopicSpec
from .consumer_requests import GroupError
from .share_assignor import simple

if TYPE_CHECKING:
    from ..wire.responses import (
        ListedGroup,
        ShareGroupDescribeDescribedGroup,
        ShareGroupDescribeTopicPartitions,
        ShareGroupHeartbeatResponse,
    )
    from .coordinator import GroupCoordinator

log = logging.getLogger("tidelog.groups")
NONE = 0
JOIN_EPOCH, LEAVE_EPOCH = 0, -1
NO_OPERATIONS = -2147483648
Record = tuple[SR.ShareGroupRecordKey, SR.ShareGroupRecordValue | None]
Assigned = dict[uuid.UUID, frozenset[int]]


class ShareStates(Protocol):
    """The share partitions (tidelog.share.manager): fix the start offsets of a group's partitions
    (by its `share.auto.offset.reset`), durably, before they are handed out. (What a member holds is
    released by its share session's end or its locks' expiry, not by its leaving the group: its
    last acknowledgements may arrive after its leave, as Kafka's.)"""

    def initialize(self, group_id: str, partitions: Mapping[uuid.UUID, Iterable[int]]) -> Awaitable[None]: ...

    def remove(self, group_id: str, partitions: Mapping[uuid.UUID, Iterable[int]]) -> Awaitable[None]:
        """The share state of these partitions deleted (a deleted group, deleted offsets)."""
        ...


@dataclass
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assigned = field(default_factory=dict)


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 1  # as Kafka 4.3: a new group is at epoch 1
    metadata_hash: int = 0
    assignment_epoch: int = 1
    assignment_timestamp: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assigned] = field(default_factory=dict)
    initialized: dict[uuid.UUID, set[int]] = field(default_factory=dict)  # partitions with share state

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed(self, members: Iterable[ShareMember] | None = None) -> set[str]:
        return {n for m in (self.members.values() if members is None else members) for n in m.subscribed_topic_names}


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str = ""
    client_host: str = ""


def _error(code: E, message: str | None = None) -> ShareGroupHeartbeatResponse:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval": 0,
        "assignment": None,
    }


def invalid(hb: ShareHeartbeat) -> tuple[E, str] | None:
    """Kafka's checks of a ShareGroupHeartbeat (GroupCoordinatorService)."""
    if not hb.member_id.strip():
        return E.invalid_request, "MemberId can't be empty."
    if not hb.group_id.strip():
        return E.invalid_request, "GroupId can't be empty."
    if hb.rack_id is not None and not hb.rack_id.strip():
        return E.invalid_request, "RackId can't be empty."
    if hb.member_epoch == JOIN_EPOCH and not hb.subscribed_topic_names:
        return E.invalid_request, "SubscribedTopicNames must be set in first request."
    if hb.member_epoch < LEAVE_EPOCH:
        return E.invalid_request, "MemberEpoch is invalid."
    return None


class ShareGroups:
    """The share groups coordinated here (a group id is a classic, consumer or share group)."""

    def __init__(self, coord: GroupCoordinator, states: ShareStates) -> None:
        self.coord = coord
        self.states = states
        cfg = coord.config
        self.session_timeout_ms: int = cfg["group.share.session.timeout.ms"]
        self.heartbeat_interval_ms: int = cfg["group.share.heartbeat.interval.ms"]
        self.max_size: int = cfg["group.share.max.size"]
        self.groups: dict[str, ShareGroup] = {}
        self._session: dict[tuple[str, str], asyncio.TimerHandle] = {}

    # ---- the heartbeat -------------------------------------------------------------------------
    async def heartbeat(self, hb: ShareHeartbeat) -> ShareGroupHeartbeatResponse:
        if bad := invalid(hb):
            return _error(*bad)
        if code := self.coord.status(hb.group_id):
            return _error(E(code))
        try:
            if hb.member_epoch == LEAVE_EPOCH:
                records, response = self._leave(hb)
            else:
                records, response = await self._heartbeat(hb)
        except GroupError as e:
            return _error(e.code, e.message)
        except LogError as e:
            return _error(E(e.error_code), e.message)
        if records:
            try:
                await self._write(hb.group_id, records)
            except LogError as e:
                return _error(E(e.error_code), e.message)
        return response

    async def _heartbeat(self, hb: ShareHeartbeat) -> tuple[list[Record], ShareGroupHeartbeatResponse]:
        records: list[Record] = []
        group = self._group(hb.group_id, hb.member_epoch == JOIN_EPOCH)
        if len(group.members) >= self.max_size and hb.member_id not in group.members:
            raise GroupError(
                E.group_max_size_reached,
                f"The share group has reached its maximum capacity of {self.max_size} members.",
            )
        found = group.members.get(hb.member_id)
        if found is None:
            if hb.member_epoch != JOIN_EPOCH:
                raise GroupError(
                    E.unknown_member_id, f"Member {hb.member_id} is not a member of group {group.group_id}."
                )
            found = ShareMember(hb.member_id)
            log.info("share group %s: member %s joins", group.group_id, hb.member_id)
        elif hb.member_epoch not in (JOIN_EPOCH, found.member_epoch, found.previous_member_epoch):
            raise GroupError(
                E.fenced_member_epoch,
                f"The share group member has a member epoch ({hb.member_epoch}) other than the one known by the "
                f"group coordinator ({found.member_epoch}). The member must abandon all its partitions and rejoin.",
            )
        updated = replace(
            found,
            rack_id=hb.rack_id if hb.rack_id is not None else found.rack_id,
            subscribed_topic_names=(
                tuple(sorted(set(hb.subscribed_topic_names)))
                if hb.subscribed_topic_names is not None
                else found.subscribed_topic_names
            ),
            client_id=hb.client_id,
            client_host=hb.client_host,
        )
        changed = updated.subscribed_topic_names != found.subscribed_topic_names
        if hb.member_id not in group.members or (
            updated.rack_id,
            updated.client_id,
            updated.client_host,
            updated.subscribed_topic_names,
        ) != (found.rack_id, found.client_id, found.client_host, found.subscribed_topic_names):
            records.append(_member_record(group.group_id, updated))
        members = [*(m for m in group.members.values() if m.member_id != hb.member_id), updated]
        names = group.subscribed(members)
        newly = await self._initialize(group, names, records)
        new_hash = self._metadata_hash(names)
        if changed or newly or new_hash != group.metadata_hash:
            self._bump(group, new_hash, records)
        group.members[hb.member_id] = updated
        if group.assignment_epoch < group.group_epoch:
            self._assign(group, records)
        member = updated
        target = group.target.get(hb.member_id, {})
        if member.member_epoch != group.assignment_epoch or member.assigned != target:
            member = replace(
                updated,
                member_epoch=group.assignment_epoch,
                previous_member_epoch=updated.member_epoch,
                assigned=dict(target),
            )
            group.members[hb.member_id] = member
            records.append(_assignment_record(group.group_id, member))
        self._arm_session(group.group_id, hb.member_id)
        response: ShareGroupHeartbeatResponse = {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": None,
            "member_id": member.member_id,
            "member_epoch": member.member_epoch,
            "heartbeat_interval": self.heartbeat_interval_ms,
            "assignment": None,
        }
        if hb.member_epoch == JOIN_EPOCH or hb.subscribed_topic_names is not None or member.assigned != found.assigned:
            response["assignment"] = {
                "topic_partitions": [
                    {"topic_id": t, "partitions": sorted(ps)}
                    for t, ps in sorted(member.assigned.items(), key=lambda kv: str(kv[0]))
                    if ps
                ]
            }
        return records, response

    def get_or_create(self, group_id: str) -> tuple[ShareGroup, bool]:
        """The share group `group_id` (GroupError if the id is another kind of group's), and
        whether it was made now (empty; its records are the caller's to write)."""
        known = group_id in self.groups
        return self._group(group_id, True), not known

    def find(self, group_id: str) -> ShareGroup:
        """The share group `group_id`; GroupError if there is none (or it is another kind)."""
        return self._group(group_id, False, f"Group {group_id} not found.")

    def _group(self, group_id: str, create: bool, missing: str | None = None) -> ShareGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if (
            group_id in self.coord.consumer.groups
            or group_id in self.coord.streams.groups
            or (group_id in self.coord.groups and not self.coord.groups[group_id].is_empty_classic())
        ):
            raise GroupError(E.group_id_not_found, f"Group {group_id} is not a share group.")
        if group_id in self.coord.groups:
            raise GroupError(E.group_id_not_found, f"Group {group_id} is not a share group.")
        if not create:
            raise GroupError(E.group_id_not_found, missing or f"Share group {group_id} not found.")
        group = self.groups[group_id] = ShareGroup(group_id)
        return group

    async def _initialize(self, group: ShareGroup, names: set[str], records: list[Record]) -> bool:
        """Initialize the share state of subscribed partitions that have none yet; whether any."""
        registry = self.coord.registry
        todo: dict[uuid.UUID, set[int]] = {}
        for n in names:
            topic = registry.get(n)
            if topic is None:
                continue
            missing = set(range(topic.partitions)) - group.initialized.get(topic.topic_id, set())
            if missing:
                todo[topic.topic_id] = missing
        if not todo:
            return False
        await self.states.initialize(group.group_id, todo)
        for t, ps in todo.items():
            group.initialized.setdefault(t, set()).update(ps)
        records.append(_state_record(group, registry))
        return True

    # ---- leaving ---------------------------------------------------------------------------------
    def _leave(self, hb: ShareHeartbeat) -> tuple[list[Record], ShareGroupHeartbeatResponse]:
        group = self.groups.get(hb.group_id)
        if group is None:
            raise GroupError(E.group_id_not_found, f"Share group {hb.group_id} not found.")
        if hb.member_id not in group.members:
            raise GroupError(E.unknown_member_id, f"Member {hb.member_id} is not a member of group {hb.group_id}.")
        log.info("share group %s: member %s left", hb.group_id, hb.member_id)
        response: ShareGroupHeartbeatResponse = {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": None,
            "member_id": hb.member_id,
            "member_epoch": LEAVE_EPOCH,
            "heartbeat_interval": 0,
            "assignment": None,
        }
        return self._fence(group, hb.member_id), response

    def _fence(self, group: ShareGroup, member_id: str) -> list[Record]:
        records: list[Record] = []
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        self._cancel(group.group_id, member_id)
        records.append((SR.ShareGroupCurrentMemberAssignmentKey(group.group_id, member_id), None))
        records.append((SR.ShareGroupTargetAssignmentMemberKey(group.group_id, member_id), None))
        records.append((SR.ShareGroupMemberMetadataKey(group.group_id, member_id), None))
        self._bump(group, self._metadata_hash(group.subscribed()), records)
        return records

    def _bump(self, group: ShareGroup, metadata_hash: int, records: list[Record]) -> None:
        group.group_epoch += 1
        group.metadata_hash = metadata_hash
        records.append(self.metadata_record(group))

    # ---- the assignment --------------------------------------------------------------------------
    def _assign(self, group: ShareGroup, records: list[Record]) -> None:
        registry = self.coord.registry
        topics: dict[uuid.UUID, TopicSpec] = {}
        specs: dict[str, MemberSpec] = {}
        for m in group.members.values():
            ids: set[uuid.UUID] = set()
            for n in m.subscribed_topic_names:
                t = registry.get(n)
                if t is not None:
                    ids.add(t.topic_id)
                    topics[t.topic_id] = TopicSpec(t.topic_id, t.name, t.partitions)
            specs[m.member_id] = MemberSpec(
                m.member_id, None, m.rack_id, frozenset(ids), group.target.get(m.member_id, {})
            )
        assignable = {t: frozenset(ps) for t, ps in group.initialized.items() if t in topics}
        target = simple(specs, topics, assignable)
        for member_id, parts in target.items():
            new = {t: frozenset(ps) for t, ps in parts.items() if ps}
            if new != group.target.get(member_id, {}):
                records.append(_target_record(group.group_id, member_id, new))
            group.target[member_id] = new
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp = int(time.time() * 1000)
        records.append(
            (
                SR.ShareGroupTargetAssignmentMetadataKey(group.group_id),
                SR.ShareGroupTargetAssignmentMetadataValue(group.assignment_epoch, group.assignment_timestamp),
            )
        )

    def _metadata_hash(self, names: Iterable[str]) -> int:
        registry = self.coord.registry
        h = hashlib.blake2b(digest_size=8)
        for n in sorted(names):
            t = registry.get(n)
            if t is not None:
                h.update(f"{n}\0{t.topic_id}\0{t.partitions}\n".encode())
        return int.from_bytes(h.digest(), "big", signed=True)

    # ---- timers ----------------------------------------------------------------------------------
    def _arm_session(self, group_id: str, member_id: str) -> None:
        self._cancel(group_id, member_id)
        loop = asyncio.get_running_loop()
        self._session[(group_id, member_id)] = loop.call_later(
            self.session_timeout_ms / 1000, self._expired, group_id, member_id
        )

    def _cancel(self, group_id: str, member_id: str) -> None:
        t = self._session.pop((group_id, member_id), None)
        if t is not None:
            t.cancel()

    def _expired(self, group_id: str, member_id: str) -> None:
        self._session.pop((group_id, member_id), None)
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("share group %s: member %s fenced: its session timed out", group_id, member_id)
        records = self._fence(group, member_id)
        self.coord.spawn(self._write_logged(group_id, records))

    async def _write_logged(self, group_id: str, records: list[Record]) -> None:
        try:
            await self._write(group_id, records)
        except LogError as e:
            log.info("share group %s: records not written: %s", group_id, e)

    # ---- durability ------------------------------------------------------------------------------
    async def _write(self, group_id: str, records: list[Record]) -> None:
        assert self.coord.store is not None
        await self.coord.store.write_share(group_id, records)

    async def write(self, group_id: str, records: list[Record]) -> None:
        """Write the group's records (LogError if they are not written)."""
        await self._write(group_id, records)

    def metadata_record(self, group: ShareGroup) -> Record:
        return (
            SR.ShareGroupMetadataKey(group.group_id),
            SR.ShareGroupMetadataValue(group.group_epoch, group.metadata_hash),
        )

    def state_record(self, group: ShareGroup) -> Record:
        """Which of the group's partitions have share state."""
        return _state_record(group, self.coord.registry)

    def restore(self, partition: int | None = None) -> int:
        assert self.coord.store is not None
        mine = self.coord.store.partition_for
        n = 0
        for group_id, recs in self.coord.store.share.items():
            if partition is not None and mine(group_id) != partition:
                continue
            group = _group_from(group_id, recs)
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
        if group is not None:
            for member_id in group.members:
                self._cancel(group_id, member_id)

    def stop(self) -> None:
        for t in self._session.values():
            t.cancel()
        self._session.clear()

    async def drop(self, group: ShareGroup) -> None:
        """DeleteGroups of an empty share group: the share state of its partitions is deleted,
        then its records (a crash between leaves the group, which a second delete removes)."""
        await self.states.remove(group.group_id, group.initialized)
        records: list[Record] = [
            (SR.ShareGroupStatePartitionMetadataKey(group.group_id), None),
            (SR.ShareGroupTargetAssignmentMetadataKey(group.group_id), None),
            (SR.ShareGroupMetadataKey(group.group_id), None),
        ]
        await self._write(group.group_id, records)
        self.forget(group.group_id)

    # ---- describing and listing ------------------------------------------------------------------
    def describe(self, group_id: str) -> ShareGroupDescribeDescribedGroup:
        empty: ShareGroupDescribeDescribedGroup = {
            "error_code": NONE,
            "error_message": None,
            "group_id": group_id,
            "group_state": "",
            "group_epoch": 0,
            "assignment_epoch": 0,
            "assignor_name": "",
            "members": [],
            "authorized_operations": NO_OPERATIONS,
        }
        if code := self.coord.status(group_id):
            return {**empty, "error_code": code}
        group = self.groups.get(group_id)
        if group is None:
            return {**empty, "error_code": E.group_id_not_found, "error_message": f"Group {group_id} not found."}
        registry = self.coord.registry

        def named(parts: Assigned) -> list[ShareGroupDescribeTopicPartitions]:
            out: list[ShareGroupDescribeTopicPartitions] = []
            for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0])):
                topic = registry.by_id.get(t)
                if topic is not None and ps:
                    out.append({"topic_id": t, "topic_name": topic.name, "partitions": sorted(ps)})
            return out

        return {
            **empty,
            "group_state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": "simple",
            "members": [
                {
                    "member_id": m.member_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "assignment": {"topic_partitions": named(m.assigned)},
                }
                for m in group.members.values()
            ],
        }

    def listed(self, states: set[str]) -> list[ListedGroup]:
        out: list[ListedGroup] = []
        for g in self.groups.values():
            if states and g.state.lower() not in states:
                continue
            out.append(
                {"group_id": g.group_id, "protocol_type": "share", "group_state": g.state, "group_type": "share"}
            )
        return out


# ---- records ---------------------------------------------------------------------------------------
def _member_record(group_id: str, m: ShareMember) -> Record:
    return (
        SR.ShareGroupMemberMetadataKey(group_id, m.member_id),
        SR.ShareGroupMemberMetadataValue(
            rack_id=m.rack_id,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
        ),
    )


def _assignment_record(group_id: str, m: ShareMember) -> Record:
    return (
        SR.ShareGroupCurrentMemberAssignmentKey(group_id, m.member_id),
        SR.ShareGroupCurrentMemberAssignmentValue(
            member_epoch=m.member_epoch,
            previous_member_epoch=m.previous_member_epoch,
            state=0,  # STABLE: share members have nothing to revoke
            assigned_partitions=tuple(
                SR.TargetTopicPartitions(t, tuple(sorted(ps)))
                for t, ps in sorted(m.assigned.items(), key=lambda kv: str(kv[0]))
                if ps
            ),
        ),
    )


def _target_record(group_id: str, member_id: str, target: Assigned) -> Record:
    return (
        SR.ShareGroupTargetAssignmentMemberKey(group_id, member_id),
        SR.ShareGroupTargetAssignmentMemberValue(
            tuple(
                SR.TargetTopicPartitions(t, tuple(sorted(ps)))
                for t, ps in sorted(target.items(), key=lambda kv: str(kv[0]))
            )
        ),
    )


def _state_record(group: ShareGroup, registry: object) -> Record:
    by_id = getattr(registry, "by_id", {})
    return (
        SR.ShareGroupStatePartitionMetadataKey(group.group_id),
        SR.ShareGroupStatePartitionMetadataValue(
            initializing_topics=(),
            initialized_topics=tuple(
                SR.TopicPartitionsInfo(t, by_id[t].name if t in by_id else "", tuple(sorted(ps)))
                for t, ps in sorted(group.initialized.items(), key=lambda kv: str(kv[0]))
            ),
            deleting_topics=(),
        ),
    )


def _group_from(group_id: str, recs: Mapping[SR.ShareGroupRecordKey, SR.ShareGroupRecordValue]) -> ShareGroup | None:
    meta = next((v for k, v in recs.items() if isinstance(k, SR.ShareGroupMetadataKey)), None)
    if not isinstance(meta, SR.ShareGroupMetadataValue):
        return None
    group = ShareGroup(group_id, group_epoch=meta.epoch, metadata_hash=meta.metadata_hash)
    members: dict[str, ShareMember] = {}
    for k, v in recs.items():
        if isinstance(k, SR.ShareGroupMemberMetadataKey) and isinstance(v, SR.ShareGroupMemberMetadataValue):
            m = members.setdefault(k.member_id, ShareMember(k.member_id))
            m.rack_id, m.client_id, m.client_host = v.rack_id, v.client_id, v.client_host
            m.subscribed_topic_names = tuple(v.subscribed_topic_names)
        elif isinstance(k, SR.ShareGroupTargetAssignmentMetadataKey) and isinstance(
            v, SR.ShareGroupTargetAssignmentMetadataValue
        ):
            group.assignment_epoch, group.assignment_timestamp = v.assignment_epoch, v.assignment_timestamp
        elif isinstance(k, SR.ShareGroupStatePartitionMetadataKey) and isinstance(
            v, SR.ShareGroupStatePartitionMetadataValue
        ):
            for info in v.initialized_topics:
                group.initialized[info.topic_id] = set(info.partitions)
    for k, v in recs.items():
        if isinstance(k, SR.ShareGroupTargetAssignmentMemberKey) and isinstance(
            v, SR.ShareGroupTargetAssignmentMemberValue
        ):
            group.target[k.member_id] = {tp.topic_id: frozenset(tp.partitions) for tp in v.topic_partitions}
        elif isinstance(k, SR.ShareGroupCurrentMemberAssignmentKey) and isinstance(
            v, SR.ShareGroupCurrentMemberAssignmentValue
        ):
            m = members.setdefault(k.member_id, ShareMember(k.member_id))
            m.member_epoch, m.previous_member_epoch = v.member_epoch, v.previous_member_epoch
            m.assigned = {tp.topic_id: frozenset(tp.partitions) for tp in v.assigned_partitions}
    for m in members.values():
        if any(isinstance(k, SR.ShareGroupMemberMetadataKey) and k.member_id == m.member_id for k in recs):
            group.members[m.member_id] = m
    return group
