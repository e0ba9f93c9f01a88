"""Online migration between a classic group and a consumer group (KIP-848), as Kafka 4.3.1's
GroupMetadataManager does it under `group.consumer.migration.policy` (`disabled`, `upgrade`,
`downgrade`, `bidirectional`: Kafka's default).

**Upgrade** (`from_classic`): a ConsumerGroupHeartbeat joining a classic group that has members
converts it, whatever its state, when the policy allows upgrades, the group's protocol type is
"consumer" and it has no more members than `group.consumer.max.size`. The classic members become
members of the consumer group that use the classic protocol (their JoinGroup protocols and session
timeout kept as `ClassicMemberMetadata`), at member epoch = the group's generation, Stable, owning
and targeted at the partitions of their last assignment; the group and assignment epochs are the
generation. Members parked in JoinGroup or SyncGroup are answered REBALANCE_IN_PROGRESS. The
records: the classic group's tombstone and every record of the new group, written with the
joining member's own in one append (`consumer_persist.creation_records`). An assignment carrying
user data (a custom client-side assignor's) cannot be kept: GROUP_ID_NOT_FOUND, as Kafka.

**Downgrade** (`to_classic`): when members are fenced or leave (ConsumerGroupHeartbeat -1, a
session, rebalance, join or sync timeout, LeaveGroup) and every member left uses the classic
protocol, the group becomes a classic group again when the policy allows downgrades: generation =
the group epoch, protocol type "consumer", the protocol the members vote for, each member's target
assignment serialized at the version of its own subscription; the consumer group's tombstones and
the classic group's record go in one append, and the classic group starts a rebalance
(PreparingRebalance), so the members rejoin it through their heartbeats.

The same happens when a member of the classic protocol takes the place of the last static member
of the consumer protocol (its instance id, in JoinGroup: `consumer_classic`); the classic group then
rebalances only when the group epoch is ahead of the target assignment. Not done:
`group.max.size` (tidelog's classic groups have no maximum size; Kafka's default is unbounded too).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from .consumer_embedded import EMPTY_ASSIGNMENT, EmbeddedFormatError, decode_assignment, decode_subscription, version_of
from .consumer_embedded import encode_assignment as encode
from .consumer_group import ConsumerGroup, Member, MemberState
from .consumer_records import ClassicMemberMetadata, ClassicProtocol
from .consumer_requests import GroupError
from .group import Group
from .group import Member as ClassicMember

if TYPE_CHECKING:
    from ..core.topics import TopicRegistry

POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


def upgrade_enabled(policy: str) -> bool:
    return policy in ("upgrade", "bidirectional")


def downgrade_enabled(policy: str) -> bool:
    return policy in ("downgrade", "bidirectional")


def _cannot(group_id: str, why: str) -> GroupError:
    return GroupError(E.group_id_not_found, f"Cannot upgrade classic group {group_id} to consumer group because {why}")


def check_upgrade(classic: Group, policy: str, max_size: int) -> None:
    """Kafka's validateOnlineUpgrade: GroupError (GROUP_ID_NOT_FOUND) when the group may not convert."""
    gid = classic.group_id
    if not upgrade_enabled(policy):
        raise _cannot(gid, "online upgrade is disabled.")
    if classic.protocol_type != "consumer":
        raise _cannot(gid, "the group does not use the consumer embedded protocol.")
    if len(classic.members) > max_size:
        raise _cannot(gid, "the group size exceeds the consumer group maximum size.")


def classic_metadata(session_timeout_ms: int, protocols: Iterable[tuple[str, bytes]]) -> ClassicMemberMetadata:
    return ClassicMemberMetadata(session_timeout_ms, tuple(ClassicProtocol(n, bytes(m)) for n, m in protocols))


def topic_ids(partitions: Iterable[tuple[str, Iterable[int]]], registry: TopicRegistry) -> dict[uuid.UUID, set[int]]:
    """Named partitions by topic id; topics this broker does not know are left out, as Kafka does."""
    out: dict[uuid.UUID, set[int]] = {}
    for name, ps in partitions:
        t = registry.get(name)
        if t is not None:
            out.setdefault(t.topic_id, set()).update(ps)
    return out


