"""A streams group's topology and its configuration against the broker's topics (Kafka 4.3.1's
`InternalTopicManager`, `RepartitionTopics`, `CopartitionedTopicsEnforcer`, `ChangelogTopics`).

The topology a member sends when it joins (kept as the StreamsGroupTopology record's value) names,
per subtopology, its source topics (the application's input), the repartition topics it reads and
writes, its state changelog topics, and its co-partition groups. **Configuring** it decides what
the metadata does not say:

1. every source topic must exist (else status MISSING_SOURCE_TOPICS);
2. a repartition topic without a fixed partition count gets the largest count among the sources
   of the subtopology that writes it, repeated until all are known (a loop that never resolves is
   STREAMS_INVALID_TOPOLOGY);
3. the topics of each co-partition group must have one partition count: external topics must
   agree (else INCORRECTLY_PARTITIONED_TOPICS), and repartition topics are given theirs;
4. a changelog topic gets the largest partition count among its subtopology's sources;
5. a subtopology has as many tasks as its largest source;
6. repartition and changelog topics that do not exist are to be created with those counts
   (status MISSING_INTERNAL_TOPICS until they are; the broker creates them); an existing one with
   another count is INCORRECTLY_PARTITIONED_TOPICS.

A topology is *ready* when none of these statuses holds; only then are tasks assigned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode as E

from .streams_assignor import string_order
from .streams_records import (
    CopartitionGroup,
    KeyValue,
    StreamsGroupTopologyValue,
    Subtopology,
    TopicInfo,
)

# StreamsGroupHeartbeatResponse.Status codes
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5

PartitionCount = Callable[[str], "int | None"]


class TopologyError(Exception):
    """The heartbeat is refused with `code` (STREAMS_INVALID_TOPOLOGY, UNKNOWN_SERVER_ERROR...)."""

    def __init__(self, code: E, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _ConfigurationError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class InternalTopic:
    name: str
    partitions: int
    replication_factor: int | None  # None: the broker's default
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConfiguredSubtopology:
    tasks: int
    source_topics: frozenset[str]
    repartition_source_topics: dict[str, InternalTopic]
    repartition_sink_topics: frozenset[str]
    changelog_topics: dict[str, InternalTopic]

    def all_sources(self) -> set[str]:
        return set(self.source_topics) | set(self.repartition_source_topics)


@dataclass(frozen=True)
class ConfiguredTopology:
    epoch: int
    metadata_hash: int
    subtopologies: dict[str, ConfiguredSubtopology] | None  # sorted by id; None: not configured
    to_create: dict[str, InternalTopic]  # in the order Kafka names them (its HashMap's)
    status: tuple[int, str] | None  # (status code, detail) while not ready

    @property
    def ready(self) -> bool:
        return self.status is None


# ---- the topology a request carries -------------------------------------------------------------


def topology_from_request(topology: object) -> StreamsGroupTopologyValue:
    """The record value of a StreamsGroupHeartbeat request's topology (kio's nested classes, read by
    field name), in the request's order, as Kafka's convertToStreamsGroupTopologyRecord."""

    def info(t: object) -> TopicInfo:
        return TopicInfo(
            getattr(t, "name"),
            int(getattr(t, "partitions")),
            int(getattr(t, "replication_factor")),
            tuple(KeyValue(c.key, c.value) for c in getattr(t, "topic_configs")),
        )

    return StreamsGroupTopologyValue(
        int(getattr(topology, "epoch")),
        tuple(
            Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(s.source_topic_regex),
                tuple(info(t) for t in s.state_changelog_topics),
                tuple(s.repartition_sink_topics),
                tuple(info(t) for t in s.repartition_source_topics),
                tuple(
                    CopartitionGroup(
                        tuple(int(i) for i in g.source_topics),
                        tuple(int(i) for i in g.source_topic_regex),
                        tuple(int(i) for i in g.repartition_source_topics),
                    )
                    for g in s.copartition_groups
                ),
            )
            for s in getattr(topology, "subtopologies")
        ),
    )


def same_topology(a: StreamsGroupTopologyValue, b: StreamsGroupTopologyValue) -> bool:
    """Kafka's StreamsTopology equality: the epoch and the subtopologies by id (lists in order)."""
    return a.epoch == b.epoch and {s.subtopology_id: s for s in a.subtopologies} == {
        s.subtopology_id: s for s in b.subtopologies
    }


