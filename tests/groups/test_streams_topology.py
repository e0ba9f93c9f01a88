"""The configuration of a streams group's topology against the topics (`groups.streams_topology`),
as Kafka 4.3.1's InternalTopicManager does it: partition counts of repartition topics (through
chains of them), co-partition groups, changelogs, task counts, the statuses of missing or
incorrectly partitioned topics, and the topologies it refuses."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode as E

from tidelog.groups.streams_records import CopartitionGroup, KeyValue, StreamsGroupTopologyValue, Subtopology, TopicInfo
from tidelog.groups.streams_topology import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    TopologyError,
    configure,
    required_topics,
    source_topic_map,
)


def sub(
    sid: str,
    sources=(),
    sinks=(),
    repartition=(),
    changelogs=(),
    copartition=(),
) -> Subtopology:
    return Subtopology(
        sid,
        tuple(sources),
        (),
        tuple(TopicInfo(n, 0, 0, ()) for n in changelogs),
        tuple(sinks),
        tuple(r if isinstance(r, TopicInfo) else TopicInfo(r, 0, 0, ()) for r in repartition),
        tuple(copartition),
    )


def topology(*subs: Subtopology) -> StreamsGroupTopologyValue:
    return StreamsGroupTopologyValue(0, tuple(subs))


def counts(**topics: int):
    return lambda name: topics.get(name.replace("-", "_"))


def test_the_word_count_creates_its_repartition_and_changelog_topics_with_the_source_count() -> None:
    t = topology(
        sub("0", sources=["in"], sinks=["rep"]),
        sub("1", repartition=[TopicInfo("rep", 0, 3, (KeyValue("cleanup.policy", "delete"),))], changelogs=["log"]),
    )
    c = configure(t, counts(**{"in": 4}), 7)
    assert c.status is not None and c.status[0] == MISSING_INTERNAL_TOPICS
    assert {n: (x.partitions, x.replication_factor, x.configs) for n, x in c.to_create.items()} == {
        "rep": (4, 3, {"cleanup.policy": "delete"}),
        "log": (4, None, {}),
    }
    assert c.subtopologies is not None and {s: x.tasks for s, x in c.subtopologies.items()} == {"0": 4, "1": 4}
    ready = configure(t, counts(**{"in": 4, "rep": 4, "log": 4}), 7)
    assert ready.ready and ready.to_create == {} and ready.metadata_hash == 7
    assert required_topics(t) == {"in", "rep", "log"} and source_topic_map(t) == {"in": "0", "rep": "1"}


def test_a_missing_source_topic_is_a_status_before_anything_else() -> None:
    t = topology(sub("0", sources=["b", "a", "c", "d"], sinks=[]), sub("1", sources=["zz"]))
    c = configure(t, counts(), 0)
    assert c.status == (MISSING_SOURCE_TOPICS, "Source topics a, b, c and 2 additional topics are missing.")
    assert c.subtopologies is None and not c.ready


def test_repartition_counts_follow_chains_and_take_the_largest_source() -> None:
    t = topology(
        sub("0", sources=["small", "big"], sinks=["r1"]),
        sub("1", repartition=["r1"], sinks=["r2"]),
        sub("2", repartition=["r2"], changelogs=["log2"]),
    )
    c = configure(t, counts(small=2, big=6), 0)
    assert {n: x.partitions for n, x in c.to_create.items()} == {"r1": 6, "r2": 6, "log2": 6}


def test_a_fixed_repartition_count_is_kept() -> None:
    t = topology(
        sub("0", sources=["in"], sinks=["r"]),
        sub("1", repartition=[TopicInfo("r", 5, 0, ())]),
    )
    assert configure(t, counts(**{"in": 2}), 0).to_create["r"].partitions == 5


def test_copartitioned_repartition_topics_take_the_external_topics_count() -> None:
    # a join of `left` (3 partitions) with a repartitioned `right` (8 partitions): the repartition
    # topic must have the left side's 3
    t = topology(
        sub("0", sources=["right"], sinks=["r"]),
        sub(
            "1",
            sources=["left"],
            repartition=["r"],
            changelogs=["store"],
            copartition=[CopartitionGroup((0,), (), (0,))],
        ),
    )
    c = configure(t, counts(left=3, right=8), 0)
    assert {n: x.partitions for n, x in c.to_create.items()} == {"r": 3, "store": 3}


def test_copartitioned_external_topics_must_agree() -> None:
    t = topology(sub("0", sources=["a", "b"], copartition=[CopartitionGroup((0, 1), (), ())]))
    c = configure(t, counts(a=2, b=3), 0)
    assert c.status == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Following topics do not have the same number of partitions: [{a=2, b=3}]",
    )
    assert configure(t, counts(a=3, b=3), 0).ready


def test_an_existing_internal_topic_with_another_count_is_incorrectly_partitioned() -> None:
    t = topology(sub("0", sources=["in"], changelogs=["log"]))
    c = configure(t, counts(**{"in": 2, "log": 5}), 0)
    assert c.status == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Existing topic log has different number of partitions: expected 2, found 5",
    )


@pytest.mark.parametrize(
    "t",
    [
        topology(sub("0", repartition=["r"])),  # read, never written
        topology(sub("0", repartition=["a"], sinks=["b"]), sub("1", repartition=["b"], sinks=["a"])),  # a loop
    ],
)
def test_unresolvable_repartition_topics_are_an_invalid_topology(t: StreamsGroupTopologyValue) -> None:
    with pytest.raises(TopologyError) as e:
        configure(t, counts(), 0)
    assert e.value.code == E.streams_invalid_topology
