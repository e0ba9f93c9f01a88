"""Kafka 4's consumer group protocol (KIP-848): ConsumerGroupHeartbeat, ConsumerGroupDescribe, the
member timers, and the records that make a consumer group durable.

One heartbeat, as Kafka's GroupMetadataManager runs it (the state model is in `consumer_group`):

1. Validate (a version-1 member names itself; epoch 0 joins and must carry its rebalance timeout,
   a subscription, and no owned partitions; -1 leaves, -2 leaves as a static member that will come
   back; an unknown server assignor is UNSUPPORTED_ASSIGNOR; a regex that does not compile is
   INVALID_REGULAR_EXPRESSION).
2. Find the group (epoch 0 creates it; a classic group of that id becomes a consumer group)
   and the member (epoch 0 creates it; a static member's instance id is taken over only after it
   left with -2; an epoch other than the member's is FENCED_MEMBER_EPOCH, except its previous epoch
   with owned partitions it still holds: the answer with its new epoch was lost).
3. Update the member's subscription; the group epoch is bumped when a subscription changes or the
   subscribed topics' metadata does (a topic created, deleted or grown: their hash changes).
4. A group epoch past the assignment epoch computes a new target assignment with the assignor most
   members ask for (`group.consumer.assignors`, the first by default).
5. Reconcile the member towards its target (`consumer_group.reconcile`), arm its session timeout
   (`group.consumer.session.timeout.ms`) and, while it must revoke partitions, its rebalance timeout:
   either expiring fences it out of the group (a group epoch bump; its partitions become free).
6. Write the records of every change to the group's `__consumer_offsets` partition in Kafka 4.3's
   formats (`consumer_records`), then answer; the assignment is sent when it changed or the request
   was a full one (joining, or every field set after an error).

A write that fails answers its error (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: the client
retries or finds the new coordinator); the state in memory is then ahead of the log until the next
write of the group. Kafka's runtime rolls it back instead.

Online migration (`consumer_migration`, `group.consumer.migration.policy`): a heartbeat joining a
classic group with members converts it (an empty one is simply replaced); members of the classic
protocol in a consumer group are served by `consumer_classic`; fencing the last member of the
consumer protocol turns the group back into a classic group.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ..core.topics import INTERNAL_TOPICS
from ..log.errors import LogError
from . import consumer_records as CR
from .assignors import ASSIGNORS, MemberSpec, TopicSpec
from .consumer_classic import ClassicMembers
from .consumer_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    ConsumerGroup,
    GroupState,
    Member,
    MemberState,
    Partitions,
    copy_partitions,
    is_subset,
    owned_ids,
    reconcile,
)
from .consumer_migration import can_downgrade, check_upgrade, from_classic, to_classic
from .consumer_persist import (
    Record,
    assignment_record,
    creation_records,
    group_from,
    member_record,
    target_record,
    tombstones,
)
from .consumer_requests import GroupError, Heartbeat, error_response, invalid
from .consumer_timers import JOIN, REBALANCE, SESSION, SYNC, MemberTimers
from .consumer_views import described, described_error, listed
from .records import GroupKey

if TYPE_CHECKING:
    from ..wire.responses import (
        ConsumerGroupDescribeDescribedGroup,
        ConsumerGroupHeartbeatResponse,
        ListedGroup,
    )
    from .coordinator import GroupCoordinator
    from .group import Group as ClassicGroup

log = logging.getLogger("tidelog.groups")
NONE = 0


def assignment_of(parts: Partitions) -> list[tuple[uuid.UUID, list[int]]]:
    return [(t, sorted(ps)) for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0])) if ps]


class ConsumerGroups:
    """The consumer groups coordinated here, beside the classic ones (`coord.groups`): a group id is
    one or the other. Owned by the `GroupCoordinator`, which loads and unloads them with
    `__consumer_offsets` partitions."""

    def __init__(self, coord: GroupCoordinator) -> None:
        self.coord = coord
        cfg = coord.config
        self.session_timeout_ms: int = cfg["group.consumer.session.timeout.ms"]
        self.heartbeat_interval_ms: int = cfg["group.consumer.heartbeat.interval.ms"]
        self.max_size: int = cfg["group.consumer.max.size"]
        self.assignors: list[str] = [a for a in cfg["group.consumer.assignors"] if a in ASSIGNORS]
        self.policy: str = cfg["group.consumer.migration.policy"]
        self.groups: dict[str, ConsumerGroup] = {}
        self.timers = MemberTimers(self._expired)
        self.classic = ClassicMembers(self)  # members of the classic protocol in these groups
        self.topics_version = 0  # bumped by every topic change: regexes are resolved again

    # ---- the heartbeat ---------------------------------------------------------------------------
    async def heartbeat(
        self, hb: Heartbeat, may_describe: Callable[[str], bool] | None = None
    ) -> ConsumerGroupHeartbeatResponse:
        if bad := invalid(hb, self.assignors):
            return error_response(*bad)
        if code := self.coord.status(hb.group_id):
            return error_response(E(code))
        try:
            if hb.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
                records, response = self._leave(hb)
            else:
                records, response = self._heartbeat(hb, may_describe)
        except GroupError as e:
            return error_response(e.code, e.message)
        if records:
            try:
                await self.write(hb.group_id, records)
            except LogError as e:
                return error_response(E(e.error_code), e.message)
        return response

    def _heartbeat(
        self, hb: Heartbeat, may_describe: Callable[[str], bool] | None
    ) -> tuple[list[Record], ConsumerGroupHeartbeatResponse]:
        records: list[Record] = []
        joining = hb.member_epoch == JOIN_EPOCH
        member_id = hb.member_id or str(uuid.uuid4())
        group = self._group(hb.group_id, joining, records, member_id)
        self._check_size(group.members, member_id)
        found = self._member(group, hb, member_id, records)
        updated = _updated(found, hb)
        names_changed = updated.subscribed_topic_names != found.subscribed_topic_names
        regex_changed = updated.subscribed_topic_regex != found.subscribed_topic_regex
        if member_id not in group.members or _metadata_changed(found, updated):
            records.append(member_record(group.group_id, updated))
        members = [*(m for m in group.members.values() if m.member_id != member_id), updated]
        regexes_changed = self.refresh_regexes(group, members, records, may_describe)
        new_hash = self.metadata_hash(group.subscribed_topic_names(members))
        if names_changed or regex_changed or regexes_changed or new_hash != group.metadata_hash:
            self.bump(group, new_hash, records)
        group.put_member(updated)
        if group.assignment_epoch < group.group_epoch:
            self.assign(group, records)
        member = self.reconciled(group, updated, owned_ids(hb.owned), names_changed or regex_changed, records)
        self.timers.arm(SESSION, group.group_id, member_id, self.session_timeout_ms)
        response: ConsumerGroupHeartbeatResponse = {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": None,
            "member_id": member.member_id,
            "member_epoch": member.member_epoch,
            "heartbeat_interval": self.heartbeat_interval_ms,
            "assignment": None,
        }
        full = (
            hb.rebalance_timeout_ms != -1
            and (hb.subscribed_topic_names is not None or hb.subscribed_topic_regex is not None)
            and hb.owned is not None
        )
        if joining or full or member.assigned != found.assigned:
            response["assignment"] = {
                "topic_partitions": [{"topic_id": t, "partitions": ps} for t, ps in assignment_of(member.assigned)]
            }
        return records, response

    def reconciled(
        self,
        group: ConsumerGroup,
        member: Member,
        owned: dict[uuid.UUID, set[int]] | None,
        subscription_changed: bool,
        records: list[Record],
    ) -> Member:
        """The member moved one step towards its target (its record written when it moved)."""
        if not subscription_changed and member.is_reconciled_to(group.assignment_epoch):
            return member
        step = reconcile(
            member,
            group.assignment_epoch,
            group.target.get(member.member_id, {}),
            self._topic_ids(group.member_topic_names(member)),
            group.current_partition_epoch,
            owned,
            subscription_changed,
        )
        if step is None:
            return member
        moved = replace(
            member,
            member_epoch=step.member_epoch,
            previous_member_epoch=member.member_epoch,
            state=step.state,
            assigned=step.assigned,
            pending_revocation=step.pending_revocation,
        )
        if moved == member:
            return member
        group.put_member(moved)
        records.append(assignment_record(group.group_id, moved))
        if moved.classic is None:  # a classic member has its join and sync timers instead
            if moved.state is MemberState.UNREVOKED_PARTITIONS:
                self.timers.arm(
                    REBALANCE, group.group_id, moved.member_id, moved.rebalance_timeout_ms, moved.member_epoch
                )
            else:
                self.timers.cancel(REBALANCE, group.group_id, moved.member_id)
        return moved

    # ---- finding the group and the member --------------------------------------------------------
    def _check_size(self, members: Iterable[str], member_id: str) -> None:
        ids = set(members)
        if len(ids) >= self.max_size and member_id not in ids:
            raise GroupError(
                E.group_max_size_reached,
                f"The consumer group has reached its maximum capacity of {self.max_size} members.",
            )

    def _group(self, group_id: str, create: bool, records: list[Record], member_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if group_id in self.coord.streams.groups:
            raise GroupError(E.group_id_not_found, f"Group {group_id} is not a consumer group.")
        classic = self.coord.groups.get(group_id)
        if classic is not None and not classic.is_empty_classic():
            if create:
                return self._upgrade(classic, records, member_id)
            raise GroupError(E.group_id_not_found, f"Group {group_id} is not a consumer group.")
        if not create:
            raise GroupError(E.group_id_not_found, f"Consumer group {group_id} not found.")
        if classic is not None:
            # an empty classic group (offsets only, or all members gone) becomes a consumer group
            self.coord.forget_classic(group_id, records)
            log.info("group %s: the empty classic group is now a consumer group", group_id)
        group = self.groups[group_id] = ConsumerGroup(group_id)
        return group

    def _upgrade(self, classic: ClassicGroup, records: list[Record], member_id: str) -> ConsumerGroup:
        """A classic group with members becomes a consumer group (`consumer_migration`). Every check
        that may refuse the joining member is made first: nothing changes when it is refused."""
        gid = classic.group_id
        check_upgrade(classic, self.policy, self.max_size)
        group = from_classic(classic, self.coord.registry, self.metadata_hash)
        self._check_size(group.members, member_id)
        self.coord.membership.shutdown(classic, E.rebalance_in_progress)  # parked JoinGroup/SyncGroup: rejoin
        self.coord.forget_classic(gid, records)
        records += creation_records(group)
        self.groups[gid] = group
        for m in group.members.values():
            assert m.classic is not None
            self.timers.arm(SESSION, gid, m.member_id, m.classic.session_timeout_ms)
        log.info("group %s: the classic group (%d members) is now a consumer group", gid, len(group.members))
        return group

    def _member(self, group: ConsumerGroup, hb: Heartbeat, member_id: str, records: list[Record]) -> Member:
        joining = hb.member_epoch == JOIN_EPOCH
        if hb.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise GroupError(
                        E.unknown_member_id, f"Member {member_id} is not a member of group {group.group_id}."
                    )
                log.info("group %s: member %s joins", group.group_id, member_id)
                return Member(member_id)
            _check_epoch(member, hb.member_epoch, owned_ids(hb.owned))
            return member
        static = group.static_member(hb.instance_id)
        if joining:
            if static is None:
                if member_id in group.members:
                    return group.members[member_id]
                log.info("group %s: static member %s (%s) joins", group.group_id, member_id, hb.instance_id)
                return Member(member_id, instance_id=hb.instance_id)
            if static.member_id == member_id:
                return static
            if static.member_epoch != LEAVE_STATIC_EPOCH and static.classic is None:
                # (a member of the classic protocol is replaced at once, as Kafka does)
                raise GroupError(
                    E.unreleased_instance_id,
                    f"Static member {member_id} with instance id {hb.instance_id} cannot join the group "
                    f"because the instance id is owned by {static.member_id} member.",
                )
            # the instance comes back under a new member id: it takes the old one's place
            fresh = replace(
                static,
                member_id=member_id,
                member_epoch=0,
                previous_member_epoch=0,
                assigned=copy_partitions(static.assigned),
                pending_revocation={},
            )
            self.replace_member(group, static, fresh, records)
            log.info(
                "group %s: static member %s (%s) replaces %s",
                group.group_id,
                member_id,
                hb.instance_id,
                static.member_id,
            )
            return fresh
        if static is None:
            raise GroupError(E.unknown_member_id, f"Instance id {hb.instance_id} is unknown.")
        if static.member_id != member_id:
            raise GroupError(
                E.fenced_instance_id,
                f"Static member {member_id} with instance id {hb.instance_id} was fenced by member {static.member_id}.",
            )
        _check_epoch(static, hb.member_epoch, owned_ids(hb.owned))
        return static

    def replace_member(self, group: ConsumerGroup, old: Member, new: Member, records: list[Record]) -> None:
        """Static membership: `new` (another member id) takes `old`'s place and its target."""
        target = group.target.get(old.member_id, {})
        self._drop_member(group, old.member_id, records)
        group.target[new.member_id] = target
        group.put_member(new)
        records.append(member_record(group.group_id, new))
        records.append(target_record(group.group_id, new.member_id, target))
        records.append(assignment_record(group.group_id, new))

    # ---- leaving and fencing ---------------------------------------------------------------------
    def _leave(self, hb: Heartbeat) -> tuple[list[Record], ConsumerGroupHeartbeatResponse]:
        group = self.groups.get(hb.group_id)
        if group is None:
            raise GroupError(E.group_id_not_found, f"Consumer group {hb.group_id} not found.")
        response: ConsumerGroupHeartbeatResponse = {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": None,
            "member_id": hb.member_id,
            "member_epoch": hb.member_epoch,
            "heartbeat_interval": 0,
            "assignment": None,
        }
        if hb.instance_id is None:
            member = group.members.get(hb.member_id)
            if member is None:
                raise GroupError(E.unknown_member_id, f"Member {hb.member_id} is not a member of group {hb.group_id}.")
            log.info("group %s: member %s left", hb.group_id, hb.member_id)
            return self.fence(group, [member]), response
        member = group.static_member(hb.instance_id)
        if member is None:
            raise GroupError(E.unknown_member_id, f"Instance id {hb.instance_id} is unknown.")
        if member.member_id != hb.member_id:
            raise GroupError(
                E.fenced_instance_id,
                f"Static member {hb.member_id} with instance id {hb.instance_id} was fenced by member "
                f"{member.member_id}.",
            )
        if hb.member_epoch == LEAVE_EPOCH:
            log.info("group %s: static member %s (%s) left", hb.group_id, hb.member_id, hb.instance_id)
            return self.fence(group, [member]), response
        # -2: gone for now, coming back: it keeps its place (and its partitions) until its session ends
        away = replace(
            member,
            member_epoch=LEAVE_STATIC_EPOCH,
            pending_revocation={},
            assigned={t: dict.fromkeys(ps, 0) for t, ps in member.assigned.items()},
        )
        group.put_member(away)
        log.info("group %s: static member %s (%s) left for now", hb.group_id, hb.member_id, hb.instance_id)
        return [assignment_record(group.group_id, away)], {**response, "member_epoch": LEAVE_STATIC_EPOCH}

    def fence(self, group: ConsumerGroup, members: Iterable[Member], why: str = "members left") -> list[Record]:
        """Remove members (left, or timed out): their partitions are free; the group epoch bumps. When
        only members of the classic protocol remain, the group becomes a classic group instead
        (`consumer_migration`, as the policy allows)."""
        members = list(members)
        leaving = {m.member_id for m in members}
        if can_downgrade(group, leaving, self.policy):
            return self.downgrade(group, leaving, f"the consumer group became a classic group: {why}")
        records: list[Record] = []
        for m in members:
            self._drop_member(group, m.member_id, records)
        self.refresh_regexes(group, list(group.members.values()), records, None)
        self.bump(group, self.metadata_hash(group.subscribed_topic_names()), records)
        return records

    def downgrade(self, group: ConsumerGroup, leaving: set[str], rebalance: str | None) -> list[Record]:
        """The group, but the `leaving` members, becomes a classic group (rebalancing, with the
        reason `rebalance`, or Stable); the records: the consumer group's tombstones and the
        classic group's metadata."""
        gid = group.group_id
        records = tombstones(group)
        classic = to_classic(group, leaving, self.coord.registry)
        self.forget(gid)
        value = self.coord.membership.adopt(classic, rebalance)
        records.append((GroupKey(gid), value))
        log.info("group %s: the consumer group (%d classic members) is now a classic group", gid, len(classic.members))
        return records

    def _drop_member(self, group: ConsumerGroup, member_id: str, records: list[Record]) -> None:
        group.remove_member(member_id)
        self.timers.cancel_member(group.group_id, member_id)
        records.append((CR.ConsumerGroupCurrentMemberAssignmentKey(group.group_id, member_id), None))
        records.append((CR.ConsumerGroupTargetAssignmentMemberKey(group.group_id, member_id), None))
        records.append((CR.ConsumerGroupMemberMetadataKey(group.group_id, member_id), None))

    def bump(self, group: ConsumerGroup, metadata_hash: int, records: list[Record]) -> None:
        group.group_epoch += 1
        group.metadata_hash = metadata_hash
        records.append(
            (
                CR.ConsumerGroupMetadataKey(group.group_id),
                CR.ConsumerGroupMetadataValue(group.group_epoch, metadata_hash),
            )
        )
        log.info("group %s: epoch %d", group.group_id, group.group_epoch)

    # ---- the target assignment ---------------------------------------------------------------------
    def assign(self, group: ConsumerGroup, records: list[Record]) -> None:
        name = group.preferred_assignor(self.assignors[0])
        registry = self.coord.registry
        topics: dict[uuid.UUID, TopicSpec] = {}
        specs: dict[str, MemberSpec] = {}
        for m in group.members.values():
            ids: set[uuid.UUID] = set()
            for topic_name in group.member_topic_names(m):
                t = registry.get(topic_name)
                if t is not None:
                    ids.add(t.topic_id)
                    topics[t.topic_id] = TopicSpec(t.topic_id, t.name, t.partitions)
            specs[m.member_id] = MemberSpec(
                m.member_id, m.instance_id, m.rack_id, frozenset(ids), group.target.get(m.member_id, {})
            )
        target = ASSIGNORS[name](specs, topics)
        for member_id, parts in target.items():
            new = {t: frozenset(ps) for t, ps in parts.items() if ps}
            if new != {t: ps for t, ps in group.target.get(member_id, {}).items() if ps}:
                records.append(target_record(group.group_id, member_id, new))
            group.target[member_id] = new
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp = int(time.time() * 1000)
        records.append(
            (
                CR.ConsumerGroupTargetAssignmentMetadataKey(group.group_id),
                CR.ConsumerGroupTargetAssignmentMetadataValue(group.assignment_epoch, group.assignment_timestamp),
            )
        )
        log.info("group %s: target assignment for epoch %d (%s)", group.group_id, group.assignment_epoch, name)

    # ---- subscribed topics and regular expressions -------------------------------------------------
    def _topic_ids(self, names: Iterable[str]) -> set[uuid.UUID]:
        registry = self.coord.registry
        return {t.topic_id for n in names if (t := registry.get(n)) is not None}

    def metadata_hash(self, names: Iterable[str]) -> int:
        """A digest of the subscribed topics as the assignment sees them (id, partitions): when it
        changes, the group is assigned again (Kafka's hash is another function of the same facts)."""
        registry = self.coord.registry
        h = hashlib.blake2b(digest_size=8)
        for n in sorted(names):
            t = registry.get(n)
            if t is not None:
                h.update(f"{n}\0{t.topic_id}\0{t.partitions}\n".encode())
        return int.from_bytes(h.digest(), "big", signed=True)

    def refresh_regexes(
        self,
        group: ConsumerGroup,
        members: list[Member],
        records: list[Record],
        may_describe: Callable[[str], bool] | None = None,
    ) -> bool:
        """Resolve the regexes the members use (new ones, and all after a topic change); forget the
        unused ones. Whether a resolution changed."""
        used = {m.subscribed_topic_regex for m in members if m.subscribed_topic_regex}
        changed = False
        for regex in [r for r in group.regexes if r not in used]:
            del group.regexes[regex]
            records.append((CR.ConsumerGroupRegularExpressionKey(group.group_id, regex), None))
        names = [n for n in self.coord.registry.topics if n not in INTERNAL_TOPICS]
        for regex in sorted(used):
            old = group.regexes.get(regex)
            if old is not None and old[1] == self.topics_version:
                continue
            pattern = re.compile(regex)
            topics = frozenset(n for n in names if pattern.fullmatch(n) and (may_describe is None or may_describe(n)))
            now = int(time.time() * 1000)
            group.regexes[regex] = (topics, self.topics_version, now)
            if old is None or old[0] != topics:
                changed = True
                records.append(
                    (
                        CR.ConsumerGroupRegularExpressionKey(group.group_id, regex),
                        CR.ConsumerGroupRegularExpressionValue(tuple(sorted(topics)), self.topics_version, now),
                    )
                )
        return changed

    def topic_event(self, event: str, topic: Any) -> None:
        """A topic was created, deleted or grew: regexes resolve again at each group's next heartbeat,
        and metadata hashes change there."""
        self.topics_version += 1

    # ---- timers ---------------------------------------------------------------------------------------
    def _expired(self, kind: str, group_id: str, member_id: str, epoch: int | None) -> None:
        """A member's timer of `kind` (consumer_timers) fired: it is fenced (a revocation's only
        while the member is still at the epoch it had to revoke at)."""
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or (epoch is not None and member.member_epoch != epoch):
            return
        why = {
            SESSION: "its session timed out",
            REBALANCE: f"it did not revoke its partitions at epoch {epoch} in time",
            JOIN: "the classic member failed to join within the rebalance timeout",
            SYNC: "the classic member failed to sync within the rebalance timeout",
        }[kind]
        log.info("group %s: member %s fenced: %s", group_id, member_id, why)
        records = self.fence(group, [member], f"member {member_id} fenced: {why}")
        self.coord.spawn(self._write_logged(group_id, records))

    async def _write_logged(self, group_id: str, records: list[Record]) -> None:
        try:
            await self.write(group_id, records)
        except LogError as e:
            log.info("group %s: records not written: %s", group_id, e)

    # ---- durability --------------------------------------------------------------------------------
    async def write(self, group_id: str, records: list[Record]) -> None:
        assert self.coord.store is not None
        await self.coord.store.write_consumer(group_id, records)

    def restore(self, partition: int | None = None) -> int:
        """Rebuild the consumer groups from the store's records (of one partition, or all)."""
        assert self.coord.store is not None
        mine = self.coord.store.partition_for
        n = 0
        for group_id, recs in self.coord.store.consumer.items():
            if partition is not None and mine(group_id) != partition:
                continue
            group = group_from(group_id, recs)
            if group is None:
                continue
            self.groups[group_id] = group
            n += 1
            for member_id, m in group.members.items():
                # as Kafka on load: the group's session timeout for every member, classic ones too
                self.timers.arm(SESSION, group_id, member_id, self.session_timeout_ms)
                if m.classic is None and m.state is MemberState.UNREVOKED_PARTITIONS:
                    self.timers.arm(REBALANCE, group_id, member_id, m.rebalance_timeout_ms, m.member_epoch)
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
                self.timers.cancel_member(group_id, member_id)

    def stop(self) -> None:
        self.timers.stop()

    async def drop(self, group: ConsumerGroup) -> None:
        """Delete an empty group's records (DeleteGroups, or a classic JoinGroup taking its id);
        its committed offsets are the caller's. Raises the write's LogError."""
        await self.write(group.group_id, tombstones(group))
        self.forget(group.group_id)
        log.info("consumer group %s deleted", group.group_id)

    # ---- describing and listing (consumer_views) ----------------------------------------------------
    def describe(self, group_id: str) -> ConsumerGroupDescribeDescribedGroup:
        if code := self.coord.status(group_id):
            return described_error(group_id, E(code), None)
        group = self.groups.get(group_id)
        if group is None:
            return described_error(group_id, E.group_id_not_found, f"Group {group_id} not found.")
        return described(group, self.coord.registry, self.assignors[0])

    def listed(self, states: set[str]) -> list[ListedGroup]:
        return listed(self.groups.values(), states)