def required_topics(topology: StreamsGroupTopologyValue) -> set[str]:
    """The topics whose metadata the topology depends on: sources, repartition sources, changelogs."""
    out: set[str] = set()
    for s in topology.subtopologies:
        out.update(s.source_topics)
        out.update(t.name for t in s.repartition_source_topics)
        out.update(t.name for t in s.state_changelog_topics)
    return out


def source_topic_map(topology: StreamsGroupTopologyValue) -> dict[str, str]:
    """Source topic (input or repartition) -> the subtopology that reads it."""
    out: dict[str, str] = {}
    for s in topology.subtopologies:
        for t in s.source_topics:
            out[t] = s.subtopology_id
        for info in s.repartition_source_topics:
            out[info.name] = s.subtopology_id
    return out


def all_topic_names(topology: StreamsGroupTopologyValue) -> set[str]:
    """Every topic a topology names (what StreamsGroupHeartbeat checks DESCRIBE on)."""
    out = required_topics(topology)
    for s in topology.subtopologies:
        out.update(s.repartition_sink_topics)
    return out


def invalid_changelog(topology: StreamsGroupTopologyValue) -> str | None:
    """Kafka's request check: a changelog topic's partition count must be left to the broker."""
    for s in topology.subtopologies:
        for t in s.state_changelog_topics:
            if t.partitions != 0:
                return (
                    f"Changelog topic {t.name} must have an undefined partition count, but it is set to {t.partitions}."
                )
    return None


# ---- configuration --------------------------------------------------------------------------------


def configure(topology: StreamsGroupTopologyValue, counts: PartitionCount, metadata_hash: int) -> ConfiguredTopology:
    """The topology configured against the topics' partition counts (`counts(name)`, None when the
    topic does not exist). Raises TopologyError for a topology that cannot be configured."""
    try:
        _missing_sources(topology, counts)
        decided = _decide_partition_counts(topology, counts)
        subtopologies = {
            s.subtopology_id: _configured(s, counts, decided)
            for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id)
        }
        to_create = _missing_internal_topics(subtopologies, topology, counts)
    except _ConfigurationError as e:
        return ConfiguredTopology(topology.epoch, metadata_hash, None, {}, (e.status, e.message))
    status = None
    if to_create:
        status = (MISSING_INTERNAL_TOPICS, "Internal topics are missing: " + summarize(to_create))
    return ConfiguredTopology(topology.epoch, metadata_hash, subtopologies, to_create, status)


def summarize(topics: Iterable[str]) -> str:
    names = list(topics)
    if not names:
        return "<none>"
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


def _missing_sources(topology: StreamsGroupTopologyValue, counts: PartitionCount) -> None:
    missing = sorted({t for s in topology.subtopologies for t in s.source_topics if counts(t) is None})
    if missing:
        raise _ConfigurationError(MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} are missing.")


def _decide_partition_counts(topology: StreamsGroupTopologyValue, counts: PartitionCount) -> dict[str, int]:
    decided: dict[str, int] = {}

    def count(topic: str) -> int | None:
        n = counts(topic)
        return n if n is not None else decided.get(topic)

    decided.update(_repartition_counts(topology, count))
    fixed = {t.name for s in topology.subtopologies for t in s.repartition_source_topics if t.partitions != 0}
    flexible = {t.name for s in topology.subtopologies for t in s.repartition_source_topics if t.partitions == 0}
    for s in topology.subtopologies:
        for group in s.copartition_groups:
            names = {s.source_topics[i] for i in group.source_topics} | {
                s.repartition_source_topics[i].name for i in group.repartition_source_topics
            }
            decided.update(_enforce_copartitioning(names, fixed, flexible, count))
    for s in topology.subtopologies:
        sources = [*s.source_topics, *(t.name for t in s.repartition_source_topics)]
        if not sources:
            raise TopologyError(
                E.streams_invalid_topology, f"No source topics found for subtopology {s.subtopology_id}"
            )
        most = max(_known(count, t) for t in sources)
        for t in s.state_changelog_topics:
            decided[t.name] = most
    return decided


def _known(count: Callable[[str], int | None], topic: str) -> int:
    n = count(topic)
    if n is None:
        raise TopologyError(E.unknown_server_error, f"No partition count for source topic {topic}")
    return n


