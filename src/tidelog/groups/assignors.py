"""Server-side assignors of the consumer group protocol (KIP-848): ``uniform`` and ``range``.

The coordinator computes a group's target assignment with one of these, chosen by
``group.consumer.assignors`` (default ``uniform,range``; a member may name one with
``group.remote.assignor``). They are pure functions of the group's members and the topics that
exist: no I/O, no clock, no randomness. Each one takes

- ``members``: member id -> `MemberSpec` (its subscription, already resolved from names and
  regular expressions to topic ids, and its partitions in the previous target assignment), and
- ``topics``: topic id -> `TopicSpec` of the topics that exist now,

and returns every member's new target assignment (member id -> topic id -> partitions; each member
is present, possibly with nothing). A subscribed topic id that is not in ``topics`` (deleted, or not
created yet) is ignored, as Kafka's coordinator drops names it cannot resolve before calling its
assignors. As Kafka's coordinator does, the caller passes a static member that rejoined under a new
member id the partitions its instance held before (as ``current``), and leaves departed members out.
The keys of ``members`` are the member ids used; racks are carried but no assignor uses them.

``uniform`` (Kafka's ``UniformAssignor``)
    Every partition of every subscribed topic goes to exactly one of its subscribers.

    When all members subscribe to the same topics (after dropping unknown ones) the assignment is
    balanced: partition counts differ by at most one between any two members. It is sticky: a
    member keeps its previous partitions up to its quota, so exactly the partitions that balance
    forces to move are moved (for a member joining or leaving, the minimum possible). The members
    that hold one partition above the minimum quota when the split is uneven are those that already
    held more than the minimum, first in member order (and the last members where too few did).

    With different subscriptions it runs Kafka's heterogeneous algorithm: keep every previous
    partition that is still subscribed, hand the rest out topic by topic (topics with the most
    partitions per subscriber first) to the least loaded subscriber, then move partitions from the
    most to the least loaded subscribers of each topic until, for every topic, no subscriber holding
    one of its partitions has two or more partitions more than any other subscriber of it (at most
    16 rounds over the topics). Members with identical subscriptions therefore differ by at most one
    partition; members with overlapping, different subscriptions can differ by more where moving
    partitions along a chain of topics would be needed (Kafka's own example: 9, 10 and 11). Previous
    partitions are kept unless the balancing moves them; this is not guaranteed to be the minimum
    number of moves.

    Racks are not used (Kafka 4.3.1's uniform assignor does not use them either, whatever its
    class comment says).

``range`` (Kafka's ``RangeAssignor``)
    For each topic, its partitions are cut into contiguous ranges, one per subscriber, in member
    order: members with a ``group.instance.id`` first, by instance id, then the others, by member
    id. The first ``partitions % subscribers`` members get one partition more. Members that
    subscribe to the same topics therefore get the same partition numbers of topics with the same
    partition count (co-partitioning), which joins need. It ignores the previous assignment: its
    only stickiness, as in Kafka, is that static members keep their place in the order when they
    rejoin under a new member id.

Order and determinism: the result depends only on the input's contents, never on dict or set
iteration order. Strings are compared as Java compares them (UTF-16 code units) and topic ids as
Kafka's ``Uuid.compareTo`` does (most then least significant 64 bits, each as a signed long).

Differences from Kafka 4.3.1
    - Member order in ``uniform``: Kafka walks its members in the iteration order of a Java
      ``HashMap`` keyed by member id, and the homogeneous algorithm walks the subscribed topics in
      ``HashSet`` order and each previous assignment in ``HashMap``/``HashSet`` order. Those orders
      only break ties (which member keeps the extra partition of an uneven split, which of a
      member's partitions it keeps when over quota, which member gets which unowned partition).
      Here members are sorted by member id, topics by id, partitions ascending. Given those same
      orders, Kafka's code produces exactly the assignments this module does (checked against
      Kafka's jar by ``java/assignors``); with its hash orders it can pick different, equally
      balanced and equally sticky, assignments.
    - Homogeneous or not: Kafka chooses the algorithm from the subscribed topic *names* and
      regular expressions (two members with different regexes matching the same topics count as
      different), this module from the resolved topic ids. When the ids are equal but Kafka
      would see different subscriptions, this module uses the homogeneous algorithm where Kafka
      uses the heterogeneous one; both are balanced then, the results can differ.
    - Input Kafka never produces: a previous partition that no longer exists (number at or above the
      topic's partition count) is dropped, and a partition claimed by two members stays with the
      first in member order; Kafka would fail or keep it twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["ASSIGNORS", "Assignment", "Assignor", "MemberSpec", "TopicSpec", "range_", "uniform"]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    member_id: str
    instance_id: str | None  # group.instance.id of a static member
    rack_id: str | None
    subscribed: frozenset[uuid.UUID]  # topic ids, resolved from the subscribed names and regex
    current: Mapping[uuid.UUID, frozenset[int]]  # its partitions in the previous target assignment


@dataclass(frozen=True, slots=True)
class TopicSpec:
    topic_id: uuid.UUID
    name: str
    partitions: int


Assignment = dict[str, dict[uuid.UUID, frozenset[int]]]
Assignor = Callable[[Mapping[str, MemberSpec], Mapping[uuid.UUID, TopicSpec]], Assignment]

# the most rounds over the topics that uniform's heterogeneous balancing makes (Kafka's limit)
_MAX_BALANCE_ROUNDS = 16


def _java_order(s: str) -> bytes:
    """Sort key ordering strings as Java's String.compareTo (UTF-16 code units, big-endian)."""
    return s.encode("utf-16-be", "surrogatepass")


