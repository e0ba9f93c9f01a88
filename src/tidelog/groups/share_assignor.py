"""Server-side assignor of share groups (KIP-932): ``simple``, Kafka 4.3.1's ``SimpleAssignor``.

The share group coordinator computes a group's target assignment with it. Unlike a consumer group's
assignors it may give one partition to several members: when a topic has more subscribers than
assignable partitions, each partition goes to several of them. It is a pure function of its input:
no I/O, no clock, no randomness. It takes

- ``members``: member id -> `MemberSpec` (its subscription, already resolved from names to topic
  ids, and, as ``current``, its partitions in the previous target assignment);
- ``topics``: topic id -> `TopicSpec` of the topics that exist now; a subscribed topic id that is
  not there is ignored, as the coordinator drops names it cannot resolve;
- ``assignable``: topic id -> the partitions of that topic that may be assigned. A share group may
  only be assigned partitions whose share-partition state is *initialized*, so the coordinator
  passes its initialized partitions here (Kafka: ``GroupSpec.isPartitionAssignable``, fed by
  ``withTopicAssignablePartitionsMap``). A topic that is not a key has no assignable partition;
  numbers at or above the topic's partition count are ignored. ``None`` (Kafka's empty
  ``Optional``, which share groups never use) makes every partition assignable;

and returns every member's new target assignment (member id -> topic id -> partitions; each member
is present, possibly with nothing; no empty sets).

The algorithm (Kafka's two builders)
    For each topic when subscriptions differ (the heterogeneous builder), for all the subscribed
    topics together when every member subscribes to the same topics (the homogeneous builder): with
    N subscribers and P assignable partitions, each partition should go to ``ceil(N / P)`` members
    (the *sharing*), and subscriber k (k = 0..N-1 in member order) should get
    ``ceil(q * (k + 1)) - ceil(q * k)`` partitions, ``q = sharing * P / N`` computed in doubles as
    Kafka does (its *desired count*: ``floor(q)`` or ``ceil(q)``, the larger ones spread over the
    order). Starting from the previous assignment it (1) revokes partitions of topics a member no
    longer subscribes to, (2) revokes partitions from members above their desired count, (3)
    revokes members from partitions above the sharing, then (4) walks the partitions, giving each
    one below the sharing to the next members below their desired count, round robin.

What it guarantees, for any input
    - A member only holds assignable partitions of existing topics it subscribes to.
    - Every assignable partition of a topic with subscribers is held by at least one of them.
    - No partition is held by more than ``ceil(N / P)`` of its N subscribers, so a partition is
      shared only when its topic (all the subscribed topics, in the homogeneous case) has more
      subscribers than assignable partitions.
    - No member holds more than its desired count (per topic in the heterogeneous case).
    - When there are no more subscribers than partitions, every subscriber holds its desired count,
      so counts differ by at most one, with one exception, Kafka's: its doubles can make the desired
      counts add up to P + 1 (29 partitions over 7 members: ``29 / 7 * 7 > 29``; 25 over 11, ...),
      and then one member ends one below its count (counts can then differ by two).
    - When there are more subscribers than partitions, Kafka's round robin can leave a member below
      its desired count, and a partition with fewer than ``ceil(N / P)`` members: it never
      reshuffles to fill such a gap. (When the desired counts add up to one more than
      ``ceil(N / P) * P``, as above, a member can even be left with nothing.) Likewise here.
    - Sticky: a member loses a partition it held before only if it no longer subscribes to its
      topic, if the partition is no longer assignable, if the member held more than its desired
      count, or if more than ``ceil(N / P)`` members held the partition. So when a member joins or
      leaves and no partition is shared before or after, each member keeps
      ``min(held, desired count)`` of its partitions. The desired counts follow member order, so a
      member joining early in the order can shift the larger counts and move a partition more than
      strictly needed, as in Kafka.
    - Deterministic: the result depends only on the input's contents, never on dict or set
      iteration order.

Order, and where results can differ from Kafka's
    Kafka's builders walk several ``java.util.HashMap``/``HashSet`` (partitions keyed by
    ``TopicIdPartition`` or partition number, members by index); that order decides ties (which
    partitions a member over its count gives up, which members leave an over-shared partition,
    which partition goes to which member). This module reproduces those iteration orders: Java's
    hash codes (``Uuid``; the ``TopicIdPartition`` record, ``31 * topic hash + partition`` as
    OpenJDK computes a record's hash; ``Integer``), the table sizes Kafka asks for and their growth
    (also the doubling of a small table for a long bucket), and where ``put`` (last) and
    ``computeIfAbsent`` (first) place a key in its bucket. Its own inputs it takes in a fixed
    order: members sorted by member id (as Java compares strings, UTF-16 code units), topic ids as
    Kafka's ``Uuid.compareTo`` (two signed 64-bit halves) and partitions ascending. Given inputs in
    those orders, Kafka's ``SimpleAssignor`` gives exactly the results of this module (checked
    against Kafka's jar by ``java/assignors``, on its fixed cases and on thousands of random
    groups). Differences:

    - Member order. Kafka's coordinator hands the members over in a ``HashMap`` keyed by member id
      (and the previous assignments and subscriptions in hash sets built from records), so its
      member order is a hash order. Member order decides which members get the larger desired
      counts and the order of the round robin: results follow the same rules, but can differ. The
      other input orders only matter for keys that fall in the same hash bucket.
    - A bucket that grows past eight keys (seven with ``computeIfAbsent``) in a table of 64 or more
      slots becomes a tree in Java, whose iteration order is not modelled (list order is kept).
      That takes eight or nine partitions (or members) whose hashes agree in their low six bits or
      more, in one table.
    - Homogeneous or not: Kafka decides from the subscribed topic *names*, this module from the
      resolved topic ids (as `tidelog.groups.assignors` does). Where the ids agree but Kafka sees
      different names (a name that does not resolve), this module runs the homogeneous builder and
      Kafka the heterogeneous one; both give valid, balanced results, which can differ.
    - Previous partitions of topics that no member subscribes to any more (unsubscribed or deleted
      topics): Kafka's heterogeneous builder only looks at subscribed topics, so members keep such
      partitions in their target assignment. Here they are dropped: a member is never assigned a
      topic it does not subscribe to. (The homogeneous builder drops them in Kafka too.)
    - Previous partitions that are not assignable (not initialized) or do not exist, of a
      subscribed topic: dropped first here. Kafka keeps them, counts them against the member's
      desired count and may give them to further members, or fail (NoSuchElementException: they
      add partitions that want members beyond the members' desired counts). The coordinator does
      not normally pass any: partitions stay initialized while assigned. Without them the desired
      counts always add up to at least ``ceil(N / P) * P``, so the round robin never runs out of
      members while a partition still wants one.
"""