def named(
    parts: dict[uuid.UUID, frozenset[int]] | dict[uuid.UUID, dict[int, int]], registry: TopicRegistry
) -> list[tuple[str, list[int]]]:
    """Partitions by topic name, in topic name order (topics deleted meanwhile are left out)."""
    out = []
    for t, ps in parts.items():
        topic = registry.by_id.get(t)
        if topic is not None and ps:
            out.append((topic.name, sorted(ps)))
    return sorted(out)


def from_classic(
    classic: Group, registry: TopicRegistry, metadata_hash: Callable[[Iterable[str]], int]
) -> ConsumerGroup:
    """Kafka's ConsumerGroup.fromClassicGroup (see the module's docstring). Raises GroupError."""
    gid, generation = classic.group_id, classic.generation
    group = ConsumerGroup(gid, group_epoch=generation, assignment_epoch=generation)
    for cm in classic.members.values():
        try:
            owned: dict[uuid.UUID, set[int]] = {}
            if cm.assignment != EMPTY_ASSIGNMENT:
                assignment = decode_assignment(cm.assignment)
                if assignment.user_data:
                    raise _cannot(
                        gid,
                        "an unsupported custom assignor is in use. Please refer to the documentation or switch "
                        "to a default assignor before re-attempting the upgrade.",
                    )
                owned = topic_ids(assignment.partitions, registry)
            protocol = classic.protocol_name or (cm.protocols[0][0] if cm.protocols else None)
            subscription = decode_subscription(cm.metadata(protocol))
        except EmbeddedFormatError:
            raise _cannot(gid, "the embedded consumer protocol is malformed.") from None
        member = Member(
            cm.member_id,
            instance_id=cm.group_instance_id,
            rack_id=subscription.rack_id,
            client_id=cm.client_id,
            client_host=cm.client_host,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            rebalance_timeout_ms=cm.rebalance_timeout_ms,
            member_epoch=generation,
            previous_member_epoch=generation,
            state=MemberState.STABLE,
            assigned={t: dict.fromkeys(ps, generation) for t, ps in owned.items() if ps},
            classic=classic_metadata(cm.session_timeout_ms, cm.protocols),
        )
        group.target[cm.member_id] = {t: frozenset(ps) for t, ps in owned.items() if ps}
        group.put_member(member)
    group.metadata_hash = metadata_hash(group.subscribed_topic_names())
    return group


def can_downgrade(group: ConsumerGroup, leaving: set[str], policy: str) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers: members are left, all of the classic protocol."""
    if not group.all_classic_except(leaving):
        return False
    if not any(mid not in leaving for mid in group.members):
        return False  # empty: it stays an (empty) consumer group
    return downgrade_enabled(policy)


def to_classic(group: ConsumerGroup, leaving: set[str], registry: TopicRegistry) -> Group:
    """Kafka's ClassicGroup.fromConsumerGroup: the classic group of the members not leaving, each
    with its target assignment (the caller starts its rebalance)."""
    classic = Group(group.group_id, generation=group.group_epoch, protocol_type="consumer")
    for m in group.members.values():
        if m.member_id in leaving or m.classic is None:
            continue
        classic.add(
            ClassicMember(
                m.member_id,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.classic.session_timeout_ms,
                "consumer",
                [(p.name, p.metadata) for p in m.classic.supported_protocols],
                is_new=False,
            )
        )
    classic.protocol_name = classic.select_protocol()
    for cm in classic.members.values():
        cm.assignment = assignment_bytes(
            group.target.get(cm.member_id, {}), cm.metadata(classic.protocol_name), registry
        )
    return classic


def assignment_bytes(
    parts: dict[uuid.UUID, frozenset[int]] | dict[uuid.UUID, dict[int, int]],
    subscription: bytes,
    registry: TopicRegistry,
) -> bytes:
    """A ConsumerProtocolAssignment of `parts` at the version of the member's subscription (Kafka
    reads the version from its first protocol's metadata; version 0 when that cannot be read)."""
    try:
        version = version_of(subscription)
    except EmbeddedFormatError:
        version = 0
    return encode(version, named(parts, registry))