def _uuid_order(topic_id: uuid.UUID) -> tuple[int, int]:
    """Sort key ordering topic ids as Kafka's Uuid.compareTo: two signed 64-bit halves."""
    msb, lsb = topic_id.int >> 64, topic_id.int & 0xFFFF_FFFF_FFFF_FFFF
    return (msb - (1 << 64) if msb >> 63 else msb, lsb - (1 << 64) if lsb >> 63 else lsb)


def _subscriptions(
    members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
) -> dict[str, frozenset[uuid.UUID]]:
    return {m: frozenset(t for t in spec.subscribed if t in topics) for m, spec in members.items()}


def _previous(
    order: list[str],
    members: Mapping[str, MemberSpec],
    subscriptions: Mapping[str, frozenset[uuid.UUID]],
    topics: Mapping[uuid.UUID, TopicSpec],
) -> dict[str, list[tuple[uuid.UUID, list[int]]]]:
    """Each member's previous partitions that it still subscribes to and that exist, by topic id
    then partition; a partition claimed twice stays with the first member in `order`."""
    taken: set[tuple[uuid.UUID, int]] = set()
    previous: dict[str, list[tuple[uuid.UUID, list[int]]]] = {}
    for member_id in order:
        subscribed = subscriptions[member_id]
        kept: list[tuple[uuid.UUID, list[int]]] = []
        for topic_id in sorted(members[member_id].current, key=_uuid_order):
            if topic_id not in subscribed:
                continue
            count = topics[topic_id].partitions
            parts = [
                p for p in sorted(members[member_id].current[topic_id]) if 0 <= p < count and (topic_id, p) not in taken
            ]
            taken.update((topic_id, p) for p in parts)
            if parts:
                kept.append((topic_id, parts))
        previous[member_id] = kept
    return previous


def uniform(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]) -> Assignment:
    """Balanced and sticky assignment (Kafka's ``uniform``); see the module docstring."""
    order = sorted(members, key=_java_order)
    subscriptions = _subscriptions(members, topics)
    result: Assignment = {m: {} for m in order}
    if not order:
        return result
    previous = _previous(order, members, subscriptions, topics)
    first = subscriptions[order[0]]
    if all(subscriptions[m] == first for m in order):
        if first:
            _uniform_homogeneous(order, sorted(first, key=_uuid_order), topics, previous, result)
    else:
        _UniformHeterogeneous(order, subscriptions, topics, previous, result).build()
    return result


