"""A share group's offsets, for administrators (KIP-932): DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets, as Kafka 4.3.1's group coordinator answers
them (what `kafka-share-groups.sh --describe / --reset-offsets / --delete-offsets` send).

A share group has no committed offset per partition: its position is the *share-partition start
offset* (every record below it is delivered or archived) kept, with the delivery state of the
records past it, by the share state store. So:

- describing reads each share partition's start offset, leader epoch and count of records past it
  whose delivery is complete; the lag is the partition's high watermark less the start offset less
  that count (-1 where the partition has no state, the state predates the count, or the topic is
  unknown: absence of data, not an error, as OffsetFetch). Without topics it describes every
  partition the group has initialized;
- altering (the group must be empty: NON_EMPTY_GROUP) writes a new state for each partition, at the
  given start offset with nothing in flight, and records the partitions as initialized; an unknown
  topic or a partition past its count is UNKNOWN_TOPIC_OR_PARTITION. A group that does not exist
  is created (empty), as Kafka does;
- deleting (the group must exist and be empty) removes the state of every initialized partition of
  each topic; the group's next member initializes them again by `share.auto.offset.reset`.

Crash behaviour: the share state is written (durably) before the group's record of which partitions
are initialized; a crash between the two leaves state the group does not list, which the next
initialization keeps (it writes only partitions without state) and the next delete removes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode as E

from ..log.errors import LogError
from . import share_records as SR
from .consumer_requests import GroupError
from .share_group import ShareStates

if TYPE_CHECKING:
    from ..wire.responses import (
        AlterShareGroupOffsetsResponse,
        AlterShareGroupOffsetsResponseTopic,
        DeleteShareGroupOffsetsResponse,
        DeleteShareGroupOffsetsResponseTopic,
        DescribeShareGroupOffsetsResponseGroup,
        DescribeShareGroupOffsetsResponsePartition,
        DescribeShareGroupOffsetsResponseTopic,
    )
    from .share_group import ShareGroups

NONE = 0
ZERO_UUID = uuid.UUID(int=0)
UNINITIALIZED = -1


class ShareOffsetStates(ShareStates, Protocol):
    """The share partitions' state (tidelog.share.manager), as the admin APIs need it too."""

    async def summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, int, int] | None:
        """(start offset, leader epoch, delivery-complete count or -1), None without state."""
        ...

    async def end_offset(self, topic_id: uuid.UUID, partition: int) -> int | None: ...

    async def reset(self, group_id: str, offsets: Mapping[uuid.UUID, Mapping[int, int]]) -> None: ...


