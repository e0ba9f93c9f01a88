"""The share coordinator's state (KIP-932): the durable state of every share partition - its start
offset and the delivery state of the records past it - kept in the compacted internal topic
`__share_group_state`, in Kafka 4.3.1's record formats (`state_records`).

A share partition (group, topic id, partition) lives in the partition of `__share_group_state`
that Kafka's share coordinator would use: abs(javaHash("<group>:<topic id>:<partition>")) % n,
with the topic id as Kafka prints it (URL-safe base64, no padding). Every write is a whole
ShareSnapshot of the share partition (the start offset, the state epoch, and its in-flight state
batches: first offset, last offset, delivery state 0 Available / 2 Acknowledged / 4 Archived,
delivery count; and, as Kafka 4.2+ writes it, how many of those records are acknowledged or
archived, from which a share group's lag is computed); replay keeps the latest snapshot per key
and applies the ShareUpdate records a Kafka broker may have written after it, so the log compacts
to one record per share partition.
A tombstone deletes the share partition's state (DeleteShareGroupState, a deleted group).

`write` returns once the record is in the log (and flushed when the topic's settings ask; in a
cluster, once replicated to the ISR under the leader epoch it was appended at), so a caller that
acknowledges only after it never answers a client before the state is durable. Who may write what
(leader and state epochs) is the share coordinator's (`coordinator`).
"""

from __future__ import annotations

import base64
import logging
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..core.topics import SHARE_STATE_TOPIC
from ..groups.records import RecordFormatError, java_string_hash
from ..groups.store import EngineGroupLog
from . import state_records as SS

if TYPE_CHECKING:
    from ..core.admin import TopicAdmin
    from ..core.config import BrokerConfig
    from ..core.partitions import Partitions
    from ..groups.store import WriteGuard

log = logging.getLogger("tidelog.share")
ShareKey = tuple[str, uuid.UUID, int]  # (group, topic id, partition)


def kafka_uuid(u: uuid.UUID) -> str:
    """A topic id as Kafka's Uuid.toString prints it."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


_URL_BASE64 = re.compile(r"[A-Za-z0-9_-]*={0,2}")


def parse_coordinator_key(key: str) -> ShareKey | None:
    """The share partition of a share coordinator key "<group>:<topic id>:<partition>"
    (FindCoordinator v6 key type 2), or None where Kafka's SharePartitionKey.validate refuses it:
    split as Java's String.split (trailing empty parts dropped; the group may hold ':'), a group
    of blanks, a topic id that is not a base64 UUID, a partition that is not a 32-bit integer."""
    parts = key.split(":")
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) < 3:
        return None
    group, topic_id, partition = ":".join(parts[:-2]), parts[-2], parts[-1]
    if all(c <= " " for c in group):  # Java's trim().isEmpty()
        return None
    if len(topic_id) > 24 or not _URL_BASE64.fullmatch(topic_id):
        return None
    try:
        raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    except ValueError:  # a length no base64 text has
        return None
    digits = partition[1:] if partition[:1] in ("+", "-") else partition
    if len(raw) != 16 or not digits.isascii() or not digits.isdigit():
        return None
    n = int(partition)
    if not -(2**31) <= n < 2**31:
        return None
    return group, uuid.UUID(bytes=raw), n


def coordinator_partition(key: ShareKey, partitions: int) -> int:
    h = java_string_hash(f"{key[0]}:{kafka_uuid(key[1])}:{key[2]}")
    return (0 if h == -(2**31) else abs(h)) % partitions


@dataclass(frozen=True, slots=True)
class ShareState:
    start_offset: int
    state_epoch: int
    batches: tuple[SS.StateBatch, ...]
    snapshot_epoch: int = 0
    create_timestamp: int = 0
    leader_epoch: int = 0  # the share-partition leader's epoch that last read or wrote it


def _merged(old: tuple[SS.StateBatch, ...], new: Iterable[SS.StateBatch], start: int) -> tuple[SS.StateBatch, ...]:
    """`old` batches overwritten by `new` ones where they overlap, nothing below `start`."""
    out: list[SS.StateBatch] = []
    news = sorted(new, key=lambda b: b.first_offset)
    for b in old:
        pieces = [(b.first_offset, b.last_offset)]
        for n in news:
            nxt = []
            for lo, hi in pieces:
                if n.last_offset < lo or n.first_offset > hi:
                    nxt.append((lo, hi))
                    continue
                if lo < n.first_offset:
                    nxt.append((lo, n.first_offset - 1))
                if hi > n.last_offset:
                    nxt.append((n.last_offset + 1, hi))
            pieces = nxt
        out += [SS.StateBatch(lo, hi, b.delivery_state, b.delivery_count) for lo, hi in pieces]
    out += news
    out = [
        SS.StateBatch(max(b.first_offset, start), b.last_offset, b.delivery_state, b.delivery_count)
        for b in sorted(out, key=lambda b: b.first_offset)
        if b.last_offset >= start
    ]
    return tuple(out)


class _Batch(Protocol):
    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def delivery_state(self) -> int: ...


def delivery_complete(batches: Iterable[_Batch]) -> int:
    """How many records of these state batches are acknowledged or archived (their delivery is
    complete): a share group's lag leaves them out."""
    return sum(b.last_offset - b.first_offset + 1 for b in batches if b.delivery_state in (2, 4))


