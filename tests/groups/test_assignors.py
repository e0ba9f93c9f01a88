"""The consumer group protocol's server-side assignors (tidelog.groups.assignors): Kafka 4.3.1's
own results on small groups, then properties over random groups (hypothesis): every subscribed
partition assigned once and only to a subscriber, balance, stickiness counted against the
minimum number of moves, range's contiguous co-partitioned ranges, determinism."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.groups.assignors import ASSIGNORS, Assignment, Assignor, MemberSpec, TopicSpec, range_, uniform

CASES = Path(__file__).resolve().parents[2] / "java" / "assignors" / "cases.txt"

Group = tuple[dict[str, MemberSpec], dict[uuid.UUID, TopicSpec]]


def spec(
    member_id: str,
    subscribed: set[uuid.UUID] | frozenset[uuid.UUID] = frozenset(),
    current: Mapping[uuid.UUID, set[int] | frozenset[int]] | None = None,
    instance_id: str | None = None,
) -> MemberSpec:
    return MemberSpec(
        member_id,
        instance_id,
        None,
        frozenset(subscribed),
        {t: frozenset(ps) for t, ps in (current or {}).items()},
    )


def tid(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


def topic_map(**partitions: int) -> dict[uuid.UUID, TopicSpec]:
    """topic_map(t1=3, t2=4): topic `tN` has id N."""
    return {tid(int(n[1:])): TopicSpec(tid(int(n[1:])), n, p) for n, p in partitions.items()}


# ---- Kafka's own results ----------------------------------------------------------------------
#
# Produced by java/assignors/KafkaAssignors.java, which runs Kafka 4.3.1's UniformAssignor and
# RangeAssignor (kafka-group-coordinator 4.3.1 from Maven Central) on the groups of
# java/assignors/cases.txt, handing members over sorted by member id and previous assignments
# sorted by topic id and partition (the orders this module uses; see its docstring):
#
#   cd java/assignors
#   mvn -B -q -f pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
#   javac -cp "$(cat target/classpath.txt)" -d target/classes KafkaAssignors.java
#   java -cp "target/classes:$(cat target/classpath.txt)" KafkaAssignors cases.txt
#
# Its output is pasted below (only re-wrapped by ruff format), topic ids as the integers of
# cases.txt. tidelog's results equal all of them. (Kafka's homogeneous uniform algorithm walks the
# subscribed topics in HashSet order, which the program cannot set: the topic ids of those cases
# are ones whose HashSet order is their sorted order.)
#
# The program also runs each case with the coordinator's own HashMap orders. Only one case then
# differs (the comment line it printed is kept below): there Kafka's member order is the HashMap's,
# not Java's string order, so the partition above the even split goes to the other member. That
# is equally balanced, and tidelog's choice is the one Kafka makes in Java's string order.
KAFKA: dict[str, dict[str, dict[int, list[int]]]] = {
    "uniform-homogeneous-new": {"m1": {1: [0, 1, 2]}, "m2": {1: [3, 4, 5]}, "m3": {1: [6], 2: [0, 1, 2]}},
    "uniform-homogeneous-join": {"m0": {1: [4], 2: [1, 2]}, "m1": {1: [0, 1, 2, 3]}, "m2": {1: [5, 6], 2: [0]}},
    "uniform-homogeneous-leave": {"m1": {1: [0, 1, 2, 3, 6]}, "m3": {1: [4, 5], 2: [0, 1, 2]}},
    "uniform-homogeneous-resubscribe": {"m1": {1: [0, 1, 2]}, "m2": {1: [5], 2: [0]}, "m3": {1: [3, 4], 2: [1]}},
    "uniform-homogeneous-extra": {"a": {1: [0, 1]}, "b": {1: [3, 4]}, "c": {1: [6]}, "d": {1: [2, 5]}},
    "uniform-deleted-topic": {"m1": {1: [0, 1]}, "m2": {1: [2, 3]}},
    "uniform-homogeneous-signed-id": {
        "m1": {0x80000000000000008000000000000000: [0, 1]},
        "m2": {0x80000000000000008000000000000000: [2], 1: [0, 1]},
    },
    # with the coordinator's HashMap orders, Kafka gives {"x\U0001f600": {1: [1, 2]}, "x\U0000ffff": {1: [0]}}
    "uniform-utf16-order": {"x\U0001f600": {1: [0]}, "x\U0000ffff": {1: [1, 2]}},
    "uniform-heterogeneous-new": {"a": {2: [0, 2, 4, 5]}, "b": {2: [1, 3], 3: [0, 1]}, "c": {1: [0, 1, 2, 3]}},
    "uniform-heterogeneous-sticky": {
        "a": {1: [0, 1]},
        "b": {2: [3, 4], 3: [0]},
        "c": {1: [2, 3], 3: [1]},
        "d": {2: [0, 1, 2, 5]},
    },
    "uniform-heterogeneous-chain": {
        "x": {1: [0, 1, 2, 3, 4, 5, 6, 7, 8]},
        "y": {1: [9, 10, 11, 12, 13, 14, 15, 16, 17, 18]},
        "z": {2: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]},
    },
    "uniform-heterogeneous-rebalance": {
        "a": {1: [4, 5], 2: [0, 1]},
        "b": {1: [0, 1, 2, 3]},
        "c": {2: [2, 3, 4, 5]},
        "d": {3: [0, 1, 2]},
    },
    "uniform-heterogeneous-signed-id": {
        "a": {0x80000000000000000000000000000005: [0, 2]},
        "b": {0x80000000000000000000000000000005: [1]},
        "c": {1: [0, 1, 2]},
    },
    "uniform-some-subscribe-nothing": {"m1": {}, "m2": {1: [0, 1, 2]}, "m3": {}},
    "uniform-none-subscribes": {"m1": {}, "m2": {}},
    "range-homogeneous": {"m1": {1: [0, 1], 2: [0, 1]}, "m2": {1: [2, 3], 2: [2, 3]}, "m3": {1: [4], 2: [4]}},
    "range-static": {"a": {1: [4, 5]}, "b": {1: [2, 3]}, "c": {1: [0, 1]}, "d": {1: [6]}},
    "range-heterogeneous": {
        "a": {1: [0, 1, 2], 2: [0]},
        "b": {2: [1], 3: [0]},
        "c": {1: [3, 4], 2: [2], 3: [1]},
        "d": {},
    },
    "range-utf16-order": {"x\U0001f600": {1: [0]}, "x\U0000ffff": {1: [1]}, "y": {}},
}


def _partitions(text: str) -> set[int]:
    out: set[int] = set()
    for item in text.split(","):
        first, _, last = item.partition("..")
        out.update(range(int(first), int(last or first) + 1))
    return out


def load_cases() -> dict[str, tuple[str, dict[str, MemberSpec], dict[uuid.UUID, TopicSpec]]]:
    """cases.txt, in the format KafkaAssignors.java reads."""
    cases: dict[str, tuple[str, dict[str, MemberSpec], dict[uuid.UUID, TopicSpec]]] = {}
    name = assignor = ""
    members: dict[str, MemberSpec] = {}
    topics: dict[uuid.UUID, TopicSpec] = {}
    for raw in CASES.read_text("utf-8").splitlines():
        fields = raw.partition("#")[0].split()
        if not fields:
            continue
        if fields[0] == "case":
            name, assignor, members, topics = fields[1], fields[2], {}, {}
        elif fields[0] == "topic":
            topic_id = tid(int(fields[1], 0))
            topics[topic_id] = TopicSpec(topic_id, f"topic-{fields[1]}", int(fields[2]))
        elif fields[0] == "member":
            member_id, instance, _rack, subscribed, previous = fields[1:]
            current = {}
            if previous != "-":
                for item in previous.split("/"):
                    topic, _, parts = item.partition(":")
                    current[tid(int(topic, 0))] = _partitions(parts)
            members[member_id] = spec(
                member_id,
                {tid(int(t, 0)) for t in subscribed.split(",")} if subscribed != "-" else set(),
                current,
                None if instance == "-" else instance,
            )
        elif fields[0] == "end":
            cases[name] = (assignor, members, topics)
    return cases


def as_lists(assignment: Assignment) -> dict[str, dict[int, list[int]]]:
    return {m: {t.int: sorted(ps) for t, ps in parts.items()} for m, parts in assignment.items()}


def test_cases_file_and_expected_values_match() -> None:
    assert set(load_cases()) == set(KAFKA)


@pytest.mark.parametrize("case", sorted(KAFKA))
def test_same_as_kafka(case: str) -> None:
    assignor, members, topics = load_cases()[case]
    result = ASSIGNORS[assignor](members, topics)
    assert as_lists(result) == KAFKA[case]
    check_valid(members, topics, result)


# ---- property checks ---------------------------------------------------------------------------


def effective(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]) -> dict[str, set[uuid.UUID]]:
    return {m: {t for t in s.subscribed if t in topics} for m, s in members.items()}


def check_valid(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec], result: Assignment) -> None:
    """Every member present; each partition of a subscribed topic held by exactly one subscriber;
    nothing else held (no unsubscribed, unknown or out-of-range partitions, no empty sets)."""
    subs = effective(members, topics)
    assert set(result) == set(members)
    holders: Counter[tuple[uuid.UUID, int]] = Counter()
    for member_id, parts in result.items():
        for topic_id, ps in parts.items():
            assert ps, "empty partition sets are left out"
            assert topic_id in subs[member_id]
            assert all(0 <= p < topics[topic_id].partitions for p in ps)
            holders.update((topic_id, p) for p in ps)
    wanted = {(t, p) for s in subs.values() for t in s for p in range(topics[t].partitions)}
    assert set(holders) == wanted
    assert all(n == 1 for n in holders.values())


def counts(result: Assignment) -> dict[str, int]:
    return {m: sum(len(ps) for ps in parts.values()) for m, parts in result.items()}


def kept(members: Mapping[str, MemberSpec], result: Assignment) -> int:
    """How many partitions stayed with the member that held them before."""
    return sum(len(ps & result[m].get(t, frozenset())) for m, s in members.items() for t, ps in s.current.items())


def fewest_moves_kept(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]) -> int:
    """The most previous partitions any balanced assignment can keep, all members subscribing to
    the same topics: each member keeps at most its quota, and the members that may hold one above
    the minimum are best those that held more than the minimum."""
    subscribed = effective(members, topics)[next(iter(members))]
    total = sum(topics[t].partitions for t in subscribed)
    quota, extra = divmod(total, len(members))
    held = [
        sum(len({p for p in ps if p < topics[t].partitions}) for t, ps in s.current.items() if t in subscribed)
        for s in members.values()
    ]
    return sum(min(h, quota) for h in held) + min(extra, sum(h > quota for h in held))


def check_uniform_balance(
    members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec], result: Assignment
) -> None:
    """Members with the same subscription differ by at most one partition; no member holding a
    partition of a topic has two more than another subscriber of it (Kafka's heterogeneous stop
    condition, which for one subscription for all is "differ by at most one")."""
    subs = effective(members, topics)
    n = counts(result)
    by_subscription: dict[frozenset[uuid.UUID], list[int]] = {}
    for m, s in subs.items():
        by_subscription.setdefault(frozenset(s), []).append(n[m])
    for same in by_subscription.values():
        assert max(same) - min(same) <= 1
    for topic_id in topics:
        subscribers = [m for m, s in subs.items() if topic_id in s]
        if len(subscribers) < 2:
            continue
        least = min(n[m] for m in subscribers)
        assert all(n[m] - least <= 1 for m in subscribers if topic_id in result[m])


def check_range(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec], result: Assignment) -> None:
    """Per topic: contiguous ranges over its subscribers in Kafka's order (static members by
    instance id, then the others by member id), the first `partitions % subscribers` one longer."""
    subs = effective(members, topics)

    def order_key(m: str) -> tuple[int, bytes, bytes]:
        instance_id = members[m].instance_id
        if instance_id is not None:
            return (0, instance_id.encode("utf-16-be", "surrogatepass"), m.encode("utf-16-be", "surrogatepass"))
        return (1, m.encode("utf-16-be", "surrogatepass"), b"")

    order = sorted(members, key=order_key)
    for topic_id, topic in topics.items():
        subscribers = [m for m in order if topic_id in subs[m]]
        if not subscribers:
            continue
        quota, extra = divmod(topic.partitions, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            stop = start + quota + (1 if i < extra else 0)
            assert result[m].get(topic_id, frozenset()) == frozenset(range(start, stop))
            start = stop


# ---- random groups -----------------------------------------------------------------------------

MEMBER_IDS = st.text(alphabet="abxy\uffff\U0001f600", min_size=1, max_size=3)


@st.composite
def groups(draw: st.DrawFn, same_subscription: bool | None = None, valid_previous: bool = True) -> Group:
    """A group: up to 6 topics of 0 to 12 partitions, one more topic id that does not exist, up to
    7 members, each with a previous assignment (each existing partition held by one member or
    none; with `valid_previous=False` also partitions that no longer exist, held twice)."""
    topic_ids = draw(st.lists(st.uuids(), min_size=0, max_size=6, unique=True))
    topics = {t: TopicSpec(t, f"t{i}", draw(st.integers(0, 12))) for i, t in enumerate(topic_ids)}
    unknown = uuid.UUID(int=draw(st.integers(0, 2**128 - 1)))
    candidates = [*topic_ids, unknown] if unknown not in topics else topic_ids
    member_ids = draw(st.lists(MEMBER_IDS, min_size=1, max_size=7, unique=True))
    if same_subscription is None:
        same_subscription = draw(st.booleans())
    shared = frozenset(draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else [])
    current: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in member_ids}
    for t, topic in topics.items():
        for p in range(topic.partitions + (0 if valid_previous else 2)):
            holders = draw(
                st.lists(st.sampled_from([None, *member_ids]), min_size=1, max_size=1 if valid_previous else 2)
            )
            for holder in holders:
                if holder is not None:
                    current[holder].setdefault(t, set()).add(p)
    members = {}
    instance_ids = iter(draw(st.permutations(range(len(member_ids)))))
    for m in member_ids:
        subscribed = (
            shared
            if same_subscription
            else frozenset(draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else [])
        )
        instance = next(instance_ids)
        members[m] = spec(m, subscribed, current[m], f"i{instance}" if draw(st.booleans()) else None)
    return members, topics


def reordered(group: Group) -> Group:
    """The same group, every mapping and set built in the reverse order."""
    members, topics = group
    return (
        {
            m: MemberSpec(
                s.member_id,
                s.instance_id,
                s.rack_id,
                frozenset(reversed(list(s.subscribed))),
                {t: frozenset(reversed(sorted(ps))) for t, ps in reversed(list(s.current.items()))},
            )
            for m, s in reversed(list(members.items()))
        },
        dict(reversed(list(topics.items()))),
    )


SETTINGS = settings(max_examples=150, deadline=None)


@SETTINGS
@given(groups())
def test_uniform_properties(group: Group) -> None:
    members, topics = group
    result = uniform(members, topics)
    check_valid(members, topics, result)
    check_uniform_balance(members, topics, result)
    # deterministic: the same contents in another order give the same assignment
    assert uniform(*reordered(group)) == result
    # stable: computed again from its own result, nothing moves
    again = {m: spec(m, s.subscribed, result[m], s.instance_id) for m, s in members.items()}
    assert uniform(again, topics) == result


@SETTINGS
@given(groups(same_subscription=True))
def test_uniform_one_subscription_balanced_and_fewest_moves(group: Group) -> None:
    members, topics = group
    result = uniform(members, topics)
    check_valid(members, topics, result)
    n = counts(result)
    assert max(n.values()) - min(n.values()) <= 1
    assert kept(members, result) == fewest_moves_kept(members, topics)


@SETTINGS
@given(groups(valid_previous=False))
def test_uniform_previous_assignment_with_stale_and_double_claims(group: Group) -> None:
    members, topics = group
    result = uniform(members, topics)
    check_valid(members, topics, result)
    check_uniform_balance(members, topics, result)
    assert uniform(*reordered(group)) == result


@SETTINGS
@given(groups(same_subscription=True), MEMBER_IDS.map(lambda m: "new-" + m), st.data())
def test_uniform_join_and_leave_move_the_fewest_partitions(group: Group, newcomer: str, data: st.DataObject) -> None:
    members, topics = group
    subscribed = next(iter(members.values())).subscribed
    before = uniform(members, topics)
    settled = {m: spec(m, subscribed, before[m]) for m in members}

    # a member joins: partitions move only from members above their new quota
    joined = {**settled, newcomer: spec(newcomer, subscribed)}
    after = uniform(joined, topics)
    check_valid(joined, topics, after)
    assert kept(joined, after) == fewest_moves_kept(joined, topics)

    # a member leaves: only its partitions move
    leaver = data.draw(st.sampled_from(sorted(settled)))
    left = {m: s for m, s in settled.items() if m != leaver}
    after = uniform(left, topics)
    check_valid(left, topics, after)
    for m in left:
        assert all(ps <= after[m].get(t, frozenset()) for t, ps in before[m].items())


@SETTINGS
@given(groups())
def test_range_properties(group: Group) -> None:
    members, topics = group
    result = range_(members, topics)
    check_valid(members, topics, result)
    check_range(members, topics, result)
    assert range_(*reordered(group)) == result


@SETTINGS
@given(groups(same_subscription=True), st.integers(1, 12))
def test_range_co_partitions(group: Group, partitions: int) -> None:
    """With one subscription for all and topics of equal size, each member gets the same
    partition numbers of every topic."""
    members, topics = group
    topics = {t: TopicSpec(t, s.name, partitions) for t, s in topics.items()}
    result = range_(members, topics)
    check_valid(members, topics, result)
    for parts in result.values():
        assert len(set(parts.values())) <= 1
        subscribed = effective(members, topics)[next(iter(members))]
        assert not parts or set(parts) == subscribed


# ---- examples ----------------------------------------------------------------------------------


@pytest.mark.parametrize("assign", [uniform, range_])
def test_no_members(assign: Assignor) -> None:
    assert assign({}, topic_map(t1=3)) == {}
    assert assign({}, {}) == {}


@pytest.mark.parametrize("assign", [uniform, range_])
def test_members_subscribed_to_nothing(assign: Assignor) -> None:
    topics = topic_map(t1=3)
    members = {"a": spec("a"), "b": spec("b", {tid(1)}), "c": spec("c", {tid(9)}, {tid(1): {0}})}
    assert assign(members, topics) == {"a": {}, "b": {tid(1): frozenset({0, 1, 2})}, "c": {}}
    nobody = {"a": spec("a"), "b": spec("b", {tid(9)}, {tid(9): {0}})}
    assert assign(nobody, topics) == {"a": {}, "b": {}}


def test_uniform_topic_deleted() -> None:
    """A deleted topic's partitions disappear; the others stay where balance allows."""
    topics = topic_map(t1=4, t2=4)
    members = {m: spec(m, {tid(1), tid(2)}) for m in ("a", "b")}
    before = uniform(members, topics)
    assert counts(before) == {"a": 4, "b": 4}
    del topics[tid(2)]
    settled = {m: spec(m, {tid(1), tid(2)}, before[m]) for m in members}
    after = uniform(settled, topics)
    check_valid(settled, topics, after)
    assert counts(after) == {"a": 2, "b": 2}
    assert kept(settled, after) == fewest_moves_kept(settled, topics)


def test_range_topic_deleted() -> None:
    topics = topic_map(t1=4, t2=4)
    members = {m: spec(m, {tid(1), tid(2)}) for m in ("a", "b")}
    del topics[tid(2)]
    assert range_(members, topics) == {"a": {tid(1): frozenset({0, 1})}, "b": {tid(1): frozenset({2, 3})}}


def test_range_static_member_keeps_its_range_under_a_new_member_id() -> None:
    topics = topic_map(t1=6, t2=6)
    both = {tid(1), tid(2)}
    members = {"m1": spec("m1", both, instance_id="i1"), "m2": spec("m2", both, instance_id="i2")}
    before = range_(members, topics)
    # i1 rejoins as "m9" (a member id that sorts after m2): it keeps the first ranges
    rejoined = {"m9": spec("m9", both, instance_id="i1"), "m2": members["m2"]}
    after = range_(rejoined, topics)
    assert after["m9"] == before["m1"] == {tid(1): frozenset({0, 1, 2}), tid(2): frozenset({0, 1, 2})}
    assert after["m2"] == before["m2"]


def test_assignors_by_name() -> None:
    assert ASSIGNORS == {"uniform": uniform, "range": range_}