# ---- helpers -----------------------------------------------------------------------------------------
def _updated(member: Member, hb: Heartbeat) -> Member:
    """The member with what this heartbeat sets (a field not sent keeps its value)."""
    return replace(
        member,
        instance_id=hb.instance_id if hb.instance_id is not None else member.instance_id,
        rack_id=hb.rack_id if hb.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=hb.rebalance_timeout_ms if hb.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        server_assignor=hb.server_assignor if hb.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=(
            tuple(sorted(set(hb.subscribed_topic_names)))
            if hb.subscribed_topic_names is not None
            else member.subscribed_topic_names
        ),
        subscribed_topic_regex=(
            (hb.subscribed_topic_regex or None)
            if hb.subscribed_topic_regex is not None
            else member.subscribed_topic_regex
        ),
        client_id=hb.client_id,
        client_host=hb.client_host,
        classic=None,  # a heartbeat of the consumer protocol: the member uses it from now on
    )


def _metadata_changed(a: Member, b: Member) -> bool:
    return (
        a.instance_id,
        a.rack_id,
        a.client_id,
        a.client_host,
        a.subscribed_topic_names,
        a.subscribed_topic_regex,
        a.rebalance_timeout_ms,
        a.server_assignor,
        a.classic,
    ) != (
        b.instance_id,
        b.rack_id,
        b.client_id,
        b.client_host,
        b.subscribed_topic_names,
        b.subscribed_topic_regex,
        b.rebalance_timeout_ms,
        b.server_assignor,
        b.classic,
    )


def _check_epoch(member: Member, epoch: int, owned: dict[uuid.UUID, set[int]] | None) -> None:
    if epoch == JOIN_EPOCH:
        return
    if epoch > member.member_epoch:
        raise GroupError(
            E.fenced_member_epoch,
            f"The consumer group member has a greater member epoch ({epoch}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if epoch < member.member_epoch and (epoch != member.previous_member_epoch or not is_subset(owned, member.assigned)):
        raise GroupError(
            E.fenced_member_epoch,
            f"The consumer group member has a smaller member epoch ({epoch}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )


__all__ = ["ConsumerGroups", "GroupError", "GroupState", "Heartbeat"]