def _uniform_homogeneous(
    order: list[str],
    topic_ids: list[uuid.UUID],
    topics: Mapping[uuid.UUID, TopicSpec],
    previous: Mapping[str, list[tuple[uuid.UUID, list[int]]]],
    result: Assignment,
) -> None:
    owned = {(t, p) for kept in previous.values() for t, parts in kept for p in parts}
    unassigned = [(t, p) for t in topic_ids for p in range(topics[t].partitions) if (t, p) not in owned]
    total = sum(topics[t].partitions for t in topic_ids)
    member_count = len(order)
    min_quota, extra_left = divmod(total, member_count)

    # Keep each member's previous partitions up to its quota; the rest goes back to `unassigned`.
    # The first members (in order) that held more than the minimum keep one extra partition, as
    # long as enough members remain to take the extra partitions that are left.
    assignment: dict[str, dict[uuid.UUID, list[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, member_id in enumerate(order):
        quota = min_quota
        has_extra = extra_left > 0
        if has_extra:
            quota += 1
        kept: dict[uuid.UUID, list[int]] = {}
        for topic_id, parts in previous[member_id]:
            if len(parts) <= quota:
                kept[topic_id] = parts
                quota -= len(parts)
            else:
                if quota > 0:
                    kept[topic_id] = parts[:quota]
                unassigned.extend((topic_id, p) for p in parts[quota:])
                quota = 0
        if quota > 0 and has_extra and member_count - index > extra_left:
            quota -= 1  # leave the extra partition to a member that already has it
            has_extra = False
        if quota > 0:
            unfilled.append((member_id, quota))
        if has_extra:
            extra_left -= 1
        assignment[member_id] = kept

    # Fill the members below their quota, in order, from the unassigned partitions, in order.
    next_index = 0
    for member_id, quota in unfilled:
        take = unassigned[next_index : next_index + quota]
        next_index += len(take)
        for topic_id, p in take:
            assignment[member_id].setdefault(topic_id, []).append(p)
    if next_index < len(unassigned):
        raise AssertionError("uniform assignor left partitions unassigned")

    for member_id, kept in assignment.items():
        result[member_id] = {t: frozenset(parts) for t, parts in kept.items() if parts}


class _Balancer:
    """Picks least and most loaded members among a topic's subscribers (the state of Kafka's
    heterogeneous balancing: a least loaded range growing rightwards and a most loaded range
    growing leftwards over the subscribers sorted by partition count, then index)."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes  # shared with the builder, which updates it as partitions move
        self.members: list[int] = []
        self.least_end = 0  # exclusive
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0  # inclusive
        self.most_end = 0  # exclusive
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        """Starts over with `members`; returns the spread of their partition counts."""
        sizes = self.sizes
        self.members = sorted(members, key=lambda m: (sizes[m], m))
        self.least_end = 0
        self.least_count = sizes[self.members[0]] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.members)
        self.most_count = sizes[self.members[-1]] + 1
        self.next_most = len(self.members) - 1
        return sizes[self.members[-1]] - sizes[self.members[0]]

    def least_loaded(self) -> int:
        """The member to give the next partition to (assumed given)."""
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(self.members) and self.sizes[self.members[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = self.members[self.next_least]
        self.next_least += 1
        return member

    def most_loaded(self) -> int:
        """The member to take the next partition from (assumed taken), or -1 if none is left."""
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # the range was emptied by exclude_most_loaded: restart from the next member down
                self.most_count = self.sizes[self.members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and self.sizes[self.members[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drops the member last returned by most_loaded (it has nothing of the topic to give)."""
        i = self.next_most + 1
        last = self.most_end - 1
        self.members[i], self.members[last] = self.members[last], self.members[i]
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _UniformHeterogeneous:
    """Kafka's heterogeneous uniform algorithm; members are numbered by their position in `order`."""

    def __init__(
        self,
        order: list[str],
        subscriptions: Mapping[str, frozenset[uuid.UUID]],
        topics: Mapping[uuid.UUID, TopicSpec],
        previous: Mapping[str, list[tuple[uuid.UUID, list[int]]]],
        result: Assignment,
    ) -> None:
        self.order = order
        self.topics = topics
        self.previous = previous
        self.result = result
        self.subscribers: dict[uuid.UUID, list[int]] = {}  # ascending member indexes
        for index, member_id in enumerate(order):
            for topic_id in subscriptions[member_id]:
                self.subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(order)
        self.owners = {t: [-1] * topics[t].partitions for t in self.subscribers}
        self.assignment: list[dict[uuid.UUID, set[int]]] = [{} for _ in order]

    def _topic_order(self, topic_id: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
        # partitions per subscriber descending (as Java doubles), subscribers ascending, then id
        count = len(self.subscribers[topic_id])
        return (-(self.topics[topic_id].partitions / count), count, _uuid_order(topic_id))

    def build(self) -> None:
        if not self.subscribers:
            return
        # keep every previous partition the member still subscribes to
        for index, member_id in enumerate(self.order):
            for topic_id, parts in self.previous[member_id]:
                self.assignment[index][topic_id] = set(parts)
                self.sizes[index] += len(parts)
                owners = self.owners[topic_id]
                for p in parts:
                    owners[p] = index

        # give the unowned partitions to the least loaded subscribers, topic by topic
        unassigned = {t: [p for p, o in enumerate(owners) if o == -1] for t, owners in self.owners.items()}
        balancer = _Balancer(self.sizes)
        for topic_id in sorted((t for t, parts in unassigned.items() if parts), key=self._topic_order):
            balancer.initialize(self.subscribers[topic_id])
            for p in unassigned[topic_id]:
                self._assign(topic_id, p, balancer.least_loaded())

        movable = sorted((t for t, subs in self.subscribers.items() if len(subs) >= 2), key=self._topic_order)
        if movable:
            self._balance(movable, balancer)

        for index, member_id in enumerate(self.order):
            self.result[member_id] = {t: frozenset(parts) for t, parts in self.assignment[index].items() if parts}

    def _assign(self, topic_id: uuid.UUID, partition: int, index: int) -> None:
        owners = self.owners[topic_id]
        old = owners[partition]
        if old != -1:
            parts = self.assignment[old].get(topic_id)
            if parts is not None:
                parts.discard(partition)
                if not parts:
                    del self.assignment[old][topic_id]
            self.sizes[old] -= 1
        self.assignment[index].setdefault(topic_id, set()).add(partition)
        owners[partition] = index
        self.sizes[index] += 1

    def _balance(self, topic_ids: list[uuid.UUID], balancer: _Balancer) -> None:
        """Rounds over the topics until one full round moves nothing, or the round limit."""
        last_moved = -1  # index in topic_ids of the last topic that moved partitions
        for _ in range(_MAX_BALANCE_ROUNDS):
            for i, topic_id in enumerate(topic_ids):
                if i == last_moved:
                    return
                if self._balance_topic(topic_id, balancer) > 0 or last_moved == -1:
                    last_moved = i

    def _balance_topic(self, topic_id: uuid.UUID, balancer: _Balancer) -> int:
        """Moves the topic's partitions from its most to its least loaded subscribers."""
        if balancer.initialize(self.subscribers[topic_id]) <= 1:
            return 0
        owners = self.owners[topic_id]
        # the topic's partitions grouped by owner; each owner gives up its highest ones first
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}  # exclusive
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1

        moved = 0
        while not balancer.balanced():
            while True:
                most = balancer.most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            end[most] -= 1
            partition = partitions[end[most]]
            least = balancer.least_loaded()
            if balancer.balanced():
                break
            self._assign(topic_id, partition, least)
            moved += 1
        return moved


def _range_order(members: Mapping[str, MemberSpec]) -> list[str]:
    """Kafka's range order: static members first, by instance id, then the others by member id."""

    def key(member_id: str) -> tuple[int, bytes, bytes]:
        instance_id = members[member_id].instance_id
        if instance_id is not None:
            return (0, _java_order(instance_id), _java_order(member_id))
        return (1, _java_order(member_id), b"")

    return sorted(members, key=key)


def range_(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]) -> Assignment:
    """Contiguous, co-partitioned ranges per topic (Kafka's ``range``); see the module docstring."""
    order = _range_order(members)
    subscriptions = _subscriptions(members, topics)
    result: Assignment = {m: {} for m in order}
    subscriber_counts: dict[uuid.UUID, int] = {}
    for member_id in order:
        for topic_id in subscriptions[member_id]:
            subscriber_counts[topic_id] = subscriber_counts.get(topic_id, 0) + 1
    # per topic: the next range's start and how many of the next members get one partition more
    next_start = dict.fromkeys(subscriber_counts, 0)
    extra_left = {t: topics[t].partitions % n for t, n in subscriber_counts.items()}
    for member_id in order:
        assigned: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id in sorted(subscriptions[member_id], key=_uuid_order):
            count = topics[topic_id].partitions
            quota = count // subscriber_counts[topic_id]
            if extra_left[topic_id] > 0:
                quota += 1
                extra_left[topic_id] -= 1
            start = next_start[topic_id]
            stop = min(start + quota, count)
            next_start[topic_id] = stop
            if start < stop:
                assigned[topic_id] = frozenset(range(start, stop))
        result[member_id] = assigned
    return result


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_}