class ShareStateStore:
    """The share state in memory and in `__share_group_state`. On a single node every partition
    of the topic is loaded at start; in a cluster (`guard` given: writes are refused off the
    leader and count once replicated) only the partitions this broker coordinates, as the
    coordinators' placement loads and unloads them."""

    def __init__(
        self, config: BrokerConfig, admin: TopicAdmin, partitions: Partitions, guard: WriteGuard | None = None
    ) -> None:
        self.config = config
        self.admin = admin
        self.clustered = guard is not None
        self.num_partitions: int = config["share.coordinator.state.topic.num.partitions"]
        self._log = EngineGroupLog(partitions, SHARE_STATE_TOPIC, guard)
        self.states: dict[ShareKey, ShareState] = {}
        self.started = False

    def _ensure_topic(self) -> None:
        """The state topic, created at the first share partition's state (as Kafka creates it).
        In a cluster it exists before any write reaches here (the placement creates it)."""
        if self.clustered:
            return
        topic = self.admin.ensure_internal(
            SHARE_STATE_TOPIC,
            self.num_partitions,
            {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.config["share.coordinator.state.topic.segment.bytes"]),
            },
        )
        self.num_partitions = topic.partitions

    def start(self) -> None:
        """A single node: load every partition of the topic (if any share group had state)."""
        self.started = True
        existing = self.admin.registry.get(SHARE_STATE_TOPIC)
        if existing is None:
            return  # no share group has had state here yet
        self.num_partitions = existing.partitions
        n = sum(self.load_partition(p) for p in range(self.num_partitions))
        log.info("share state of %d share partitions loaded from %d records", len(self.states), n)

    def partition_of(self, key: ShareKey) -> int:
        return coordinator_partition(key, self.num_partitions)

    def load_partition(self, partition: int) -> int:
        """Replay one partition of the topic into memory; how many records."""
        n = 0
        for entry in self._log.replay(partition):
            if entry.key is None:
                continue
            n += 1
            try:
                self._apply(SS.decode_key(entry.key), entry.value)
            except RecordFormatError as e:
                log.warning("%s-%d: skipping unreadable record: %s", SHARE_STATE_TOPIC, partition, e)
        return n

    def forget_partition(self, partition: int) -> None:
        for k in [k for k in self.states if self.partition_of(k) == partition]:
            del self.states[k]

    def _apply(self, key: SS.ShareStateRecordKey, data: bytes | None) -> None:
        k = (key.group, key.topic_id, key.partition)
        if data is None:
            self.states.pop(k, None)
            return
        value = SS.decode_value(key, data)
        if isinstance(value, SS.ShareSnapshotValue):
            self.states[k] = ShareState(
                value.start_offset,
                value.state_epoch,
                tuple(value.state_batches),
                value.snapshot_epoch,
                value.create_timestamp,
                value.leader_epoch,
            )
        elif isinstance(value, SS.ShareUpdateValue):
            old = self.states.get(k)
            if old is None:
                return  # an update without its snapshot: Kafka ignores it too
            start = value.start_offset if value.start_offset >= 0 else old.start_offset
            self.states[k] = ShareState(
                start,
                old.state_epoch,
                _merged(old.batches, value.state_batches, start),
                old.snapshot_epoch,
                old.create_timestamp,
                max(old.leader_epoch, value.leader_epoch),
            )

    def get(self, key: ShareKey) -> ShareState | None:
        return self.states.get(key)

    async def write(
        self,
        key: ShareKey,
        start_offset: int,
        batches: Iterable[SS.StateBatch],
        state_epoch: int = 0,
        leader_epoch: int = 0,
    ) -> None:
        """The share partition's whole state, durable when this returns (LogError otherwise: the
        state in memory is unchanged)."""
        old = self.states.get(key)
        now = int(time.time() * 1000)
        snapshot_epoch = 0 if old is None else old.snapshot_epoch + 1
        created = now if old is None else old.create_timestamp
        value = SS.ShareSnapshotValue(
            snapshot_epoch=snapshot_epoch,
            state_epoch=state_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            create_timestamp=created,
            write_timestamp=now,
            state_batches=(kept := tuple(batches)),
            delivery_complete_count=delivery_complete(kept),
        )
        rec = (SS.encode_key(SS.ShareSnapshotKey(*key)), SS.encode_value(value))
        self._ensure_topic()
        await self._log.append(self.partition_of(key), [rec])
        self.states[key] = ShareState(start_offset, state_epoch, kept, snapshot_epoch, created, leader_epoch)

    async def delete(self, keys: Iterable[ShareKey]) -> None:
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
        doomed = [k for k in keys if k in self.states]
        for k in doomed:
            by_partition.setdefault(self.partition_of(k), []).append((SS.encode_key(SS.ShareSnapshotKey(*k)), None))
        for p, recs in by_partition.items():
            await self._log.append(p, recs)
        for k in doomed:
            self.states.pop(k, None)

    def of_group(self, group: str) -> dict[ShareKey, ShareState]:
        return {k: v for k, v in self.states.items() if k[0] == group}
