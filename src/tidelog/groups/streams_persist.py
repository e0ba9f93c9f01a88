"""The records of a streams group (KIP-1071) in `__consumer_offsets`, made from its state and read
back into it (formats: `streams_records`, Kafka 4.3's), as Kafka's StreamsCoordinatorRecordHelpers
write them: lists sorted by subtopology id, partitions sorted, the active tasks' assignment epochs
beside their partitions, client tags sorted by key.

    metadata_record      StreamsGroupMetadata: group epoch, metadata hash, validated topology epoch,
                         the assignment configs the target was computed with
    member_record        StreamsGroupMemberMetadata: the member's identity, process, endpoint, tags
    target_record        StreamsGroupTargetAssignmentMember: its target tasks
    assignment_record    StreamsGroupCurrentMemberAssignment: epochs, state, owned and revoking tasks
    topology_record      StreamsGroupTopology
    tombstones           every record of a group, deleted (Kafka's order)
    group_from           a group from the latest record of each key (None without its metadata)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from . import streams_records as SR
from .records import GroupKey
from .streams_group import Assigned, Member, MemberState, StreamsGroup, Tasks, TasksTuple

Record = tuple[SR.StreamsGroupRecordKey | GroupKey, SR.StreamsGroupRecordValue | None]


def metadata_record(group: StreamsGroup) -> Record:
    return (
        SR.StreamsGroupMetadataKey(group.group_id),
        SR.StreamsGroupMetadataValue(
            group.group_epoch,
            group.metadata_hash,
            group.validated_topology_epoch,
            tuple(SR.KeyValue(k, v) for k, v in sorted(group.last_assignment_configs.items())),
        ),
    )


def member_record(group_id: str, m: Member) -> Record:
    return (
        SR.StreamsGroupMemberMetadataKey(group_id, m.member_id),
        SR.StreamsGroupMemberMetadataValue(
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            topology_epoch=m.topology_epoch,
            process_id=m.process_id,
            user_endpoint=None if m.user_endpoint is None else SR.Endpoint(*m.user_endpoint),
            client_tags=tuple(SR.KeyValue(k, v) for k, v in sorted(m.client_tags)),
        ),
    )


def _task_ids(tasks: Tasks) -> tuple[SR.TaskIds, ...]:
    return tuple(SR.TaskIds(s, tuple(sorted(ps))) for s, ps in sorted(tasks.items()))


def target_record(group_id: str, member_id: str, target: TasksTuple) -> Record:
    return (
        SR.StreamsGroupTargetAssignmentMemberKey(group_id, member_id),
        SR.StreamsGroupTargetAssignmentMemberValue(
            _task_ids(target.active), _task_ids(target.standby), _task_ids(target.warmup)
        ),
    )


def target_metadata_record(group: StreamsGroup) -> Record:
    return (
        SR.StreamsGroupTargetAssignmentMetadataKey(group.group_id),
        SR.StreamsGroupTargetAssignmentMetadataValue(group.assignment_epoch, group.assignment_timestamp),
    )


def _epoch_tasks(tasks: Mapping[str, Mapping[int, int]]) -> tuple[SR.EpochTaskIds, ...]:
    out = []
    for s, ps in sorted(tasks.items()):
        order = sorted(ps)
        out.append(SR.EpochTaskIds(s, tuple(order), tuple(ps[p] for p in order)))
    return tuple(out)


def _plain_tasks(tasks: Tasks) -> tuple[SR.EpochTaskIds, ...]:
    return tuple(SR.EpochTaskIds(s, tuple(sorted(ps))) for s, ps in sorted(tasks.items()))


def assignment_record(group_id: str, m: Member) -> Record:
    a, r = m.assigned, m.pending_revocation
    return (
        SR.StreamsGroupCurrentMemberAssignmentKey(group_id, m.member_id),
        SR.StreamsGroupCurrentMemberAssignmentValue(
            m.member_epoch,
            m.previous_member_epoch,
            int(m.state),
            _epoch_tasks(a.active),
            _plain_tasks(a.standby),
            _plain_tasks(a.warmup),
            _epoch_tasks(r.active),
            _plain_tasks(r.standby),
            _plain_tasks(r.warmup),
        ),
    )


def topology_record(group: StreamsGroup) -> Record:
    assert group.topology is not None
    return (SR.StreamsGroupTopologyKey(group.group_id), group.topology)


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    return [
        (SR.StreamsGroupCurrentMemberAssignmentKey(group_id, member_id), None),
        (SR.StreamsGroupTargetAssignmentMemberKey(group_id, member_id), None),
        (SR.StreamsGroupMemberMetadataKey(group_id, member_id), None),
    ]


def tombstones(group: StreamsGroup) -> list[Record]:
    """Every record of a group, deleted (DeleteGroups), in Kafka's order."""
    g = group.group_id
    out: list[Record] = [(SR.StreamsGroupCurrentMemberAssignmentKey(g, m), None) for m in group.members]
    out += [(SR.StreamsGroupTargetAssignmentMemberKey(g, m), None) for m in group.members]
    out.append((SR.StreamsGroupTargetAssignmentMetadataKey(g), None))
    out += [(SR.StreamsGroupMemberMetadataKey(g, m), None) for m in group.members]
    out.append((SR.StreamsGroupMetadataKey(g), None))
    out.append((SR.StreamsGroupTopologyKey(g), None))
    return out


