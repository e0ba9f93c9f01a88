"""Members of the classic protocol inside a consumer group (KIP-848's online migration): their
JoinGroup, SyncGroup, Heartbeat and LeaveGroup served by the consumer group, as Kafka 4.3.1's
GroupMetadataManager does (classicGroupJoinToConsumerGroup and its siblings). Owned by
`ConsumerGroups`, whose state, records and timers it uses.

- **JoinGroup** (a group with members, unless the policy is `disabled`: INCONSISTENT_GROUP_PROTOCOL)
  creates or updates the member from its subscription (topics, rack, the partitions it still owns)
  with `ClassicMemberMetadata` (its protocols and session timeout), bumps the group epoch when its
  subscription changed, computes a new target assignment when the group epoch is ahead, reconciles
  the member one step (revocation first) and answers at once: generation = its member epoch,
  protocol type "consumer", its first protocol's name, and no leader duty (an empty leader, no
  member list). Its session timer (its own session timeout) and a sync timer (its rebalance
  timeout) are armed. A static member taking the place of the last member of the consumer
  protocol (its instance id) turns the group into a classic group instead.
- **SyncGroup** at the member's epoch answers its current assignment, serialized at its
  subscription's version; a target epoch ahead of the member (unless it is revoking) answers
  REBALANCE_IN_PROGRESS.
- **Heartbeat** answers REBALANCE_IN_PROGRESS when the member must rejoin: the target moved past its
  epoch, it must revoke partitions, or the partitions it waits for were released. Being told so
  arms a join timer (its rebalance timeout).
- **LeaveGroup** fences the members named (any member, by id or instance id).

Any of the session, join or sync timers expiring fences the member: the group epoch bumps, or, when
only classic members remain, the group becomes a classic group again (`consumer_migration`).
Generation checks use the member epoch (ILLEGAL_GENERATION); a member of the consumer protocol
named in JoinGroup/SyncGroup/Heartbeat is UNKNOWN_MEMBER_ID.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ..log.errors import LogError
from .consumer_embedded import EmbeddedFormatError, decode_subscription
from .consumer_group import ConsumerGroup, Member, MemberState
from .consumer_migration import assignment_bytes, classic_metadata, downgrade_enabled, topic_ids
from .consumer_persist import Record, member_record
from .consumer_requests import GroupError
from .membership import ClassicJoin, join_error, sync_error

if TYPE_CHECKING:
    from ..wire.responses import JoinGroupResponse, MemberResponse, SyncGroupResponse
    from .consumer_protocol import ConsumerGroups

log = logging.getLogger("tidelog.groups")
NONE = 0
JOIN, SYNC, SESSION = "join", "sync", "session"


class ClassicMembers:
    def __init__(self, groups: ConsumerGroups) -> None:
        self.cg = groups

    # ---- JoinGroup -----------------------------------------------------------------------------
    async def join(self, group: ConsumerGroup, req: ClassicJoin) -> JoinGroupResponse:
        """A classic member's JoinGroup."""
        gid = group.group_id
        try:
            records, response = self._join(group, req)
        except GroupError as e:
            log.info("group %s: classic JoinGroup of %s refused: %s", gid, req.member_id or "a new member", e.message)
            return join_error(e.code, "")
        if response["error_code"]:
            return response
        try:
            await self.cg.write(gid, records)
        except LogError as e:
            return join_error(E(e.error_code), "")
        mid = response["member_id"]
        self.cg.timers.cancel(JOIN, gid, mid)
        if self.cg.groups.get(gid) is group and mid in group.members:
            self.cg.timers.arm(SESSION, gid, mid, req.session_ms)
            self.cg.timers.arm(SYNC, gid, mid, req.rebalance_ms)
        return response

    def _join(self, group: ConsumerGroup, req: ClassicJoin) -> tuple[list[Record], JoinGroupResponse]:
        member_id, instance_id, protocols = req.member_id, req.instance_id, req.protocols
        cg, gid = self.cg, group.group_id
        if cg.policy == "disabled":
            raise GroupError(
                E.inconsistent_group_protocol,
                f"Cannot join the consumer group {gid} with the classic protocol because the group migration "
                "is disabled.",
            )
        unknown = not member_id
        if unknown:
            member_id = str(uuid.uuid4())
        if len(group.members) >= cg.max_size and member_id not in group.members:
            raise GroupError(
                E.group_max_size_reached,
                f"The consumer group has reached its maximum capacity of {cg.max_size} members.",
            )
        if not group.supports_classic_protocols(req.protocol_type, [n for n, _ in protocols]):
            raise GroupError(E.inconsistent_group_protocol, f"Member {member_id}'s protocols are not supported.")
        if req.require_known_member_id and unknown and instance_id is None:
            log.info("group %s: a classic member joins; asked to rejoin as %s", gid, member_id)
            return [], join_error(E.member_id_required, member_id)
        try:
            subscription = decode_subscription(protocols[0][1])
        except EmbeddedFormatError as e:
            raise GroupError(E.unknown_server_error, f"Malformed embedded consumer protocol: {e}") from None
        records: list[Record] = []
        # a classic member taking the place of the last member of the consumer protocol (a static
        # member coming back with JoinGroup) turns the group into a classic group (Kafka's
        # validateOnlineDowngradeWithReplacedMember)
        replaced = group.static_member(instance_id)
        downgrade = (
            replaced is not None
            and replaced.classic is None
            and group.all_classic_except({replaced.member_id})
            and downgrade_enabled(cg.policy)
        )
        if instance_id is None:
            member = group.members.get(member_id) or Member(member_id)
        else:
            member = self._static(group, member_id, instance_id, unknown, records)
        if member.member_id not in group.members:
            log.info("group %s: member %s joins with the classic protocol", gid, member_id)
        updated = replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            subscribed_topic_regex=None,  # classic members subscribe by name
            client_id=req.client_id,
            client_host=req.client_host,
            classic=classic_metadata(req.session_ms, protocols),
        )
        changed = (updated.subscribed_topic_names, updated.subscribed_topic_regex) != (
            member.subscribed_topic_names,
            member.subscribed_topic_regex,
        )
        if updated != member or member.member_id not in group.members:
            records.append(member_record(gid, updated))
        members = [*(m for m in group.members.values() if m.member_id != updated.member_id), updated]
        regexes_changed = cg.refresh_regexes(group, members, records)
        new_hash = cg.metadata_hash(group.subscribed_topic_names(members))
        if changed or regexes_changed or new_hash != group.metadata_hash:
            cg.bump(group, new_hash, records)
        group.put_member(updated)
        owned = topic_ids(subscription.owned_partitions, cg.coord.registry)
        if downgrade:
            # a new subscription: the classic group rebalances; else the member is reconciled first
            stale = group.assignment_epoch < group.group_epoch
            now = updated if stale else cg.reconciled(group, updated, owned, changed, records)
            why = f"Downgrade group {gid} from consumer to classic with stale assignment." if stale else None
            records += cg.downgrade(group, set(), why)
            log.info("group %s: static member %s replaced the last consumer-protocol member", gid, member_id)
        else:
            if group.assignment_epoch < group.group_epoch:
                cg.assign(group, records)
            now = cg.reconciled(group, updated, owned, changed, records)
        log.info(
            "group %s: classic member %s joined at epoch %d (%s)", gid, now.member_id, now.member_epoch, now.state.label
        )
        response: JoinGroupResponse = {
            "error_code": NONE,
            "generation_id": now.member_epoch,
            "protocol_type": "consumer",
            "protocol_name": now.classic_protocol_name(),
            "leader": "",
            "member_id": now.member_id,
            "members": [],
        }
        return records, response

    def _static(
        self, group: ConsumerGroup, member_id: str, instance_id: str, unknown: bool, records: list[Record]
    ) -> Member:
        existing = group.static_member(instance_id)
        if unknown:
            if existing is None:
                return Member(member_id)
            fresh = replace(
                existing, member_id=member_id, member_epoch=0, previous_member_epoch=0, pending_revocation={}
            )
            self.cg.replace_member(group, existing, fresh, records)
            log.info(
                "group %s: static member %s (%s) rejoins with the classic protocol, replacing %s",
                group.group_id,
                member_id,
                instance_id,
                existing.member_id,
            )
            return fresh
        return self._member(group, member_id, instance_id)

    @staticmethod
    def _member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> Member:
        """Kafka's validateConsumerGroupMember: the member by its id, or by its instance id."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(E.unknown_member_id, f"Member {member_id} is not a member of group {group.group_id}.")
            return member
        member = group.static_member(instance_id)
        if member is None:
            raise GroupError(
                E.unknown_member_id, f"Member with instance id {instance_id} is not a member of group {group.group_id}."
            )
        if member.member_id != member_id:
            raise GroupError(
                E.fenced_instance_id,
                f"Static member {member_id} with instance id {instance_id} is fenced by existing member "
                f"{member.member_id}.",
            )
        return member

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int) -> Member:
        member = self._member(group, member_id, instance_id)
        if member.classic is None:
            raise GroupError(E.unknown_member_id, f"Member {member.member_id} does not use the classic protocol.")
        if generation != member.member_epoch:
            raise GroupError(
                E.illegal_generation,
                f"The request generation id {generation} is not equal to the member epoch {member.member_epoch} "
                f"of member {member.member_id}.",
            )
        return member

    # ---- SyncGroup -----------------------------------------------------------------------------
    def sync(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> SyncGroupResponse:
        gid = group.group_id
        try:
            member = self._classic_member(group, member_id, instance_id, generation)
            name = member.classic_protocol_name()
            if (protocol_type is not None and protocol_type != "consumer") or (
                protocol_name is not None and protocol_name != name
            ):
                raise GroupError(E.inconsistent_group_protocol, f"Member {member_id}'s protocol does not match.")
            if group.assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
                self.cg.timers.arm(JOIN, gid, member_id, member.rebalance_timeout_ms, if_absent=True)
                raise GroupError(E.rebalance_in_progress, f"A new rebalance is triggered in group {gid}.")
        except GroupError as e:
            return sync_error(e.code)
        assert member.classic is not None
        self.cg.timers.cancel(SYNC, gid, member.member_id)
        self.cg.timers.arm(SESSION, gid, member.member_id, member.classic.session_timeout_ms)
        subscription = member.classic.supported_protocols[0].metadata
        return {
            "error_code": NONE,
            "protocol_type": protocol_type,
            "protocol_name": protocol_name,
            "assignment": assignment_bytes(member.assigned, subscription, self.cg.coord.registry),
        }

    # ---- Heartbeat -----------------------------------------------------------------------------
    def heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int) -> int:
        gid = group.group_id
        try:
            member = self._classic_member(group, member_id, instance_id, generation)
        except GroupError as e:
            return int(e.code)
        assert member.classic is not None
        self.cg.timers.arm(SESSION, gid, member.member_id, member.classic.session_timeout_ms)
        if (
            member.member_epoch < group.assignment_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (member.state is MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased(member))
        ):
            self.cg.timers.arm(JOIN, gid, member.member_id, member.rebalance_timeout_ms, if_absent=True)
            return E.rebalance_in_progress.value
        return NONE

    # ---- LeaveGroup ----------------------------------------------------------------------------
    async def leave(
        self, group: ConsumerGroup, leaving: list[tuple[str, str | None]]
    ) -> tuple[int, list[MemberResponse]]:
        results: list[MemberResponse] = []
        fenced: dict[str, Member] = {}
        for member_id, instance_id in leaving:
            try:
                if instance_id is None:
                    member = self._member(group, member_id, None)
                else:
                    static = group.static_member(instance_id)
                    if static is None:
                        raise GroupError(E.unknown_member_id, f"Instance id {instance_id} is unknown.")
                    if member_id and static.member_id != member_id:
                        raise GroupError(E.fenced_instance_id, f"Static member {member_id} is fenced.")
                    member = static
            except GroupError as e:
                results.append({"member_id": member_id, "group_instance_id": instance_id, "error_code": e.code})
                continue
            log.info("group %s: member %s left through LeaveGroup", group.group_id, member.member_id)
            results.append({"member_id": member_id, "group_instance_id": instance_id, "error_code": NONE})
            fenced[member.member_id] = member
        if fenced:
            records = self.cg.fence(group, fenced.values(), "members left through LeaveGroup")
            try:
                await self.cg.write(group.group_id, records)
            except LogError as e:
                return e.error_code, []
        return NONE, results