from __future__ import annotations

import math
import struct
import uuid
from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

from .assignors import Assignment, MemberSpec, TopicSpec, _java_order, _uuid_order

__all__ = ["simple"]

_K = TypeVar("_K", bound=Hashable)
_TopicPartition = tuple[uuid.UUID, int]

_MASK32 = 0xFFFF_FFFF
_MASK64 = 0xFFFF_FFFF_FFFF_FFFF
_MAX_CAPACITY = 1 << 30  # HashMap.MAXIMUM_CAPACITY
_TREEIFY_THRESHOLD = 8  # a bucket longer than this is made a tree, or the table doubled if small
_MIN_TREEIFY_CAPACITY = 64


# ---- java.util.HashMap iteration order ---------------------------------------------------------


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value >> 31 else value


def _integer_hash(value: int) -> int:
    """java.lang.Integer.hashCode."""
    return value


def _uuid_hash(topic_id: uuid.UUID) -> int:
    """org.apache.kafka.common.Uuid.hashCode: the two halves xor-ed, then folded to 32 bits."""
    h = (topic_id.int >> 64) ^ (topic_id.int & _MASK64)
    return _int32((h >> 32) ^ h)


def _topic_partition_hash(tp: _TopicPartition) -> int:
    """hashCode of Kafka's TopicIdPartition record (topicId, partitionId): 31 * h(topicId) + partition."""
    return _int32(31 * _uuid_hash(tp[0]) + tp[1])


