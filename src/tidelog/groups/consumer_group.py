"""The state of a consumer group of Kafka 4's consumer protocol (KIP-848), and its reconciliation.

A consumer group has a **group epoch**, bumped whenever what the assignment depends on changes (a
member joins or leaves, a subscription changes, a subscribed topic gains partitions or is created
or deleted); a **target assignment** computed by a server-side assignor at an **assignment epoch**
(the group epoch it was computed for); and members, each at a **member epoch** with the partitions
it owns now. A member converges to its target one heartbeat at a time (`reconcile`, Kafka's
`CurrentAssignmentBuilder`): it first gives up what it must lose (UNREVOKED_PARTITIONS, at its old
epoch, until its heartbeat no longer reports them), then takes its new partitions at the
assignment epoch, as soon as their previous owners have released them (UNRELEASED_PARTITIONS until
then), and is STABLE once it owns exactly its target. So no partition is ever owned by two members.

Each owned partition carries the epoch at which it was assigned to the member (KIP-1251, Kafka
4.3): an OffsetCommit with an older member epoch is accepted for a partition assigned at or before
that epoch, refused (STALE_MEMBER_EPOCH) for one assigned later.

Everything here is plain data and pure functions; `consumer_protocol` runs the protocol and writes
the records (`consumer_records`) that make the state durable.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .consumer_records import ClassicMemberMetadata

# member epochs with a meaning of their own (ConsumerGroupHeartbeat)
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2

Partitions = dict[uuid.UUID, dict[int, int]]  # topic id -> partition -> the epoch it was assigned at
TargetPartitions = dict[uuid.UUID, frozenset[int]]


class MemberState(enum.IntEnum):
    """Kafka's MemberState values (persisted in ConsumerGroupCurrentMemberAssignmentValue.State)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @property
    def label(self) -> str:
        return self.name.lower()


class GroupState(enum.Enum):
    """Kafka's ConsumerGroupState, as ListGroups and ConsumerGroupDescribe name it."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class Member:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    # a member that joined with the classic protocol (JoinGroup) has its session timeout and the
    # protocols it supports here (online migration); None: a member of the consumer protocol
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def classic_protocol_name(self) -> str:
        """The protocol a classic member is told it uses: the first it supports."""
        assert self.classic is not None and self.classic.supported_protocols
        return self.classic.supported_protocols[0].name

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch

    def owns(self, topic_id: uuid.UUID, partition: int) -> bool:
        return partition in self.assigned.get(topic_id, ()) or partition in self.pending_revocation.get(topic_id, ())

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The epoch at which this member was given the partition (assigned or being revoked)."""
        epoch = self.assigned.get(topic_id, {}).get(partition)
        return epoch if epoch is not None else self.pending_revocation.get(topic_id, {}).get(partition)


@dataclass
class ConsumerGroup:
    """A new group starts at group and assignment epoch 1, as in Kafka 4.3 (its first member's
    join makes it 2)."""

    group_id: str
    group_epoch: int = 1
    metadata_hash: int = 0
    assignment_epoch: int = 1
    assignment_timestamp: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, TargetPartitions] = field(default_factory=dict)  # member id -> its target assignment
    # regular expression -> (the topic names it resolved to, the metadata version, when)
    regexes: dict[str, tuple[frozenset[str], int, int]] = field(default_factory=dict)
    # (topic id, partition) -> the epoch of the member owning it now (assigned or pending revocation)
    owners: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def static_member(self, instance_id: str | None) -> Member | None:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the partition's owner, -1 when no member owns it."""
        return self.owners.get((topic_id, partition), -1)

    # ---- membership changes: the only writers of `members` and `owners` ------------------------
    def put_member(self, member: Member) -> None:
        """Add or replace a member (its partitions' ownership follows)."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        self._claim(member)

    def remove_member(self, member_id: str) -> Member | None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._release(old)
        self.target.pop(member_id, None)
        return old

    def _claim(self, m: Member) -> None:
        for parts in (m.assigned, m.pending_revocation):
            for topic_id, ps in parts.items():
                for p in ps:
                    self.owners[(topic_id, p)] = m.member_epoch

    def _release(self, m: Member) -> None:
        for parts in (m.assigned, m.pending_revocation):
            for topic_id, ps in parts.items():
                for p in ps:
                    self.owners.pop((topic_id, p), None)

    def subscribed_topic_names(self, members: Iterable[Member] | None = None) -> set[str]:
        """Every topic name a member subscribes to, by name or through a resolved regex."""
        names: set[str] = set()
        for m in self.members.values() if members is None else members:
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                names.update(self.regexes.get(m.subscribed_topic_regex, (frozenset(), 0, 0))[0])
        return names

    def member_topic_names(self, m: Member) -> set[str]:
        names = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            names.update(self.regexes.get(m.subscribed_topic_regex, (frozenset(), 0, 0))[0])
        return names

    # ---- members of the classic protocol (online migration) ------------------------------------
    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Kafka's supportsClassicProtocols: type "consumer" and, in a group with members, one of
        `names` supported by every member using the classic protocol."""
        if protocol_type != "consumer":
            return False
        wanted = set(names)
        if not self.members:
            return bool(wanted)
        classic = [m.classic for m in self.members.values() if m.classic is not None]
        return any(all(any(p.name == n for p in c.supported_protocols) for c in classic) for n in wanted)

    def all_classic_except(self, leaving: Iterable[str]) -> bool:
        """Whether every member but `leaving` (member ids) uses the classic protocol."""
        gone = set(leaving)
        return all(m.classic is not None for m in self.members.values() if m.member_id not in gone)

    def waiting_on_unreleased(self, member: Member) -> bool:
        """Whether a member of UNRELEASED_PARTITIONS still waits for a partition of its target
        that another member owns."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, ps in self.target.get(member.member_id, {}).items():
            mine = member.assigned.get(topic_id, {})
            if any(p not in mine and self.current_partition_epoch(topic_id, p) != -1 for p in ps):
                return True
        return False

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (ties: the name first in order), else `default`."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return default
        return max(sorted(counts), key=lambda name: counts[name])


def copy_partitions(parts: Mapping[uuid.UUID, Mapping[int, int]]) -> Partitions:
    return {t: dict(ps) for t, ps in parts.items() if ps}


def owned_ids(owned: Iterable[tuple[uuid.UUID, Iterable[int]]] | None) -> dict[uuid.UUID, set[int]] | None:
    """A heartbeat's owned partitions (None: not sent in this heartbeat)."""
    if owned is None:
        return None
    out: dict[uuid.UUID, set[int]] = {}
    for topic_id, ps in owned:
        out.setdefault(topic_id, set()).update(ps)
    return out


