"""One classic group and its members, as the coordinator keeps them in memory.

A `Group` holds its state (changed only through `transition`, i.e. the table in `state`), the
generation, the selected protocol, the leader and the members. A `Member` carries what it sent in
JoinGroup, the assignment it received, and the futures of a JoinGroup or SyncGroup parked until
the rebalance moves on. Session liveness is a deadline plus one timer handle per member (see
`membership`), never a polling loop.
"""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..log.clock import wall_clock_ms
from .state import Event, GroupState, next_state

if TYPE_CHECKING:
    from ..wire.responses import JoinGroupResponse, SyncGroupResponse


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: asyncio.Future[JoinGroupResponse] | None = None
    sync_waiter: asyncio.Future[SyncGroupResponse] | None = None
    deadline: float = 0.0  # event-loop time after which the session has expired
    timer: asyncio.TimerHandle | None = None
    is_new: bool = True  # joined, but not yet part of a completed join

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def same_protocols(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among the candidates."""
        return next(name for name, _ in self.protocols if name in candidates)

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


@dataclass(eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, asyncio.TimerHandle | None] = field(default_factory=dict)  # MEMBER_ID_REQUIRED
    static_members: dict[str, str] = field(default_factory=dict)  # group_instance_id -> member_id
    state_timestamp: int = field(default_factory=wall_clock_ms)
    rebalance_timer: asyncio.TimerHandle | None = None
    initial_delay_deadline: float = 0.0  # for the initial-rebalance delay: latest end of the wait

    # ---- state ----------------------------------------------------------------------------
    def transition(self, event: Event) -> GroupState:
        self.state = next_state(self.state, event)
        self.state_timestamp = wall_clock_ms()
        return self.state

    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    def is_empty_classic(self) -> bool:
        """Empty (no members; offsets only, or all members gone): a consumer group may take its id."""
        return self.state is GroupState.EMPTY and not self.members

    # ---- membership -----------------------------------------------------------------------
    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.cancel_timer()
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        if instance_id is None:
            return False
        known = self.static_members.get(instance_id)
        return known is not None and known != member_id

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.join_waiter is not None for m in self.members.values())

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ---- protocols ------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        sets = [set(name for name, _ in m.protocols) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports(self, protocol_type: str, protocols: Sequence[tuple[str, bytes]]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(self.candidate_protocols() & {n for n, _ in protocols})

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        # Most votes wins; ties go to the name first preferred by the earliest member (stable).
        order = {
            name: i for i, name in enumerate(dict.fromkeys(n for m in self.members.values() for n, _ in m.protocols))
        }
        return max(votes, key=lambda name: (votes[name], -order[name]))

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), or None if unknown."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_subscription_topics(m.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics


def parse_subscription_topics(data: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocolSubscription (int16 version, [string topic], ...)."""
    try:
        pos = 2
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        topics = set()
        for _ in range(max(n, 0)):
            (ln,) = struct.unpack_from(">h", data, pos)
            pos += 2
            topics.add(bytes(data[pos : pos + ln]).decode())
            pos += ln
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