def _f32(value: float) -> float:
    """Rounds a double to the nearest float (Java's float arithmetic, one operation at a time)."""
    result: float = struct.unpack("f", struct.pack("f", value))[0]
    return result


def _sized_capacity(mappings: int) -> int:
    """The initial capacity AssignorHelpers.newHashMap/newHashSet pass: (int) (((n + 1) / 0.75f) + 1)."""
    return int(_f32(_f32(_f32(float(mappings + 1)) / _f32(0.75)) + 1.0))


def _table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor: the power of two a HashMap created with this capacity starts with."""
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), _MAX_CAPACITY)


class _JavaHashSet(Generic[_K]):
    """The keys of a java.util.HashSet (or a HashMap's key set) in Java's iteration order.

    Java iterates a HashMap bucket by bucket (bucket = spread hash & (table size - 1)), each bucket
    in list order: `add` (HashMap.put) appends a key to its bucket's list, `compute_if_absent`
    (HashMap.computeIfAbsent) puts it first. A resize splits buckets keeping their order; a removal
    keeps the order of the rest. The table starts at the size its constructor asks for and doubles
    when it holds more than 3/4 of its size (put: after inserting; computeIfAbsent: before looking,
    whether or not the key is there), or when a bucket's list gets too long (put: a ninth key;
    computeIfAbsent: an eighth) in a table smaller than 64 slots. In a larger table such a bucket
    would become a tree, whose order is not modelled (the list order is kept)."""

    __slots__ = ("_buckets", "_capacity", "_first", "_hash", "_initial", "_keys", "_last", "_threshold")

    def __init__(self, hash_code: Callable[[_K], int], initial_capacity: int | None = None) -> None:
        self._hash = hash_code
        # `new HashSet<>()` starts at 16; `new HashSet<>(n)` at tableSizeFor(n)
        self._initial = 16 if initial_capacity is None else _table_size_for(initial_capacity)
        self._capacity = 0  # the table is allocated on the first insertion
        self._threshold = 0
        self._keys: dict[_K, tuple[int, int]] = {}  # key -> (spread hash, place in its bucket's list)
        self._buckets: dict[int, int] = {}  # bucket -> number of keys in it
        self._first = 0  # places: below all others for a key put first, above for one appended
        self._last = 0

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def _resize(self, capacity: int) -> None:
        self._capacity = min(capacity, _MAX_CAPACITY)
        self._threshold = self._capacity * 3 // 4
        mask = self._capacity - 1
        buckets: dict[int, int] = {}
        for spread, _ in self._keys.values():
            buckets[spread & mask] = buckets.get(spread & mask, 0) + 1
        self._buckets = buckets

    def _insert(self, key: _K, first: bool) -> int:
        """Adds an absent key; returns how many keys its bucket held before."""
        h = self._hash(key) & _MASK32
        spread = h ^ (h >> 16)
        bucket = spread & (self._capacity - 1)
        before = self._buckets.get(bucket, 0)
        if first:
            self._first -= 1
            self._keys[key] = (spread, self._first)
        else:
            self._last += 1
            self._keys[key] = (spread, self._last)
        self._buckets[bucket] = before + 1
        return before

    def add(self, key: _K) -> bool:
        """HashSet.add (HashMap.put): True if the key was absent."""
        if key in self._keys:
            return False
        if self._capacity == 0:
            self._resize(self._initial)
        if self._insert(key, first=False) >= _TREEIFY_THRESHOLD and self._capacity < _MIN_TREEIFY_CAPACITY:
            self._resize(self._capacity * 2)  # treeifyBin on a small table resizes it instead
        if len(self._keys) > self._threshold:
            self._resize(self._capacity * 2)
        return True

    def compute_if_absent(self, key: _K) -> bool:
        """HashMap.computeIfAbsent's effect on the keys: True if the key was absent."""
        if self._capacity == 0:
            self._resize(self._initial)
        elif len(self._keys) > self._threshold:
            self._resize(self._capacity * 2)
        if key in self._keys:
            return False
        if self._insert(key, first=True) >= _TREEIFY_THRESHOLD - 1 and self._capacity < _MIN_TREEIFY_CAPACITY:
            self._resize(self._capacity * 2)
        return True

    def remove(self, key: _K) -> bool:
        entry = self._keys.pop(key, None)
        if entry is None:
            return False
        self._buckets[entry[0] & (self._capacity - 1)] -= 1
        return True

    def ordered(self) -> list[_K]:
        mask = self._capacity - 1
        keys = self._keys
        return sorted(keys, key=lambda k: (keys[k][0] & mask, keys[k][1]))


