"""The state of a streams group (KIP-1071, Kafka Streams with `group.protocol=streams`), and the
reconciliation of one member towards its target (Kafka's streams `CurrentAssignmentBuilder`).

A streams group runs one application's topology. Its unit of work is a **task**: a subtopology and
a partition number (task "1_2" reads partition 2 of every source topic of subtopology "1"). The
coordinator assigns each member (one Kafka Streams client thread) **active** tasks (it processes
them), **standby** tasks (it keeps a copy of their state) and **warm-up** tasks (Kafka 4.3.1's
assignor assigns none). Members of one application instance share a **process id**: a task's
standby never goes to the process that runs it active.

As in a consumer group (`consumer_group`), the group has a **group epoch** (bumped when a member
joins, leaves or changes, when the topology is first validated, when the topics it uses change,
or when the assignment configuration changes), a **target assignment** at an **assignment epoch**,
and members at a **member epoch** with the tasks they own now; every active task carries the epoch
it was assigned at (offset commits at older epochs are accepted for it only from then on). A member
converges one heartbeat at a time: it first gives up what it must lose (UNREVOKED_TASKS), then
takes its new tasks at the assignment epoch once no member of another process runs them active,
and its own process holds them in no other role (UNRELEASED_TASKS until then).

Plain data and pure functions; `streams_protocol` runs the protocol.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from .streams_records import StreamsGroupTopologyValue
from .streams_topology import ConfiguredTopology, source_topic_map

Tasks = dict[str, frozenset[int]]  # subtopology id -> partitions (task numbers)
EpochTasks = dict[str, dict[int, int]]  # subtopology id -> partition -> the epoch it was assigned at


class MemberState(enum.IntEnum):
    """Kafka's streams MemberState values (StreamsGroupCurrentMemberAssignmentValue.State)."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


class GroupState(enum.Enum):
    """Kafka's StreamsGroupState, as ListGroups and StreamsGroupDescribe name it."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def lower(self) -> str:
        """The name ListGroups' state filter matches (Kafka's toLowerCaseString)."""
        return "not_ready" if self is GroupState.NOT_READY else self.value.lower()


@dataclass(frozen=True)
class TasksTuple:
    """A target assignment: the member's active, standby and warm-up tasks."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)


EMPTY_TASKS = TasksTuple()


@dataclass(frozen=True)
class Assigned:
    """Tasks a member owns (or must revoke): active ones with the epoch each was assigned at."""

    active: EpochTasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def active_ids(self) -> Tasks:
        return {s: frozenset(ps) for s, ps in self.active.items()}

    def merge(self, other: Assigned) -> Assigned:
        active = {s: dict(ps) for s, ps in self.active.items()}
        for s, ps in other.active.items():
            active.setdefault(s, {}).update(ps)
        return Assigned(active, _union(self.standby, other.standby), _union(self.warmup, other.warmup))


NO_TASKS = Assigned()


def _union(a: Tasks, b: Tasks) -> Tasks:
    out = dict(a)
    for s, ps in b.items():
        out[s] = out.get(s, frozenset()) | ps
    return out


def owned_any(owned: TasksTuple, tasks: Assigned) -> bool:
    """Whether a heartbeat's owned tasks include any of `tasks` (Kafka's TasksTuple.containsAny)."""
    return (
        any(s in tasks.active and not ps.isdisjoint(tasks.active[s]) for s, ps in owned.active.items())
        or any(s in tasks.standby and not ps.isdisjoint(tasks.standby[s]) for s, ps in owned.standby.items())
        or any(s in tasks.warmup and not ps.isdisjoint(tasks.warmup[s]) for s, ps in owned.warmup.items())
    )


@dataclass(frozen=True)
class Member:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()  # sorted by key
    assigned: Assigned = NO_TASKS
    pending_revocation: Assigned = NO_TASKS

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch

    def metadata(self) -> tuple[object, ...]:
        """What the member's metadata record holds (a change is written and bumps the group epoch)."""
        return (
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.rebalance_timeout_ms,
            self.topology_epoch,
            self.process_id,
            self.user_endpoint,
            self.client_tags,
        )


@dataclass
class StreamsGroup:
    """A new group starts at group and assignment epoch 1, as in Kafka 4.3 (its first member's join
    makes it 2); its validated topology epoch starts at 0, and -1 is written until one is valid."""

    group_id: str
    group_epoch: int = 1
    metadata_hash: int = 0
    validated_topology_epoch: int = 0
    last_assignment_configs: dict[str, str] = field(default_factory=dict)
    assignment_epoch: int = 1
    assignment_timestamp: int = 0
    topology: StreamsGroupTopologyValue | None = None
    configured: ConfiguredTopology | None = None  # not persisted: computed from the topology and metadata
    metadata_expired: bool = True  # the topics' metadata must be looked at again
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, TasksTuple] = field(default_factory=dict)
    shutdown_requested_by: str | None = None
    endpoint_information_epoch: int = 0
    # who holds each task now (assigned or pending revocation): (subtopology, partition) -> process ids
    active_owner: dict[tuple[str, int], str] = field(default_factory=dict)
    standby_owners: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    warmup_owners: dict[tuple[str, int], set[str]] = field(default_factory=dict)

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return GroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def source_topics(self) -> dict[str, str]:
        """Source topic (input or repartition) -> its subtopology id, of the group's topology."""
        return source_topic_map(self.topology) if self.topology is not None else {}

    # ---- membership changes: the only writers of `members` and the owner maps ------------------
    def put_member(self, member: Member) -> None:
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
        if not self.members:
            self.shutdown_requested_by = None
        return old

    def _claim(self, m: Member) -> None:
        for tasks in (m.assigned, m.pending_revocation):
            for s, ps in tasks.active.items():
                for p in ps:
                    self.active_owner[(s, p)] = m.process_id
            for owners, roles in ((self.standby_owners, tasks.standby), (self.warmup_owners, tasks.warmup)):
                for s, pset in roles.items():
                    for p in pset:
                        owners.setdefault((s, p), set()).add(m.process_id)

    def _release(self, m: Member) -> None:
        for tasks in (m.assigned, m.pending_revocation):
            for s, ps in tasks.active.items():
                for p in ps:
                    if self.active_owner.get((s, p)) == m.process_id:
                        del self.active_owner[(s, p)]
            for owners, roles in ((self.standby_owners, tasks.standby), (self.warmup_owners, tasks.warmup)):
                for s, pset in roles.items():
                    for p in pset:
                        held = owners.get((s, p))
                        if held is not None:
                            held.discard(m.process_id)
                            if not held:
                                del owners[(s, p)]