def is_subset(owned: dict[uuid.UUID, set[int]] | None, assigned: Partitions) -> bool:
    """Whether the partitions a heartbeat reports are all assigned to the member (a member that
    lost the answer with its bumped epoch may come back with its previous epoch)."""
    if owned is None:
        return False
    return all(topic_id in assigned and ps <= assigned[topic_id].keys() for topic_id, ps in owned.items())


def _owns_any(owned: dict[uuid.UUID, set[int]] | None, revoking: Partitions) -> bool:
    """Whether the member may still own any of `revoking`: true when it did not say what it owns."""
    if owned is None:
        return True
    return any(p in revoking.get(topic_id, {}) for topic_id, ps in owned.items() for p in ps)


@dataclass(frozen=True, slots=True)
class Reconciled:
    member_epoch: int
    state: MemberState
    assigned: Partitions
    pending_revocation: Partitions


def reconcile(
    member: Member,
    assignment_epoch: int,
    target: TargetPartitions,
    subscribed: set[uuid.UUID],
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: dict[uuid.UUID, set[int]] | None,
    subscription_changed: bool,
) -> Reconciled | None:
    """The member's next state towards `target` at `assignment_epoch`, or None when it stays as it
    is. `subscribed`: the ids of the topics it subscribes to now (a topic it no longer subscribes
    to is revoked even before the target says so); `partition_epoch`: the epoch of a partition's
    current owner (-1: free); `owned`: the partitions its heartbeat reports (None: not sent)."""
    if member.state is MemberState.STABLE:
        if member.member_epoch != assignment_epoch:
            return _next(member, assignment_epoch, target, subscribed, partition_epoch, owned)
        if subscription_changed:
            return _strip_unsubscribed(member, subscribed, owned)
        return None
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return _strip_unsubscribed(member, subscribed, owned) if subscription_changed else None
        return _next(member, assignment_epoch, target, subscribed, partition_epoch, owned)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, assignment_epoch, target, subscribed, partition_epoch, owned)
    # UNKNOWN (a state a newer version wrote): start again from nothing
    return _next(member, assignment_epoch, target, subscribed, partition_epoch, owned, from_epoch=assignment_epoch)


def _strip_unsubscribed(
    member: Member, subscribed: set[uuid.UUID], owned: dict[uuid.UUID, set[int]] | None
) -> Reconciled | None:
    """Revoke the topics the member no longer subscribes to, without the full reconciliation."""
    gone = {t: ps for t, ps in member.assigned.items() if t not in subscribed}
    if not gone:
        return None
    assigned = {t: dict(ps) for t, ps in member.assigned.items() if t in subscribed}
    revoking = copy_partitions(member.pending_revocation)
    for t, ps in gone.items():
        revoking.setdefault(t, {}).update(ps)
    if revoking and _owns_any(owned, revoking):
        return Reconciled(member.member_epoch, MemberState.UNREVOKED_PARTITIONS, assigned, revoking)
    return Reconciled(member.member_epoch, member.state, assigned, copy_partitions(member.pending_revocation))


def _next(
    member: Member,
    assignment_epoch: int,
    target: TargetPartitions,
    subscribed: set[uuid.UUID],
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: dict[uuid.UUID, set[int]] | None,
    from_epoch: int | None = None,
) -> Reconciled:
    epoch = member.member_epoch if from_epoch is None else from_epoch
    unreleased = False
    assigned: Partitions = {}
    revoking: Partitions = {}
    adding: dict[uuid.UUID, set[int]] = {}
    for topic_id in sorted(set(target) | set(member.assigned), key=str):
        want = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
        current = member.assigned.get(topic_id, {})
        kept = {p: e for p, e in current.items() if p in want}
        lost = {p: e for p, e in current.items() if p not in kept}
        new = set(want) - kept.keys()
        mine = member.pending_revocation.get(topic_id, {})
        blocked = {p for p in new if partition_epoch(topic_id, p) != -1 and p not in mine}
        if blocked:
            unreleased = True
            new -= blocked
        if kept:
            assigned[topic_id] = kept
        if lost:
            revoking[topic_id] = lost
        if new:
            adding[topic_id] = new
    if revoking and _owns_any(owned, revoking):
        # revoke first, at the member's current epoch; nothing new until that is acknowledged
        return Reconciled(epoch, MemberState.UNREVOKED_PARTITIONS, assigned, revoking)
    for topic_id, ps in adding.items():
        topic = assigned.setdefault(topic_id, {})
        for p in ps:
            topic[p] = assignment_epoch
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Reconciled(assignment_epoch, state, assigned, {})