def _assign_remaining(
    partitions: list[_K],
    holders: Mapping[_K, _JavaHashSet[int]],
    unfilled: _JavaHashSet[int],
    sharing: int,
    desired: list[int],
    give: Callable[[int, _K], int],
) -> None:
    """Kafka's assignRemainingPartitions: one pass over the partitions (in `partitions` order); each
    one held by fewer than `sharing` members goes to the next unfilled members, round robin over
    `unfilled` (an iterator that carries on from partition to partition, restarted at the end of
    the set unless a whole lap gave nothing). `give(member, partition)` records an assignment and
    returns the member's partition count. As in Kafka, `holders` is not updated meanwhile, so in a
    lap shorter than the partition's shortfall one member can be given the same partition twice,
    which counts twice against the shortfall."""
    order = unfilled.ordered()
    position = 0
    gave_this_lap = False
    for partition in partitions:
        held = holders[partition]
        to_make = sharing - len(held)
        while to_make > 0:
            if position >= len(order):
                if not gave_this_lap:
                    break
                order = unfilled.ordered()
                position = 0
                gave_this_lap = False
                if not order:  # Kafka: NoSuchElementException; cannot happen, see the module docstring
                    raise AssertionError("share assignor ran out of members to assign to")
            member = order[position]
            position += 1
            if member not in held:
                count = give(member, partition)
                to_make -= 1
                gave_this_lap = True
                if count >= desired[member]:
                    unfilled.remove(member)
        if not unfilled:
            break


def _desired_counts(sharing: int, partitions: int, members: int) -> list[int]:
    """Each of `members` subscribers' desired partition count, by position, as Kafka computes it."""
    precise = sharing * partitions / members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


def _sharing(members: int, partitions: int) -> int:
    return 0 if partitions == 0 else (members + partitions - 1) // partitions


# ---- the assignor ------------------------------------------------------------------------------


def simple(
    members: Mapping[str, MemberSpec],
    topics: Mapping[uuid.UUID, TopicSpec],
    assignable: Mapping[uuid.UUID, frozenset[int]] | None = None,
) -> Assignment:
    """Share group target assignment (Kafka's ``simple``); see the module docstring.

    ``assignable``: per topic id, the partitions that may be assigned (a share group's initialized
    partitions); a topic that is not a key has none. ``None``: all partitions of all topics."""
    order = sorted(members, key=_java_order)
    if not order:
        return {}

    def is_assignable(topic_id: uuid.UUID, partition: int) -> bool:
        if not 0 <= partition < topics[topic_id].partitions:
            return False
        return assignable is None or partition in assignable.get(topic_id, ())

    subscriptions = [frozenset(t for t in members[m].subscribed if t in topics) for m in order]
    homogeneous = all(s == subscriptions[0] for s in subscriptions)
    subscribed = subscriptions[0] if homogeneous else frozenset().union(*subscriptions)
    # Previous assignments, in order, without what Kafka would drop (topics not subscribed) or what
    # this module drops (see the module docstring: unassignable partitions, topics nobody subscribes)
    previous: list[dict[uuid.UUID, list[int]]] = []
    for member_id in order:
        current = members[member_id].current
        kept: dict[uuid.UUID, list[int]] = {}
        for topic_id in sorted(current, key=_uuid_order):
            if topic_id in subscribed:
                parts = sorted(p for p in current[topic_id] if is_assignable(topic_id, p))
                if parts:
                    kept[topic_id] = parts
        previous.append(kept)

    sorted_topics = sorted(subscribed, key=_uuid_order)
    if not sorted_topics:
        assignment: list[dict[uuid.UUID, set[int]]] = [{} for _ in order]
    else:
        targets = {t: [p for p in range(topics[t].partitions) if is_assignable(t, p)] for t in sorted_topics}
        if homogeneous:
            assignment = _homogeneous(len(order), previous, sorted_topics, targets)
        else:
            assignment = _heterogeneous(len(order), previous, subscriptions, sorted_topics, targets)
    return {
        member_id: {t: frozenset(ps) for t, ps in sorted(parts.items(), key=lambda e: _uuid_order(e[0])) if ps}
        for member_id, parts in zip(order, assignment, strict=True)
    }