# ---- reconciliation (Kafka's streams CurrentAssignmentBuilder) --------------------------------------


class FencedUnknownState(Exception):
    """A member in a state a newer Kafka wrote, still owning tasks: it must rejoin."""


def reconcile(
    member: Member,
    assignment_epoch: int,
    target: TasksTuple,
    group: StreamsGroup,
    owned: TasksTuple | None,
) -> Member:
    """The member one step towards `target` at `assignment_epoch` (the same object when it stays).
    `owned`: the tasks its heartbeat reports (None: not sent). Raises FencedUnknownState."""
    if member.state is MemberState.STABLE:
        if member.member_epoch != assignment_epoch:
            return _next(member, member.member_epoch, assignment_epoch, target, group, owned)
        return member
    if member.state is MemberState.UNREVOKED_TASKS:
        if owned is None or owned_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, assignment_epoch, target, group, owned)
    if member.state is MemberState.UNRELEASED_TASKS:
        return _next(member, member.member_epoch, assignment_epoch, target, group, owned)
    if owned is None or not owned.is_empty():
        raise FencedUnknownState
    return _next(member, assignment_epoch, assignment_epoch, target, group, owned)


def _diff(
    current: Mapping[str, Iterable[int]],
    want: Tasks,
    unreleased: Callable[[str, int], bool],
) -> tuple[dict[str, set[int]], dict[str, set[int]], dict[str, set[int]], bool]:
    """(kept, to revoke, to add, whether some are unreleased) for one kind of task."""
    kept: dict[str, set[int]] = {}
    revoking: dict[str, set[int]] = {}
    adding: dict[str, set[int]] = {}
    blocked = False
    for s in set(want) | set(current):
        cur = set(current.get(s, ()))
        tgt = set(want.get(s, ()))
        k = cur & tgt
        new = tgt - k
        held = {p for p in new if unreleased(s, p)}
        blocked |= bool(held)
        new -= held
        if k:
            kept[s] = k
        if cur - k:
            revoking[s] = cur - k
        if new:
            adding[s] = new
    return kept, revoking, adding, blocked


def _next(
    member: Member,
    member_epoch: int,
    assignment_epoch: int,
    target: TasksTuple,
    group: StreamsGroup,
    owned: TasksTuple | None,
) -> Member:
    pid = member.process_id

    def active_unreleased(s: str, p: int) -> bool:
        return (
            (s, p) in group.active_owner
            or pid in group.standby_owners.get((s, p), ())
            or pid in group.warmup_owners.get((s, p), ())
        )

    def other_unreleased(s: str, p: int) -> bool:
        return (
            group.active_owner.get((s, p)) == pid
            or pid in group.standby_owners.get((s, p), ())
            or pid in group.warmup_owners.get((s, p), ())
        )

    cur = member.assigned
    a_kept, a_revoke, a_add, a_blocked = _diff(cur.active, target.active, active_unreleased)
    s_kept, s_revoke, s_add, s_blocked = _diff(cur.standby, target.standby, other_unreleased)
    w_kept, w_revoke, w_add, w_blocked = _diff(cur.warmup, target.warmup, other_unreleased)
    kept = Assigned(
        {s: {p: cur.active[s][p] for p in ps} for s, ps in a_kept.items()},
        _frozen(s_kept),
        _frozen(w_kept),
    )
    revoking = Assigned(
        {s: {p: cur.active[s][p] for p in ps} for s, ps in a_revoke.items()},
        _frozen(s_revoke),
        _frozen(w_revoke),
    )
    adding = Assigned(
        {s: dict.fromkeys(ps, assignment_epoch) for s, ps in a_add.items()},
        _frozen(s_add),
        _frozen(w_add),
    )
    unreleased = a_blocked or s_blocked or w_blocked
    if not revoking.is_empty() and (owned is None or owned_any(owned, revoking)):
        return replace(
            member,
            state=MemberState.UNREVOKED_TASKS,
            member_epoch=member_epoch,
            previous_member_epoch=member.member_epoch,
            assigned=kept,
            pending_revocation=revoking,
        )
    state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
    return replace(
        member,
        state=state,
        member_epoch=assignment_epoch,
        previous_member_epoch=member.member_epoch,
        assigned=kept.merge(adding) if not adding.is_empty() else kept,
        pending_revocation=NO_TASKS,
    )


def _frozen(tasks: dict[str, set[int]]) -> Tasks:
    return {s: frozenset(ps) for s, ps in tasks.items()}