def _tasks(ids: tuple[SR.TaskIds, ...] | tuple[SR.EpochTaskIds, ...]) -> Tasks:
    return {t.subtopology_id: frozenset(t.partitions) for t in ids}


def _active(ids: tuple[SR.EpochTaskIds, ...], member_epoch: int) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for t in ids:
        epochs = t.assignment_epochs
        if epochs is not None and len(epochs) == len(t.partitions):
            out[t.subtopology_id] = dict(zip(t.partitions, epochs))
        else:  # a record without epochs (or a bad one): the member epoch, as Kafka
            out[t.subtopology_id] = dict.fromkeys(t.partitions, member_epoch)
    return out


def group_from(
    group_id: str, recs: Mapping[SR.StreamsGroupRecordKey, SR.StreamsGroupRecordValue]
) -> StreamsGroup | None:
    """A streams group from its latest records (None: no group metadata record)."""
    meta = next((v for v in recs.values() if isinstance(v, SR.StreamsGroupMetadataValue)), None)
    if meta is None:
        return None
    group = StreamsGroup(
        group_id,
        group_epoch=meta.epoch,
        metadata_hash=meta.metadata_hash,
        validated_topology_epoch=meta.validated_topology_epoch,
        last_assignment_configs={kv.key: kv.value for kv in meta.last_assignment_configs or ()},
    )
    members: dict[str, Member] = {}
    for k, v in recs.items():
        if isinstance(v, SR.StreamsGroupMemberMetadataValue) and isinstance(k, SR.StreamsGroupMemberMetadataKey):
            members[k.member_id] = Member(
                k.member_id,
                instance_id=v.instance_id,
                rack_id=v.rack_id,
                client_id=v.client_id,
                client_host=v.client_host,
                rebalance_timeout_ms=v.rebalance_timeout_ms,
                topology_epoch=v.topology_epoch,
                process_id=v.process_id,
                user_endpoint=None if v.user_endpoint is None else (v.user_endpoint.host, v.user_endpoint.port),
                client_tags=tuple(sorted((kv.key, kv.value) for kv in v.client_tags)),
            )
        elif isinstance(v, SR.StreamsGroupTargetAssignmentMetadataValue):
            group.assignment_epoch, group.assignment_timestamp = v.assignment_epoch, v.assignment_timestamp
        elif isinstance(v, SR.StreamsGroupTopologyValue):
            group.topology = v
        elif isinstance(v, SR.StreamsGroupTargetAssignmentMemberValue) and isinstance(
            k, SR.StreamsGroupTargetAssignmentMemberKey
        ):
            group.target[k.member_id] = TasksTuple(
                _tasks(v.active_tasks), _tasks(v.standby_tasks), _tasks(v.warmup_tasks)
            )
    for k, v in recs.items():
        if not (
            isinstance(v, SR.StreamsGroupCurrentMemberAssignmentValue)
            and isinstance(k, SR.StreamsGroupCurrentMemberAssignmentKey)
            and k.member_id in members
        ):
            continue
        try:
            state = MemberState(v.state)
        except ValueError:
            state = MemberState.UNKNOWN
        members[k.member_id] = replace(
            members[k.member_id],
            member_epoch=v.member_epoch,
            previous_member_epoch=v.previous_member_epoch,
            state=state,
            assigned=Assigned(_active(v.active_tasks, v.member_epoch), _tasks(v.standby_tasks), _tasks(v.warmup_tasks)),
            pending_revocation=Assigned(
                _active(v.active_tasks_pending_revocation, v.member_epoch),
                _tasks(v.standby_tasks_pending_revocation),
                _tasks(v.warmup_tasks_pending_revocation),
            ),
        )
    for m in members.values():
        group.put_member(m)
    return group