def _member_order(count: int) -> list[int]:
    """Member indexes in the order of Kafka's oldGroupAssignment (a HashMap sized for them)."""
    indexes: _JavaHashSet[int] = _JavaHashSet(_integer_hash, _sized_capacity(count))
    for index in range(count):
        indexes.add(index)
    return indexes.ordered()


def _homogeneous(
    member_count: int,
    previous: list[dict[uuid.UUID, list[int]]],
    topic_ids: list[uuid.UUID],
    targets: Mapping[uuid.UUID, list[int]],
) -> list[dict[uuid.UUID, set[int]]]:
    """Kafka's SimpleHomogeneousAssignmentBuilder; members are indexes into the member order."""
    target = [(t, p) for t in topic_ids for p in targets[t]]
    sharing = _sharing(member_count, len(target))
    desired = _desired_counts(sharing, len(target), member_count)
    assignment = [{t: set(ps) for t, ps in kept.items()} for kept in previous]

    by_partition_order: _JavaHashSet[_TopicPartition] = _JavaHashSet(
        _topic_partition_hash, _sized_capacity(len(target))
    )
    by_partition: dict[_TopicPartition, _JavaHashSet[int]] = {}
    by_member: dict[int, _JavaHashSet[_TopicPartition]] = {}
    unfilled: _JavaHashSet[int] = _JavaHashSet(_integer_hash, _sized_capacity(member_count))
    overfilled: _JavaHashSet[int] = _JavaHashSet(_integer_hash, _sized_capacity(member_count))

    # the previous assignment (already without unsubscribed topics): who holds what, who has too much
    for member in _member_order(member_count):
        held = 0
        for topic_id, parts in previous[member].items():
            for p in parts:
                held += 1
                tp = (topic_id, p)
                if by_partition_order.compute_if_absent(tp):
                    by_partition[tp] = _JavaHashSet(_integer_hash)
                by_partition[tp].add(member)
                by_member.setdefault(member, _JavaHashSet(_topic_partition_hash)).add(tp)
        if held < desired[member]:
            unfilled.add(member)
        elif held > desired[member]:
            overfilled.add(member)

    # members above their desired count give up partitions, in their set's order
    for member in overfilled.ordered():
        mine = by_member[member]
        if len(mine) > desired[member]:
            for tp in mine.ordered():
                assignment[member][tp[0]].discard(tp[1])
                by_partition[tp].remove(member)
                mine.remove(tp)
                if len(mine) == desired[member]:
                    break

    # partitions held by more members than the sharing lose members, in their set's order
    for tp in by_partition_order.ordered():
        holders = by_partition[tp]
        remaining = len(holders)
        if remaining > sharing:
            for member in holders.ordered():
                held_now = assignment[member].get(tp[0])
                if held_now is not None and tp[1] in held_now:
                    held_now.discard(tp[1])
                    remaining -= 1
                    holders.remove(member)
                    by_member[member].remove(tp)
                    unfilled.add(member)
                if remaining <= sharing:
                    break

    for tp in target:
        if by_partition_order.compute_if_absent(tp):
            by_partition[tp] = _JavaHashSet(_integer_hash)

    def give(member: int, tp: _TopicPartition) -> int:
        assignment[member].setdefault(tp[0], set()).add(tp[1])
        mine = by_member.setdefault(member, _JavaHashSet(_topic_partition_hash))
        mine.add(tp)
        return len(mine)

    if unfilled:
        _assign_remaining(by_partition_order.ordered(), by_partition, unfilled, sharing, desired, give)
    return assignment