class ShareOffsets:
    """The admin side of share groups; `shares` owns the groups, `states` the share state."""

    def __init__(self, shares: ShareGroups, states: ShareOffsetStates) -> None:
        self.shares = shares
        self.states = states

    # ---- DescribeShareGroupOffsets ---------------------------------------------------------------
    async def describe(
        self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> DescribeShareGroupOffsetsResponseGroup:
        """`topics` None: every partition the group has initialized."""
        coord = self.shares.coord
        if code := coord.status(group_id):
            return {"group_id": group_id, "topics": [], "error_code": code}
        registry = coord.registry
        wanted: list[tuple[str, uuid.UUID | None, Sequence[int]]] = []
        if topics is None:
            group = self.shares.groups.get(group_id)
            for t, initialized in sorted((group.initialized if group else {}).items(), key=lambda kv: str(kv[0])):
                topic = registry.by_id.get(t)
                if topic is not None:
                    wanted.append((topic.name, t, sorted(initialized)))
        else:
            for name, asked in topics:
                topic = registry.get(name)
                wanted.append((name, None if topic is None else topic.topic_id, asked))
        out: list[DescribeShareGroupOffsetsResponseTopic] = []
        for name, topic_id, ps in wanted:
            if topic_id is None:
                out.append(
                    {
                        "topic_name": name,
                        "topic_id": ZERO_UUID,
                        "partitions": [
                            {"partition_index": p, "start_offset": UNINITIALIZED, "leader_epoch": 0, "error_code": NONE}
                            for p in ps
                        ],
                    }
                )
                continue
            out.append(
                {
                    "topic_name": name,
                    "topic_id": topic_id,
                    "partitions": [await self._one(group_id, topic_id, p) for p in ps],
                }
            )
        return {"group_id": group_id, "topics": out, "error_code": NONE}

    async def _one(self, group_id: str, topic_id: uuid.UUID, p: int) -> DescribeShareGroupOffsetsResponsePartition:
        found = await self.states.summary(group_id, topic_id, p)
        if found is None:
            return {
                "partition_index": p,
                "start_offset": UNINITIALIZED,
                "leader_epoch": 0,
                "lag": UNINITIALIZED,
                "error_code": NONE,
            }
        start, leader_epoch, complete = found
        end = await self.states.end_offset(topic_id, p)
        if start == UNINITIALIZED or complete == UNINITIALIZED:
            lag = UNINITIALIZED
        elif end is None:  # the partition is not here (any more)
            return {
                "partition_index": p,
                "start_offset": 0,
                "leader_epoch": 0,
                "error_code": E.unknown_topic_or_partition,
                "error_message": "This server does not host this topic-partition.",
            }
        else:
            lag = end - start - complete
        return {
            "partition_index": p,
            "start_offset": start,
            "leader_epoch": leader_epoch,
            "lag": lag,
            "error_code": NONE,
        }

    # ---- AlterShareGroupOffsets ------------------------------------------------------------------
    async def alter(
        self, group_id: str, topics: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> AlterShareGroupOffsetsResponse:
        """`topics`: (name, [(partition, start offset)]) the handler found authorized and known."""

        def failed(code: int, message: str | None) -> AlterShareGroupOffsetsResponse:
            return {"throttle_time": 0, "error_code": code, "error_message": message, "responses": []}

        coord = self.shares.coord
        if code := coord.status(group_id):
            return failed(code, None)
        if not group_id:
            return failed(E.invalid_group_id, None)
        try:
            group, created = self.shares.get_or_create(group_id)
        except GroupError as e:
            return failed(e.code, e.message)
        if group.members:
            return failed(E.non_empty_group, "The group is not empty.")
        registry = coord.registry
        unknown: list[AlterShareGroupOffsetsResponseTopic] = []  # Kafka's broker answers these first
        responses: list[AlterShareGroupOffsetsResponseTopic] = []
        offsets: dict[uuid.UUID, dict[int, int]] = {}
        for name, parts in topics:
            topic = registry.get(name)
            if topic is None:
                unknown.append(_alter_failed(name, ZERO_UUID, [p for p, _ in parts]))
                continue
            ok = {p: o for p, o in parts if 0 <= p < topic.partitions}
            offsets.setdefault(topic.topic_id, {}).update(ok)
            responses.append(
                {
                    "topic_name": name,
                    "topic_id": topic.topic_id,
                    "partitions": [
                        {"partition_index": p, "error_code": NONE}
                        if p in ok
                        else {
                            "partition_index": p,
                            "error_code": E.unknown_topic_or_partition,
                            "error_message": "This server does not host this topic-partition.",
                        }
                        for p, _ in parts
                    ],
                }
            )
        records: list[tuple[SR.ShareGroupRecordKey, SR.ShareGroupRecordValue | None]] = []
        if created:
            records.append(self.shares.metadata_record(group))
        try:
            await self.states.reset(group_id, offsets)
            for t, ps in offsets.items():
                group.initialized.setdefault(t, set()).update(ps)
            if offsets:
                records.append(self.shares.state_record(group))
            if records:
                await self.shares.write(group_id, records)
        except LogError as e:
            return failed(e.error_code, e.message)
        return {"throttle_time": 0, "error_code": NONE, "error_message": None, "responses": unknown + responses}

    # ---- DeleteShareGroupOffsets -----------------------------------------------------------------
    async def delete(self, group_id: str, names: Sequence[str]) -> DeleteShareGroupOffsetsResponse:
        def failed(code: int, message: str | None) -> DeleteShareGroupOffsetsResponse:
            return {"throttle_time": 0, "error_code": code, "error_message": message, "responses": []}

        coord = self.shares.coord
        if code := coord.status(group_id):
            return failed(code, None)
        if not group_id:
            return failed(E.invalid_group_id, None)
        try:
            group = self.shares.find(group_id)
        except GroupError as e:
            return failed(e.code, e.message)
        if group.members:
            return failed(E.non_empty_group, "The group is not empty.")
        registry = coord.registry
        responses: list[DeleteShareGroupOffsetsResponseTopic] = []  # those deleted, then the others
        failures: list[DeleteShareGroupOffsetsResponseTopic] = []
        doomed: dict[uuid.UUID, set[int]] = {}
        for name in names:
            topic = registry.get(name)
            if topic is None:
                failures.append(
                    {
                        "topic_name": name,
                        "topic_id": ZERO_UUID,
                        "error_code": E.unknown_topic_or_partition,
                        "error_message": "This server does not host this topic-partition.",
                    }
                )
            elif topic.topic_id not in group.initialized:
                failures.append(
                    {
                        "topic_name": name,
                        "topic_id": ZERO_UUID,
                        "error_code": E.unknown_topic_or_partition,
                        "error_message": "There is no offset information to delete.",
                    }
                )
            else:
                doomed[topic.topic_id] = set(group.initialized[topic.topic_id])
                responses.append({"topic_name": name, "topic_id": topic.topic_id, "error_code": NONE})
        if doomed:
            try:
                await self.states.remove(group_id, doomed)
                for t in doomed:
                    group.initialized.pop(t, None)
                await self.shares.write(group_id, [self.shares.state_record(group)])
            except LogError as e:
                return failed(e.error_code, e.message)
        return {"throttle_time": 0, "error_code": NONE, "error_message": None, "responses": responses + failures}


def _alter_failed(name: str, topic_id: uuid.UUID, partitions: Iterable[int]) -> AlterShareGroupOffsetsResponseTopic:
    return {
        "topic_name": name,
        "topic_id": topic_id,
        "partitions": [
            {
                "partition_index": p,
                "error_code": E.unknown_topic_or_partition,
                "error_message": "This server does not host this topic-partition.",
            }
            for p in partitions
        ],
    }
