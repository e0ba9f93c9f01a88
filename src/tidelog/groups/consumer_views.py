"""What is told of consumer groups (KIP-848): ConsumerGroupDescribe's and ListGroups' answers, and the
checks of offset commits and fetches by a consumer group's members (Kafka's
ConsumerGroup.validateOffsetCommit / validateOffsetFetch, with KIP-1251's assignment epochs)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from .consumer_group import ConsumerGroup, Partitions

if TYPE_CHECKING:
    from ..core.topics import TopicRegistry
    from ..wire.responses import (
        ConsumerGroupDescribeDescribedGroup,
        ConsumerGroupDescribeTopicPartitions,
        ListedGroup,
    )

NONE = 0
NO_OPERATIONS = -2147483648  # INT32_MIN: authorized operations not asked for


def described(
    group: ConsumerGroup, registry: TopicRegistry, default_assignor: str
) -> ConsumerGroupDescribeDescribedGroup:
    def named(parts: Mapping[uuid.UUID, Iterable[int]]) -> list[ConsumerGroupDescribeTopicPartitions]:
        out: list[ConsumerGroupDescribeTopicPartitions] = []
        for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0])):
            topic = registry.by_id.get(t)
            if topic is not None and ps:
                out.append({"topic_id": t, "topic_name": topic.name, "partitions": sorted(ps)})
        return out

    return {
        "error_code": NONE,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state.value,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": group.preferred_assignor(default_assignor),
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex or "",  # as Kafka: "" for none
                # what it owns: its assigned partitions and those it is revoking, as Kafka
                "assignment": {"topic_partitions": named(_owned(m.assigned, m.pending_revocation))},
                "target_assignment": {"topic_partitions": named(group.target.get(m.member_id, {}))},
                "member_type": 0 if m.classic is not None else 1,  # 0: the classic protocol, 1: the consumer
            }
            for m in group.members.values()
        ],
        "authorized_operations": NO_OPERATIONS,
    }


def _owned(assigned: Partitions, revoking: Partitions) -> dict[uuid.UUID, set[int]]:
    out: dict[uuid.UUID, set[int]] = {t: set(ps) for t, ps in assigned.items()}
    for t, ps in revoking.items():
        out.setdefault(t, set()).update(ps)
    return out


def described_error(group_id: str, code: E, message: str | None) -> ConsumerGroupDescribeDescribedGroup:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": NO_OPERATIONS,
    }


def listed(groups: Iterable[ConsumerGroup], states: set[str]) -> list[ListedGroup]:
    out: list[ListedGroup] = []
    for g in groups:
        state = g.state.value
        if states and state.lower() not in states:
            continue
        out.append(
            {"group_id": g.group_id, "protocol_type": "consumer", "group_state": state, "group_type": "consumer"}
        )
    return out


def commit_error(
    group: ConsumerGroup, member_id: str, instance_id: str | None, epoch: int, version: int, txn: bool
) -> tuple[int, Callable[[uuid.UUID | None, int], int] | None]:
    """(error, per-partition check or None) of an offset commit to a consumer group: the member's
    epoch, or an older one for partitions assigned to it at or before that epoch."""
    if epoch < 0 and not group.members:
        return NONE, None  # an admin client's, or a consumer's without group management
    if txn and epoch == -1 and member_id == "" and instance_id is None:
        return NONE, None
    member = group.members.get(member_id)
    if member is None:
        return E.unknown_member_id.value, None
    # a member of the classic protocol (online migration) commits with any version, its generation
    # being its member epoch: a wrong one is ILLEGAL_GENERATION rather than STALE_MEMBER_EPOCH
    stale = E.illegal_generation.value if member.classic is not None else E.stale_member_epoch.value
    if not txn and member.classic is None and version < 9:
        return E.unsupported_version.value, None
    if epoch == member.member_epoch:
        return NONE, None
    if epoch > member.member_epoch:
        return stale, None

    def check(topic_id: uuid.UUID | None, partition: int) -> int:
        assigned_at = member.assignment_epoch(topic_id, partition) if topic_id is not None else None
        if assigned_at is None or epoch < assigned_at:
            return stale
        return NONE

    return NONE, check


def fetch_error(group: ConsumerGroup, member_id: str | None, epoch: int) -> int:
    """OffsetFetch v9+ by a member: its epoch must be the current one."""
    if member_id is None and epoch < 0:
        return NONE
    member = group.members.get(member_id or "")
    if member is None:
        return E.unknown_member_id.value
    if epoch == member.member_epoch:
        return NONE
    return E.illegal_generation.value if member.classic is not None else E.stale_member_epoch.value
