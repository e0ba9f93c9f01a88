"""Group membership for the classic protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, the
rebalances they drive, and session expiry.

All state lives on the event loop, no locks: a JoinGroup or SyncGroup that has to wait parks a
future on its member and the request coroutine awaits it. Time is asyncio timer handles — one per
member for its session (armed at a deadline, re-armed lazily when it fires early), one per group
for the rebalance or sync wait — so an idle broker does no work. State changes go through
`Group.transition` (the table in `state`).

Answers are plain dicts shaped like the newest version of each response (see `wire.control`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from kio.schema.errors import ErrorCode as E

from .group import Group, Member
from .records import GroupValue, MemberValue
from .state import Event
from .state import GroupState as S

if TYPE_CHECKING:
    from ..wire.responses import JoinGroupResponse, JoinGroupResponseMember, MemberResponse, SyncGroupResponse
    from .coordinator import GroupCoordinator
    from .store import OffsetStore

log = logging.getLogger("tidelog.groups")


@dataclass(frozen=True, slots=True)
class ClassicJoin:
    """One JoinGroup, as the handler reads it from any version (the coordinator, the classic
    membership and a consumer group's classic members take it whole). `rebalance_ms` is the session
    timeout for v0, which has none; `require_known_member_id` is v4+ (KIP-394),
    `skip_assignment` v9+ (KIP-814), `reason` v8+ (KIP-800)."""

    group_id: str
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_ms: int
    rebalance_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool
    skip_assignment: bool = False
    reason: str | None = None


NONE = 0
T = TypeVar("T")


def resolve(fut: asyncio.Future[T] | None, value: T) -> None:
    if fut is not None and not fut.done():
        fut.set_result(value)


def join_error(code: E | int, member_id: str = "", generation: int = -1) -> JoinGroupResponse:
    return {
        "error_code": code,
        "generation_id": generation,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


def sync_error(code: E | int) -> SyncGroupResponse:
    return {"error_code": code, "protocol_type": None, "protocol_name": None, "assignment": b""}


class Membership:
    """The rebalance protocol over the coordinator's groups (`coord.groups`, persisted through
    `coord.store`)."""

    def __init__(self, coord: GroupCoordinator) -> None:
        self.coord = coord
        self.groups = coord.groups
        cfg = coord.config
        self.min_session_ms = cfg["group.min.session.timeout.ms"]
        self.max_session_ms = cfg["group.max.session.timeout.ms"]
        self.initial_delay_ms = cfg["group.initial.rebalance.delay.ms"]

    @property
    def store(self) -> OffsetStore | None:
        return self.coord.store

    def shutdown(self, group: Group, code: E = E.coordinator_not_available) -> None:
        """Cancel the group's timers and answer every parked request with `code` (the coordinator
        stops, or moves: NOT_COORDINATOR)."""
        self.cancel_rebalance_timer(group)
        for m in group.members.values():
            m.cancel_timer()
            resolve(m.join_waiter, join_error(code, m.member_id))
            resolve(m.sync_waiter, sync_error(code))
        for handle in group.pending_members.values():
            if handle is not None:
                handle.cancel()

    def adopt(self, group: Group, reason: str | None) -> GroupValue:
        """A consumer group became this classic group (online migration, `consumer_migration`): it
        is Stable at its generation with its members' assignments, their sessions start now, and,
        with a `reason`, a rebalance begins at once (the members learn of it in their heartbeats).
        The record of the group as it was adopted, for the caller to write with the consumer
        group's tombstones."""
        group.transition(Event.LOADED_ACTIVE)
        value = self._group_value(group)
        self.groups[group.group_id] = group
        for m in group.members.values():
            self.touch(m, group)
        if reason is not None:
            self._prepare_rebalance(group, reason)
        return value

    # ---- sessions ----------------------------------------------------------------------------
    def touch(self, member: Member, group: Group) -> None:
        """The member is alive now: push its session deadline out, arming its timer if idle."""
        loop = asyncio.get_running_loop()
        member.deadline = loop.time() + member.session_timeout_ms / 1000
        if member.timer is None:
            member.timer = loop.call_at(member.deadline, self._session_check, group, member)

    def _session_check(self, group: Group, member: Member) -> None:
        member.timer = None
        if group.members.get(member.member_id) is not member:
            return
        loop = asyncio.get_running_loop()
        waiting = (member.join_waiter is not None and not member.join_waiter.done()) or (
            member.sync_waiter is not None and not member.sync_waiter.done()
        )
        if waiting:
            # A member parked in JoinGroup/SyncGroup cannot heartbeat; the rebalance timers rule it.
            member.deadline = loop.time() + member.session_timeout_ms / 1000
        if loop.time() < member.deadline:
            member.timer = loop.call_at(member.deadline, self._session_check, group, member)
            return
        log.info(
            "group %s: member %s session expired after %d ms",
            group.group_id,
            member.member_id,
            member.session_timeout_ms,
        )
        self._remove_member(group, member, "session timeout")

    def _remove_member(self, group: Group, member: Member, reason: str) -> None:
        group.remove(member.member_id)
        resolve(member.join_waiter, join_error(E.unknown_member_id, member.member_id))
        resolve(member.sync_waiter, sync_error(E.unknown_member_id))
        if group.is_(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member.member_id} left ({reason})")
        elif group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # ---- rebalance ---------------------------------------------------------------------------
    def cancel_rebalance_timer(self, group: Group) -> None:
        if group.rebalance_timer is not None:
            group.rebalance_timer.cancel()
            group.rebalance_timer = None

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        loop = asyncio.get_running_loop()
        self.cancel_rebalance_timer(group)
        if group.is_(S.COMPLETING_REBALANCE):
            # Assignments of the generation being completed are void: everyone must rejoin.
            for m in group.members.values():
                resolve(m.sync_waiter, sync_error(E.rebalance_in_progress))
                m.sync_waiter = None
        initial = group.is_(S.EMPTY)
        group.transition(Event.REBALANCE)
        log.info("group %s: preparing rebalance (generation %d): %s", group.group_id, group.generation, reason)
        timeout = max(group.max_rebalance_timeout_ms(), 0) / 1000
        if initial and self.initial_delay_ms > 0:
            group.initial_delay_deadline = loop.time() + timeout
            delay = min(self.initial_delay_ms / 1000, timeout)
            group.rebalance_timer = loop.call_later(delay, self._initial_delay_over, group, len(group.members))
        else:
            group.initial_delay_deadline = 0.0
            group.rebalance_timer = loop.call_later(timeout, self._complete_join, group)
            self._try_complete_join(group)

    def _initial_delay_over(self, group: Group, members_before: int) -> None:
        """KIP-134: while new members keep arriving, wait another delay, up to the rebalance timeout."""
        loop = asyncio.get_running_loop()
        group.rebalance_timer = None
        remaining = group.initial_delay_deadline - loop.time()
        if len(group.members) > members_before and remaining > 0:
            delay = min(self.initial_delay_ms / 1000, remaining)
            group.rebalance_timer = loop.call_later(delay, self._initial_delay_over, group, len(group.members))
            return
        group.initial_delay_deadline = 0.0
        if group.all_joined():
            self._complete_join(group)
        else:
            group.rebalance_timer = loop.call_later(max(remaining, 0), self._complete_join, group)

    def _try_complete_join(self, group: Group) -> None:
        if group.is_(S.PREPARING_REBALANCE) and group.initial_delay_deadline == 0.0 and group.all_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if not group.is_(S.PREPARING_REBALANCE):
            return
        self.cancel_rebalance_timer(group)
        group.initial_delay_deadline = 0.0
        # Dynamic members that did not rejoin in time are gone; static ones keep their place.
        for m in [m for m in group.members.values() if m.join_waiter is None and m.group_instance_id is None]:
            log.info("group %s: member %s did not rejoin in time", group.group_id, m.member_id)
            group.remove(m.member_id)
            resolve(m.sync_waiter, sync_error(E.unknown_member_id))
        joined = [m for m in group.members.values() if m.join_waiter is not None]
        if group.members and not joined:
            # Only absent static members remain: wait for them, or for their sessions to expire.
            loop = asyncio.get_running_loop()
            group.rebalance_timer = loop.call_later(group.max_rebalance_timeout_ms() / 1000, self._complete_join, group)
            return
        group.generation += 1
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.transition(Event.JOIN_COMPLETE_EMPTY)
            log.info("group %s: empty at generation %d", group.group_id, group.generation)
            self.coord.spawn(self._persist_group(group))
            return
        if group.leader_id not in group.members or group.members[group.leader_id].join_waiter is None:
            group.leader_id = joined[0].member_id
        group.protocol_name = group.select_protocol()
        group.transition(Event.JOIN_COMPLETE)
        log.info(
            "group %s: generation %d with %d members, protocol %s, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol_name,
            group.leader_id,
        )
        for m in joined:
            waiter, m.join_waiter = m.join_waiter, None
            m.is_new = False
            resolve(waiter, self._join_answer(group, m))
            self.touch(m, group)
        loop = asyncio.get_running_loop()
        group.rebalance_timer = loop.call_later(
            group.max_rebalance_timeout_ms() / 1000, self._sync_expired, group, group.generation
        )

    def _join_answer(self, group: Group, member: Member) -> JoinGroupResponse:
        members: list[JoinGroupResponseMember] = []
        if member.member_id == group.leader_id:
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata(group.protocol_name),
                }
                for m in group.members.values()
            ]
        return {
            "error_code": NONE,
            "generation_id": group.generation,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": group.leader_id or "",
            "member_id": member.member_id,
            "members": members,
        }

    def _sync_expired(self, group: Group, generation: int) -> None:
        group.rebalance_timer = None
        if not group.is_(S.COMPLETING_REBALANCE) or group.generation != generation:
            return
        for m in [m for m in group.members.values() if m.sync_waiter is None]:
            log.info("group %s: member %s sent no SyncGroup in time", group.group_id, m.member_id)
            group.remove(m.member_id)
        self._prepare_rebalance(group, "SyncGroup timed out")

    def _group_value(self, group: Group) -> GroupValue:
        return GroupValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation,
            protocol=group.protocol_name,
            leader=group.leader_id,
            current_state_timestamp=group.state_timestamp,
            members=tuple(
                MemberValue(
                    m.member_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(group.protocol_name),
                    m.assignment,
                    m.group_instance_id,
                )
                for m in group.members.values()
            ),
        )

    async def _persist_group(self, group: Group) -> None:
        assert self.store is not None
        await self.store.store_group(group.group_id, self._group_value(group))

    # ---- JoinGroup ---------------------------------------------------------------------------
    async def join(self, req: ClassicJoin) -> JoinGroupResponse:
        """A member joins or rejoins; answered when the rebalance completes. `require_known_member_id`
        (v4+, KIP-394): a new dynamic member first gets its id with MEMBER_ID_REQUIRED.
        `skip_assignment` (v9+, KIP-814): a static leader that comes back to a Stable group is told
        it leads, with the members, but not to assign; before v9 it is told the old leader id, so
        that it does not assign. `reason` (v8+, KIP-800) goes into the rebalance's log line."""
        why = f" (client reason: {req.reason})" if req.reason else ""
        member_id = req.member_id
        if code := self.coord.status(req.group_id):
            return join_error(E(code), member_id)
        if not req.group_id:
            return join_error(E.invalid_group_id, member_id)
        if not self.min_session_ms <= req.session_ms <= self.max_session_ms:
            return join_error(E.invalid_session_timeout, member_id)
        group = self.groups.get(req.group_id)
        if group is None:
            if member_id:
                return join_error(E.unknown_member_id, member_id)
            group = self.groups[req.group_id] = Group(req.group_id)
        if group.is_(S.DEAD):
            return join_error(E.coordinator_not_available, member_id)
        if not group.supports(req.protocol_type, req.protocols):
            return join_error(E.inconsistent_group_protocol, member_id)

        fresh = Member(
            member_id,
            req.instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_ms,
            req.session_ms,
            req.protocol_type,
            list(req.protocols),
        )
        if not member_id:
            return await self._join_unknown(group, fresh, req.require_known_member_id, req.skip_assignment, why)
        if member_id in group.pending_members:
            handle = group.pending_members.pop(member_id)
            if handle is not None:
                handle.cancel()
            return await self._add_and_rebalance(group, fresh, why)
        if group.static_member_fenced(member_id, req.instance_id):
            return join_error(E.fenced_instance_id, member_id)
        member = group.members.get(member_id)
        if member is None:
            return join_error(E.unknown_member_id, member_id)
        return await self._join_known(group, member, fresh, why)

    async def _join_unknown(
        self, group: Group, fresh: Member, require_known_member_id: bool, skip_assignment: bool, why: str
    ) -> JoinGroupResponse:
        fresh.member_id = f"{fresh.group_instance_id or fresh.client_id}-{uuid.uuid4()}"
        if fresh.group_instance_id is not None:
            old_id = group.static_members.get(fresh.group_instance_id)
            if old_id is not None and old_id in group.members:
                return await self._replace_static(group, group.members[old_id], fresh, skip_assignment, why)
            return await self._add_and_rebalance(group, fresh, why)
        if require_known_member_id:
            # KIP-394: hand out the id first; the member joins for real with it.
            loop = asyncio.get_running_loop()
            mid = fresh.member_id
            group.pending_members[mid] = loop.call_later(
                fresh.session_timeout_ms / 1000, self._pending_expired, group, mid
            )
            return join_error(E.member_id_required, mid)
        return await self._add_and_rebalance(group, fresh, why)

    def _pending_expired(self, group: Group, member_id: str) -> None:
        if group.pending_members.pop(member_id, 0) != 0:
            self._try_complete_join(group)

    async def _replace_static(
        self, group: Group, old: Member, fresh: Member, skip_assignment: bool, why: str
    ) -> JoinGroupResponse:
        """A static member came back with a new member id: it takes over the old one's place."""
        log.info("group %s: static member %s replaces %s", group.group_id, fresh.member_id, old.member_id)
        group.members.pop(old.member_id)
        old.cancel_timer()
        resolve(old.join_waiter, join_error(E.fenced_instance_id, old.member_id))
        resolve(old.sync_waiter, sync_error(E.fenced_instance_id))
        fresh.assignment = old.assignment
        fresh.is_new = False
        group.members[fresh.member_id] = fresh
        group.static_members[fresh.group_instance_id] = fresh.member_id  # type: ignore[index]  # static: has an id
        current_leader = group.leader_id
        if current_leader == old.member_id:
            group.leader_id = fresh.member_id
        # As Kafka: a Stable group keeps its generation unless the protocol the next generation
        # would select changes; the member's subscription bytes may differ (new metadata, a new
        # client version) without a rebalance, the leader rebalances when it sees fit.
        if group.is_(S.STABLE) and group.protocol_name == group.select_protocol():
            self.touch(fresh, group)
            await self._persist_group(group)
            # No rebalance: the member gets the current generation. v9+: a leader gets the members
            # and is told to skip the assignment (it keeps watching metadata); before v9 no member
            # gets the members, and the leader is told the old leader id, so it does not assign.
            answer = self._join_answer(group, fresh)
            if skip_assignment:
                answer["skip_assignment"] = fresh.member_id == group.leader_id
            else:
                answer["members"] = []
                answer["leader"] = current_leader or ""
            return answer
        return await self._await_join(group, fresh, why)

    async def _add_and_rebalance(self, group: Group, member: Member, why: str = "") -> JoinGroupResponse:
        group.add(member)
        self.touch(member, group)
        return await self._await_join(group, member, why)

    async def _await_join(self, group: Group, member: Member, why: str = "") -> JoinGroupResponse:
        loop = asyncio.get_running_loop()
        resolve(member.join_waiter, join_error(E.rebalance_in_progress, member.member_id))
        member.join_waiter = waiter = loop.create_future()
        if group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"member {member.member_id} joined{why}")
        return await asyncio.shield(waiter)

    async def _join_known(self, group: Group, member: Member, fresh: Member, why: str) -> JoinGroupResponse:
        same = member.same_protocols(fresh.protocols)
        member.protocols = fresh.protocols
        member.session_timeout_ms = fresh.session_timeout_ms
        member.rebalance_timeout_ms = fresh.rebalance_timeout_ms
        member.client_id, member.client_host = fresh.client_id, fresh.client_host
        self.touch(member, group)
        if group.is_(S.PREPARING_REBALANCE):
            return await self._await_join(group, member, why)
        if group.is_(S.COMPLETING_REBALANCE) and same:
            return self._join_answer(group, member)  # the JoinGroup response was lost: repeat it
        if group.is_(S.STABLE) and same and member.member_id != group.leader_id:
            return self._join_answer(group, member)
        if group.is_(S.STABLE, S.COMPLETING_REBALANCE):
            return await self._await_join(group, member, why)
        return join_error(E.unknown_member_id, member.member_id)

    # ---- SyncGroup ---------------------------------------------------------------------------
    def _check_member(self, group: Group | None, member_id: str, instance_id: str | None, generation: int) -> int:
        if group is None:
            return E.unknown_member_id.value
        if group.is_(S.DEAD):
            return E.coordinator_not_available.value
        if group.static_member_fenced(member_id, instance_id):
            return E.fenced_instance_id.value
        if member_id not in group.members:
            return E.unknown_member_id.value
        if generation != group.generation:
            return E.illegal_generation.value
        return NONE

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
        if code := self.coord.status(group_id):
            return sync_error(E(code))
        group = self.groups.get(group_id)
        err = self._check_member(group, member_id, instance_id, generation)
        if err:
            return sync_error(err)
        assert group is not None
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return sync_error(E.inconsistent_group_protocol)
        member = group.members[member_id]
        if group.is_(S.PREPARING_REBALANCE):
            return sync_error(E.rebalance_in_progress)
        if group.is_(S.STABLE):
            self.touch(member, group)
            return self._sync_answer(group, member)
        if not group.is_(S.COMPLETING_REBALANCE):
            return sync_error(E.unknown_member_id)
        loop = asyncio.get_running_loop()
        resolve(member.sync_waiter, sync_error(E.rebalance_in_progress))
        member.sync_waiter = waiter = loop.create_future()
        self.touch(member, group)
        if member_id == group.leader_id:
            await self._leader_synced(group, assignments)
        return await asyncio.shield(waiter)

    async def _leader_synced(self, group: Group, assignments: dict[str, bytes]) -> None:
        gen = group.generation
        value = self._group_value(group)
        value = GroupValue(
            value.protocol_type,
            value.generation,
            value.protocol,
            value.leader,
            value.current_state_timestamp,
            tuple(
                MemberValue(
                    mv.member_id,
                    mv.client_id,
                    mv.client_host,
                    mv.rebalance_timeout,
                    mv.session_timeout,
                    mv.subscription,
                    assignments.get(mv.member_id, b""),
                    mv.group_instance_id,
                )
                for mv in value.members
            ),
        )
        assert self.store is not None
        try:
            await self.store.store_group(group.group_id, value)
        except Exception:
            log.exception("group %s: could not persist the assignment", group.group_id)
            if group.is_(S.COMPLETING_REBALANCE) and group.generation == gen:
                for m in group.members.values():
                    resolve(m.sync_waiter, sync_error(E.coordinator_not_available))
                    m.sync_waiter = None
                self._prepare_rebalance(group, "persisting the assignment failed")
            return
        if not group.is_(S.COMPLETING_REBALANCE) or group.generation != gen:
            return  # a rebalance began meanwhile; its waiters were already answered
        self.cancel_rebalance_timer(group)
        for m in group.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        group.transition(Event.ASSIGNMENT_SYNCED)
        log.info("group %s: stable at generation %d", group.group_id, group.generation)
        for m in group.members.values():
            waiter, m.sync_waiter = m.sync_waiter, None
            resolve(waiter, self._sync_answer(group, m))

    def _sync_answer(self, group: Group, member: Member) -> SyncGroupResponse:
        return {
            "error_code": NONE,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "assignment": member.assignment,
        }

    # ---- Heartbeat / LeaveGroup --------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> int:
        """A classic member's heartbeat. To a coordinator still loading the group it is answered
        NONE without looking, as Kafka does (aiokafka's heartbeat task treats
        COORDINATOR_LOAD_IN_PROGRESS as fatal); the next one after the load is checked."""
        if code := self.coord.status(group_id):
            return NONE if code == E.coordinator_load_in_progress.value else code
        group = self.groups.get(group_id)
        err = self._check_member(group, member_id, instance_id, generation)
        if err:
            return err
        assert group is not None
        self.touch(group.members[member_id], group)
        if group.is_(S.PREPARING_REBALANCE):
            return E.rebalance_in_progress.value
        return NONE

    def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[int, list[MemberResponse]]:
        """(top-level error, per-member results) for members given as (member_id, group_instance_id)."""
        if code := self.coord.status(group_id):
            return code, []
        group = self.groups.get(group_id)
        if group is None:
            return E.unknown_member_id.value, []
        if group.is_(S.DEAD):
            return E.coordinator_not_available.value, []
        results: list[MemberResponse] = []
        for member_id, instance_id in leaving:
            results.append(
                {
                    "member_id": member_id,
                    "group_instance_id": instance_id,
                    "error_code": self._leave_one(group, member_id, instance_id),
                }
            )
        return NONE, results

    def _leave_one(self, group: Group, member_id: str, instance_id: str | None) -> int:
        if not member_id and instance_id is not None:
            member_id = group.static_members.get(instance_id, "")
            if not member_id:
                return E.unknown_member_id.value
        elif group.static_member_fenced(member_id, instance_id):
            return E.fenced_instance_id.value
        if member_id in group.pending_members:
            handle = group.pending_members.pop(member_id)
            if handle is not None:
                handle.cancel()
            self._try_complete_join(group)
            return NONE
        member = group.members.get(member_id)
        if member is None:
            return E.unknown_member_id.value
        log.info("group %s: member %s leaves", group.group_id, member_id)
        self._remove_member(group, member, "LeaveGroup")
        return NONE
