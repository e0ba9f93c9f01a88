"""What is told of streams groups (KIP-1071): StreamsGroupDescribe's and ListGroups' answers, the
task lists and endpoint information of StreamsGroupHeartbeat's, and the checks of offset commits and
fetches by a streams group's members (Kafka's StreamsGroup.validateOffsetCommit/validateOffsetFetch:
an older member epoch commits only a task assigned to the member at or before it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from .streams_assignor import string_order
from .streams_group import StreamsGroup, Tasks
from .streams_topology import ConfiguredSubtopology, InternalTopic

if TYPE_CHECKING:
    from ..wire.responses import (
        EndpointToPartitions,
        KeyValue,
        ListedGroup,
        StreamsGroupDescribeDescribedGroup,
        StreamsGroupDescribeMember,
        StreamsGroupDescribeTaskIds,
        Subtopology,
        TaskIds,
        TopicInfo,
        TopicPartition,
        Topology,
    )
    from .streams_group import Member
    from .streams_records import TopicInfo as RecordTopicInfo

NONE = 0
NO_OPERATIONS = -2147483648


def heartbeat_tasks(tasks: Mapping[str, Iterable[int]]) -> list[TaskIds]:
    """A heartbeat's task list: subtopologies in Kafka's HashMap order, partitions sorted."""
    return [{"subtopology_id": s, "partitions": sorted(tasks[s])} for s in string_order(tasks)]


def _described_tasks(tasks: Mapping[str, Iterable[int]]) -> list[StreamsGroupDescribeTaskIds]:
    return [{"subtopology_id": s, "partitions": sorted(tasks[s])} for s in sorted(tasks)]


def _configs(configs: Iterable[tuple[str, str]]) -> list[KeyValue]:
    return [{"key": k, "value": v} for k, v in configs]


def _internal(t: InternalTopic) -> TopicInfo:
    return {
        "name": t.name,
        "partitions": t.partitions,
        "replication_factor": t.replication_factor or 0,
        "topic_configs": _configs((k, t.configs[k]) for k in string_order(t.configs)),
    }


def _declared(t: RecordTopicInfo) -> TopicInfo:
    return {
        "name": t.name,
        "partitions": t.partitions,
        "replication_factor": t.replication_factor,
        "topic_configs": _configs((c.key, c.value) for c in t.topic_configs),
    }


def _topology(group: StreamsGroup) -> Topology | None:
    """The configured topology when it is ready (partition counts decided), else the declared one."""
    configured = group.configured
    if configured is not None and configured.ready and configured.subtopologies is not None:
        subs: list[Subtopology] = [
            {
                "subtopology_id": sid,
                "source_topics": sorted(sub.source_topics),
                "repartition_sink_topics": sorted(sub.repartition_sink_topics),
                "repartition_source_topics": sorted(
                    (_internal(t) for t in sub.repartition_source_topics.values()), key=lambda i: i["name"]
                ),
                "state_changelog_topics": sorted(
                    (_internal(t) for t in sub.changelog_topics.values()), key=lambda i: i["name"]
                ),
            }
            for sid, sub in configured.subtopologies.items()
        ]
        return {"epoch": configured.epoch, "subtopologies": subs}
    if group.topology is None:
        return None
    return {
        "epoch": group.topology.epoch,
        "subtopologies": [
            {
                "subtopology_id": s.subtopology_id,
                "source_topics": sorted(s.source_topics),
                "repartition_sink_topics": sorted(s.repartition_sink_topics),
                "repartition_source_topics": sorted(
                    (_declared(t) for t in s.repartition_source_topics), key=lambda i: i["name"]
                ),
                "state_changelog_topics": sorted(
                    (_declared(t) for t in s.state_changelog_topics), key=lambda i: i["name"]
                ),
            }
            for s in sorted(group.topology.subtopologies, key=lambda s: s.subtopology_id)
        ],
    }


def _member(group: StreamsGroup, m: Member) -> StreamsGroupDescribeMember:
    target = group.target.get(m.member_id)
    return {
        "member_id": m.member_id,
        "member_epoch": m.member_epoch,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "topology_epoch": m.topology_epoch,
        "process_id": m.process_id,
        "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
        "client_tags": _configs(m.client_tags),
        "task_offsets": [],
        "task_end_offsets": [],
        "assignment": {
            "active_tasks": _described_tasks(m.assigned.active),
            "standby_tasks": _described_tasks(m.assigned.standby),
            "warmup_tasks": _described_tasks(m.assigned.warmup),
        },
        "target_assignment": {
            "active_tasks": _described_tasks(target.active) if target else [],
            "standby_tasks": _described_tasks(target.standby) if target else [],
            "warmup_tasks": _described_tasks(target.warmup) if target else [],
        },
        "is_classic": False,
    }


def described(group: StreamsGroup) -> StreamsGroupDescribeDescribedGroup:
    return {
        "error_code": NONE,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state.value,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "topology": _topology(group),
        "members": [_member(group, m) for m in group.members.values()],
        "authorized_operations": NO_OPERATIONS,
    }


def described_error(group_id: str, code: E, message: str | None) -> StreamsGroupDescribeDescribedGroup:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "topology": None,
        "members": [],
        "authorized_operations": NO_OPERATIONS,
    }


def listed(groups: Iterable[StreamsGroup], states: set[str]) -> list[ListedGroup]:
    out: list[ListedGroup] = []
    for g in groups:
        state = g.state
        if states and state.lower not in states:
            continue
        out.append(
            {"group_id": g.group_id, "protocol_type": "streams", "group_state": state.value, "group_type": "streams"}
        )
    return out


def endpoint_to_partitions(
    group: StreamsGroup, member: Member, partitions_of: Callable[[str], int | None]
) -> EndpointToPartitions | None:
    """The topic partitions a member's tasks read, by its user endpoint (Kafka's
    EndpointToPartitionsManager): for each task, its partition of every source topic of the
    subtopology, cut to the topic's partition count."""
    if member.user_endpoint is None or group.configured is None or group.configured.subtopologies is None:
        return None
    subs = group.configured.subtopologies

    def partitions(tasks: Tasks) -> list[TopicPartition]:
        out: list[TopicPartition] = []
        for sid in string_order(tasks):
            sub: ConfiguredSubtopology | None = subs.get(sid)
            if sub is None:
                continue
            for topic in string_order(sub.all_sources()):
                n = partitions_of(topic)
                if n is None:
                    continue
                ps = sorted(tasks[sid])
                out.append({"topic": topic, "partitions": ps[:n] if n < len(ps) else ps})
        return out

    host, port = member.user_endpoint
    return {
        "user_endpoint": {"host": host, "port": port},
        "active_partitions": partitions(member.assigned.active_ids()),
        "standby_partitions": partitions(member.assigned.standby),
    }