def _repartition_counts(topology: StreamsGroupTopologyValue, count: Callable[[str], int | None]) -> dict[str, int]:
    result = {t.name: t.partitions for s in topology.subtopologies for t in s.repartition_source_topics if t.partitions}
    needed = True
    while needed:
        needed = False
        progress = False
        for s in topology.subtopologies:
            for sink in s.repartition_sink_topics:
                if sink in result:
                    continue
                n: int | None = None
                for info in s.repartition_source_topics:
                    c = result.get(info.name)
                    if c is not None and (n is None or c > n):
                        n = c
                for name in s.source_topics:
                    c = count(name)
                    if c is not None and (n is None or c > n):
                        n = c
                if n is None:
                    needed = True
                else:
                    result[sink] = n
                    progress = True
        if needed and not progress:
            raise TopologyError(
                E.streams_invalid_topology,
                "Failed to compute number of partitions for all repartition topics. "
                "There may be loops in the topology that cannot be resolved.",
            )
    for s in topology.subtopologies:
        if any(t.name not in result for t in s.repartition_source_topics):
            raise TopologyError(
                E.streams_invalid_topology,
                "Failed to compute number of partitions for all repartition topics, because "
                "a repartition source topic is never used as a sink topic.",
            )
    return result


def _enforce_copartitioning(
    names: set[str], fixed: set[str], flexible: set[str], count: Callable[[str], int | None]
) -> dict[str, int]:
    if not names:
        return {}
    repartition = {t: _partition_count(count, t) for t in names if t in fixed or t in flexible}
    external = {t: _partition_count(count, t) for t in names if t not in repartition}
    if names == set(repartition):
        if fixed:
            first = _partition_count(count, next(iter(sorted(fixed))))
            if any(_partition_count(count, t) != first for t in fixed):
                raise _ConfigurationError(
                    INCORRECTLY_PARTITIONED_TOPICS,
                    f"Following topics do not have the same number of partitions: [{_sorted_map(repartition)}]",
                )
            n = first
        else:
            n = max(repartition.values(), default=0)
            if n == 0:
                raise TopologyError(
                    E.streams_invalid_topology,
                    f"All topics in the copartition group had undefined partition number: {sorted(repartition)}",
                )
    else:
        values = set(external.values())
        if len(values) > 1:
            raise _ConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Following topics do not have the same number of partitions: [{_sorted_map(external)}]",
            )
        n = next(iter(values))
    for t, c in repartition.items():
        if t in fixed and c != n:
            raise _ConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{c}] of repartition topic [{t}] doesn't match number of partitions "
                f"[{n}] of the source topic.",
            )
    return dict.fromkeys(repartition, n)


def _sorted_map(m: dict[str, int]) -> str:
    """Java's TreeMap.toString: {a=1, b=2}."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(m.items())) + "}"


def _partition_count(count: Callable[[str], int | None], topic: str) -> int:
    n = count(topic)
    if n is None:
        raise TopologyError(E.unknown_server_error, f"Number of partitions is not set for topic: {topic}")
    return n


def _configured(s: Subtopology, counts: PartitionCount, decided: dict[str, int]) -> ConfiguredSubtopology:
    def count(topic: str) -> int:
        n = counts(topic)
        n = n if n is not None else decided.get(topic)
        if n is None:
            raise TopologyError(E.unknown_server_error, f"Number of partitions must be set for topic {topic}")
        return n

    def internal(t: TopicInfo) -> InternalTopic:
        n = t.partitions or decided.get(t.name)
        if not n:
            raise TopologyError(E.unknown_server_error, f"Number of partitions must be set for topic {t.name}")
        return InternalTopic(t.name, n, t.replication_factor or None, {c.key: c.value for c in t.topic_configs})

    sources = [*s.source_topics, *(info.name for info in s.repartition_source_topics)]
    if not sources:
        raise TopologyError(E.unknown_server_error, "Subtopology does not contain any source topics")
    return ConfiguredSubtopology(
        max(count(name) for name in sources),
        frozenset(s.source_topics),
        {t.name: internal(t) for t in s.repartition_source_topics},
        frozenset(s.repartition_sink_topics),
        {t.name: internal(t) for t in s.state_changelog_topics},
    )


def _missing_internal_topics(
    subtopologies: dict[str, ConfiguredSubtopology], topology: StreamsGroupTopologyValue, counts: PartitionCount
) -> dict[str, InternalTopic]:
    wanted: dict[str, InternalTopic] = {}
    for sub in subtopologies.values():
        wanted.update(sub.repartition_source_topics)
        wanted.update(sub.changelog_topics)
    for topic in sorted(required_topics(topology)):
        n = counts(topic)
        if n is None:
            continue
        expected = wanted.pop(topic, None)
        if expected is not None and expected.partitions != n:
            raise _ConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {topic} has different number of partitions: expected {expected.partitions}, found {n}",
            )
    return {name: wanted[name] for name in string_order(wanted)}  # in Kafka's HashMap order