def _heterogeneous(
    member_count: int,
    previous: list[dict[uuid.UUID, list[int]]],
    subscriptions: list[frozenset[uuid.UUID]],
    topic_ids: list[uuid.UUID],
    targets: Mapping[uuid.UUID, list[int]],
) -> list[dict[uuid.UUID, set[int]]]:
    """Kafka's SimpleHeterogeneousAssignmentBuilder: each topic on its own, among its subscribers.
    (Kafka takes the topics in hash order; they do not interact, so any order gives the same.)"""
    assignment = [{t: set(ps) for t, ps in kept.items()} for kept in previous]
    old_order = _member_order(member_count)
    for topic_id in topic_ids:
        subscribers = [m for m in range(member_count) if topic_id in subscriptions[m]]
        _heterogeneous_topic(topic_id, member_count, subscribers, targets[topic_id], previous, old_order, assignment)
    return assignment


def _heterogeneous_topic(
    topic_id: uuid.UUID,
    member_count: int,
    subscribers: list[int],
    target: list[int],
    previous: list[dict[uuid.UUID, list[int]]],
    old_order: list[int],
    assignment: list[dict[uuid.UUID, set[int]]],
) -> None:
    """Kafka's TopicAssignmentPartialBuilder: one topic's partitions (by number) among its
    subscribers; a member that holds some of them without subscribing has a desired count of 0."""
    sharing = _sharing(len(subscribers), len(target))
    desired = [0] * member_count
    for member, count in zip(subscribers, _desired_counts(sharing, len(target), len(subscribers)), strict=True):
        desired[member] = count

    by_partition_order: _JavaHashSet[int] = _JavaHashSet(_integer_hash, _sized_capacity(len(target)))
    by_partition: dict[int, _JavaHashSet[int]] = {}
    by_member_order: _JavaHashSet[int] = _JavaHashSet(_integer_hash, _sized_capacity(len(subscribers)))
    by_member: dict[int, _JavaHashSet[int]] = {}

    def holds(member: int, p: int) -> int:
        if by_member_order.compute_if_absent(member):
            by_member[member] = _JavaHashSet(_integer_hash)
        mine = by_member[member]
        mine.add(p)
        return len(mine)

    for member in old_order:
        for p in previous[member].get(topic_id, ()):
            if by_partition_order.compute_if_absent(p):
                by_partition[p] = _JavaHashSet(_integer_hash)
            by_partition[p].add(member)
            holds(member, p)

    # members above their desired count (non-subscribers: 0) give up partitions
    for member in by_member_order.ordered():
        mine = by_member[member]
        if len(mine) > desired[member]:
            for p in mine.ordered():
                if len(mine) <= desired[member]:
                    break
                by_partition[p].remove(member)
                mine.remove(p)
                assignment[member][topic_id].discard(p)

    # partitions held by more members than the sharing lose members
    for p in by_partition_order.ordered():
        holders = by_partition[p]
        remaining = len(holders)
        if remaining > sharing:
            for member in holders.ordered():
                held_now = assignment[member].get(topic_id)
                if held_now is not None and p in held_now:
                    held_now.discard(p)
                    remaining -= 1
                    holders.remove(member)
                    by_member[member].remove(p)
                if remaining <= sharing:
                    break

    for p in target:
        if by_partition_order.compute_if_absent(p):
            by_partition[p] = _JavaHashSet(_integer_hash, _sized_capacity(len(subscribers)))

    unfilled: _JavaHashSet[int] = _JavaHashSet(_integer_hash, _sized_capacity(member_count))
    for member in subscribers:
        if (len(by_member[member]) if member in by_member else 0) < desired[member]:
            unfilled.add(member)

    def give(member: int, p: int) -> int:
        assignment[member].setdefault(topic_id, set()).add(p)
        return holds(member, p)

    _assign_remaining(by_partition_order.ordered(), by_partition, unfilled, sharing, desired, give)