# ---- offset commits and fetches by members ---------------------------------------------------------


def commit_error(
    group: StreamsGroup, member_id: str, instance_id: str | None, epoch: int, version: int, txn: bool
) -> tuple[int, Callable[[str, int], int] | None]:
    """(error, per-partition check by topic name or None) of an offset commit to a streams group."""
    if epoch < 0 and not group.members:
        return NONE, None
    if txn and epoch == -1 and member_id == "" and instance_id is None:
        return NONE, None
    member = group.members.get(member_id)
    if member is None:
        return E.unknown_member_id.value, None
    if not txn and version < 9:
        return E.unsupported_version.value, None
    if epoch == member.member_epoch:
        return NONE, None
    if epoch > member.member_epoch:
        return E.stale_member_epoch.value, None
    if group.topology is None:
        return E.stale_member_epoch.value, None
    sources = group.source_topics()

    def check(topic: str, partition: int) -> int:
        sid = sources.get(topic)
        if sid is None:
            return E.stale_member_epoch.value
        assigned_at = member.assigned.active.get(sid, {}).get(partition)
        if assigned_at is None:
            assigned_at = member.pending_revocation.active.get(sid, {}).get(partition)
        if assigned_at is None or epoch < assigned_at:
            return E.stale_member_epoch.value
        return NONE

    return NONE, check


def fetch_error(group: StreamsGroup, member_id: str | None, epoch: int) -> int:
    """OffsetFetch v9+ by a member: its epoch must be the current one."""
    if member_id is None and epoch < 0:
        return NONE
    member = group.members.get(member_id or "")
    if member is None:
        return E.unknown_member_id.value
    return NONE if epoch == member.member_epoch else E.stale_member_epoch.value
