"""The records of a consumer group (KIP-848) in `__consumer_offsets`, made from its state and read
back into it: what `consumer_protocol` writes after each change and rebuilds a group from when
this broker starts coordinating its partition. The formats are `consumer_records`' (Kafka 4.3's).

    member_record        ConsumerGroupMemberMetadata: the member's subscription and identity
    target_record        ConsumerGroupTargetAssignmentMember: its target partitions
    assignment_record    ConsumerGroupCurrentMemberAssignment: its epoch, state, owned partitions
                         with the epoch each was assigned at, and those it must revoke
    tombstones           every record of a group, deleted
    creation_records     every record of a group converted from a classic group, in Kafka's order
    group_from           a group from the latest record of each key (None without its metadata)
"""

from __future__ import annotations

from collections.abc import Iterable

from . import consumer_records as CR
from .consumer_group import ConsumerGroup, Member, MemberState, Partitions, TargetPartitions
from .records import GroupKey, GroupValue

# (a consumer_records key, or a classic group's key; its value, or None: a tombstone). A classic
# group's key goes with a consumer group's records when the group converts (online migration): its
# tombstone when it becomes a consumer group, its GroupValue when it becomes a classic group again.
Record = tuple[CR.ConsumerGroupRecordKey | GroupKey, CR.ConsumerGroupRecordValue | GroupValue | None]


def member_record(group_id: str, m: Member) -> Record:
    return (
        CR.ConsumerGroupMemberMetadataKey(group_id, m.member_id),
        CR.ConsumerGroupMemberMetadataValue(
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
            subscribed_topic_regex=m.subscribed_topic_regex or "",  # Kafka writes "" for none
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            server_assignor=m.server_assignor,
            classic_member_metadata=m.classic,
        ),
    )


def with_epochs(parts: Partitions) -> tuple[CR.TopicPartitions, ...]:
    out = []
    for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0])):
        order = sorted(ps)
        out.append(CR.TopicPartitions(t, tuple(order), tuple(ps[p] for p in order)))
    return tuple(out)


def assignment_record(group_id: str, m: Member) -> Record:
    return (
        CR.ConsumerGroupCurrentMemberAssignmentKey(group_id, m.member_id),
        CR.ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=m.member_epoch,
            previous_member_epoch=m.previous_member_epoch,
            state=int(m.state),
            assigned_partitions=with_epochs(m.assigned),
            partitions_pending_revocation=with_epochs(m.pending_revocation),
        ),
    )


def target_record(group_id: str, member_id: str, target: TargetPartitions) -> Record:
    return (
        CR.ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
        CR.ConsumerGroupTargetAssignmentMemberValue(
            tuple(
                CR.TargetTopicPartitions(t, tuple(sorted(ps)))
                for t, ps in sorted(target.items(), key=lambda kv: str(kv[0]))
            )
        ),
    )


def group_from(
    group_id: str, recs: dict[CR.ConsumerGroupRecordKey, CR.ConsumerGroupRecordValue]
) -> ConsumerGroup | None:
    """A consumer group from its latest records (None: no group metadata record)."""
    meta = next((v for k, v in recs.items() if isinstance(k, CR.ConsumerGroupMetadataKey)), None)
    if not isinstance(meta, CR.ConsumerGroupMetadataValue):
        return None
    group = ConsumerGroup(group_id, group_epoch=meta.epoch, metadata_hash=meta.metadata_hash)
    members: dict[str, Member] = {}
    for k, v in recs.items():
        if isinstance(k, CR.ConsumerGroupMemberMetadataKey) and isinstance(v, CR.ConsumerGroupMemberMetadataValue):
            m = members.setdefault(k.member_id, Member(k.member_id))
            m.instance_id, m.rack_id = v.instance_id, v.rack_id
            m.client_id, m.client_host = v.client_id, v.client_host
            m.subscribed_topic_names = tuple(v.subscribed_topic_names)
            m.subscribed_topic_regex = v.subscribed_topic_regex or None
            m.rebalance_timeout_ms, m.server_assignor = v.rebalance_timeout_ms, v.server_assignor
            m.classic = v.classic_member_metadata
        elif isinstance(k, CR.ConsumerGroupTargetAssignmentMetadataKey) and isinstance(
            v, CR.ConsumerGroupTargetAssignmentMetadataValue
        ):
            group.assignment_epoch, group.assignment_timestamp = v.assignment_epoch, v.assignment_timestamp
        elif isinstance(k, CR.ConsumerGroupRegularExpressionKey) and isinstance(
            v, CR.ConsumerGroupRegularExpressionValue
        ):
            group.regexes[k.regular_expression] = (frozenset(v.topics), v.version, v.timestamp)
    for k, v in recs.items():
        if isinstance(k, CR.ConsumerGroupTargetAssignmentMemberKey) and isinstance(
            v, CR.ConsumerGroupTargetAssignmentMemberValue
        ):
            group.target[k.member_id] = {tp.topic_id: frozenset(tp.partitions) for tp in v.topic_partitions}
        elif isinstance(k, CR.ConsumerGroupCurrentMemberAssignmentKey) and isinstance(
            v, CR.ConsumerGroupCurrentMemberAssignmentValue
        ):
            m = members.setdefault(k.member_id, Member(k.member_id))
            m.member_epoch, m.previous_member_epoch = v.member_epoch, v.previous_member_epoch
            try:
                m.state = MemberState(v.state)
            except ValueError:
                m.state = MemberState.UNKNOWN
            m.assigned = partitions_from(v.assigned_partitions, v.member_epoch)
            m.pending_revocation = partitions_from(v.partitions_pending_revocation, v.member_epoch)
    for m in members.values():
        if any(isinstance(k, CR.ConsumerGroupMemberMetadataKey) and k.member_id == m.member_id for k in recs):
            group.put_member(m)
    return group


def partitions_from(tps: Iterable[CR.TopicPartitions], default_epoch: int) -> Partitions:
    out: Partitions = {}
    for tp in tps:
        epochs = tp.assignment_epochs
        if epochs is not None and len(epochs) == len(tp.partitions):
            out[tp.topic_id] = dict(zip(tp.partitions, epochs, strict=True))
        else:
            out[tp.topic_id] = dict.fromkeys(tp.partitions, max(default_epoch, 0))
    return out


def creation_records(group: ConsumerGroup) -> list[Record]:
    """What Kafka's createConsumerGroupRecords writes for a group made from a classic one: each
    member, the group epoch, each target, the target's epoch, each member's current assignment."""
    gid = group.group_id
    out: list[Record] = [member_record(gid, m) for m in group.members.values()]
    out.append(
        (CR.ConsumerGroupMetadataKey(gid), CR.ConsumerGroupMetadataValue(group.group_epoch, group.metadata_hash))
    )
    out += [target_record(gid, mid, group.target.get(mid, {})) for mid in group.members]
    out.append(
        (
            CR.ConsumerGroupTargetAssignmentMetadataKey(gid),
            CR.ConsumerGroupTargetAssignmentMetadataValue(group.assignment_epoch, group.assignment_timestamp),
        )
    )
    out += [assignment_record(gid, m) for m in group.members.values()]
    return out


def tombstones(group: ConsumerGroup) -> list[Record]:
    """Every record of an empty group, deleted (DeleteGroups; a conversion to classic)."""
    out: list[Record] = []
    for member_id in group.members:
        out.append((CR.ConsumerGroupCurrentMemberAssignmentKey(group.group_id, member_id), None))
        out.append((CR.ConsumerGroupTargetAssignmentMemberKey(group.group_id, member_id), None))
    out.append((CR.ConsumerGroupTargetAssignmentMetadataKey(group.group_id), None))
    for member_id in group.members:
        out.append((CR.ConsumerGroupMemberMetadataKey(group.group_id, member_id), None))
    for regex in group.regexes:
        out.append((CR.ConsumerGroupRegularExpressionKey(group.group_id, regex), None))
    out.append((CR.ConsumerGroupMetadataKey(group.group_id), None))
    return out
