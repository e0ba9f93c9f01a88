"""The streams group (KIP-1071) records of `__consumer_offsets`, in Apache Kafka 4.3.1's formats.

A key is an int16 record type (Kafka calls it the key version) and the key's fields in the classic
encoding: str = int16 length + UTF-8 (never null). A value is an int16 value version (0 for every
type here) and the value's fields in the flexible encoding, as in `consumer_records`:

    cstr       compact string: uvarint (length + 1) + UTF-8, at most 32767 bytes; `cstr?` is nullable, 0 = null
    [T]        compact array: uvarint (count + 1) + the items (never null here but in a tag)
    struct?    a nullable struct: int8 -1 (null) or 1, then the struct
    tags       uvarint count, then per field: uvarint tag, uvarint size, size bytes. The value and
               every struct inside it (array items included) end with their own section.

    type key                                    value v0
    17   StreamsGroupMetadata                   epoch i32, metadata_hash i64,
         group str                              tags {0: validated_topology_epoch i32,
                                                      1: last_assignment_configs [KeyValue]?}
    19   StreamsGroupMemberMetadata             instance_id cstr?, rack_id cstr?, client_id cstr,
         group str, member_id str               client_host cstr, rebalance_timeout_ms i32,
                                                topology_epoch i32, process_id cstr,
                                                user_endpoint Endpoint?, client_tags [KeyValue], tags
                                                  Endpoint = host cstr, port u16, tags
                                                  KeyValue = key cstr, value cstr, tags
    20   StreamsGroupTargetAssignmentMetadata   assignment_epoch i32, tags {0: assignment_timestamp i64}
         group str
    21   StreamsGroupTargetAssignmentMember     active_tasks [TaskIds], standby_tasks [TaskIds],
         group str, member_id str               warmup_tasks [TaskIds], tags
                                                  TaskIds = subtopology_id cstr, partitions [i32], tags
    22   StreamsGroupCurrentMemberAssignment    member_epoch i32, previous_member_epoch i32, state i8,
         group str, member_id str               active_tasks, standby_tasks, warmup_tasks,
                                                active_tasks_pending_revocation,
                                                standby_tasks_pending_revocation,
                                                warmup_tasks_pending_revocation: each [EpochTaskIds], tags
                                                  EpochTaskIds = subtopology_id cstr, partitions [i32],
                                                                 tags {0: assignment_epochs [i32]?}
    23   StreamsGroupTopology                   epoch i32, subtopologies [Subtopology], tags
         group str                                Subtopology = subtopology_id cstr, source_topics [cstr],
                                                    source_topic_regex [cstr], state_changelog_topics
                                                    [TopicInfo], repartition_sink_topics [cstr],
                                                    repartition_source_topics [TopicInfo],
                                                    copartition_groups [CopartitionGroup], tags
                                                  TopicInfo = name cstr, partitions i32,
                                                    replication_factor i16, topic_configs [KeyValue], tags
                                                  CopartitionGroup = source_topics [i16],
                                                    source_topic_regex [i16], repartition_source_topics [i16], tags

Type 18 (StreamsGroupPartitionMetadata) was written by Kafka 4.0-4.1's early streams groups only;
4.3.1 has no class for it and its loader skips it. tidelog decodes its key, so that a reader can
skip the record too, and refuses its value. A null value is a tombstone.

The tagged fields, and when Kafka 4.3.1 writes them (tidelog writes exactly the same bytes for the
same field values, checked against Kafka's own serializer by tests/groups/test_streams_records.py):

    validated_topology_epoch  when it is not -1 (its default, and what a record without the tag reads as)
    last_assignment_configs   unless it is empty; null is written as 01 01 00 (tag 1, size 1, count 0)
                              and a record without the tag reads as an empty list
    assignment_timestamp      when it is not 0 (Kafka 4.3, KIP-1263)
    assignment_epochs         unless it is empty (null: 00 01 00); Kafka writes them for active tasks
                              only, one per partition; a record without them (or with another count)
                              reads, for active tasks, as every partition assigned at the member epoch

Reading skips tagged fields it does not know (in nested structs too). Anything else malformed raises
`RecordFormatError`, never another exception: truncation, trailing bytes, an unknown record type or
value version, null in a non-nullable field, invalid UTF-8, a string over 32767 bytes, or a known
tagged field whose size disagrees with its content.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeAlias, TypeVar

from tidelog.groups.consumer_records import VALUE_VERSION
from tidelog.groups.record_fields import (
    I8 as _i8,
)
from tidelog.groups.record_fields import (
    I16 as _i16,
)
from tidelog.groups.record_fields import (
    I32 as _i32,
)
from tidelog.groups.record_fields import (
    I64 as _i64,
)
from tidelog.groups.record_fields import (
    NULL_TAG_DATA as _NULL_TAG_DATA,
)
from tidelog.groups.record_fields import (
    cstr as _cstr,
)
from tidelog.groups.record_fields import (
    r_cnstr as _r_cnstr,
)
from tidelog.groups.record_fields import (
    r_cstr as _r_cstr,
)
from tidelog.groups.record_fields import (
    r_cstrs as _r_cstrs,
)
from tidelog.groups.record_fields import (
    r_i64 as _r_i64,
)
from tidelog.groups.record_fields import (
    r_nullable_i32s as _r_nullable_i32s,
)
from tidelog.groups.record_fields import (
    text as _text,
)
from tidelog.groups.record_fields import (
    utf8 as _utf8,
)
from tidelog.groups.records import RecordFormatError
from tidelog.wire.primitives import DecodeError, Reader, encode_uvarint

T = TypeVar("T")
Buffer: TypeAlias = bytes | bytearray | memoryview

STREAMS_GROUP_METADATA = 17
STREAMS_GROUP_PARTITION_METADATA = 18  # Kafka 4.0-4.1 only
STREAMS_GROUP_MEMBER_METADATA = 19
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
STREAMS_GROUP_TOPOLOGY = 23
RECORD_TYPES = frozenset(range(17, 24))

_u16 = struct.Struct(">H")


# ---- keys -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StreamsGroupMetadataKey:
    record_type: ClassVar[int] = STREAMS_GROUP_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class StreamsGroupPartitionMetadataKey:
    """Written by Kafka 4.0-4.1 only; tidelog reads the key to skip the record."""

    record_type: ClassVar[int] = STREAMS_GROUP_PARTITION_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class StreamsGroupMemberMetadataKey:
    record_type: ClassVar[int] = STREAMS_GROUP_MEMBER_METADATA
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMetadataKey:
    record_type: ClassVar[int] = STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMemberKey:
    record_type: ClassVar[int] = STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class StreamsGroupCurrentMemberAssignmentKey:
    record_type: ClassVar[int] = STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class StreamsGroupTopologyKey:
    record_type: ClassVar[int] = STREAMS_GROUP_TOPOLOGY
    group: str


# ---- values -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class StreamsGroupMetadataValue:
    record_type: ClassVar[int] = STREAMS_GROUP_METADATA
    epoch: int
    metadata_hash: int
    validated_topology_epoch: int = -1  # tag 0
    last_assignment_configs: tuple[KeyValue, ...] | None = ()  # tag 1


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class StreamsGroupMemberMetadataValue:
    record_type: ClassVar[int] = STREAMS_GROUP_MEMBER_METADATA
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: Endpoint | None
    client_tags: tuple[KeyValue, ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMetadataValue:
    record_type: ClassVar[int] = STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA
    assignment_epoch: int
    assignment_timestamp: int = 0  # tag 0, Kafka 4.3+


@dataclass(frozen=True, slots=True)
class TaskIds:
    subtopology_id: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMemberValue:
    record_type: ClassVar[int] = STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER
    active_tasks: tuple[TaskIds, ...]
    standby_tasks: tuple[TaskIds, ...]
    warmup_tasks: tuple[TaskIds, ...]


@dataclass(frozen=True, slots=True)
class EpochTaskIds:
    """StreamsGroupCurrentMemberAssignmentValue.TaskIds: `assignment_epochs` (tag 0) pairs with
    `partitions` by index; None and () are both valid and encode differently."""

    subtopology_id: str
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = ()


@dataclass(frozen=True, slots=True)
class StreamsGroupCurrentMemberAssignmentValue:
    record_type: ClassVar[int] = STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT
    member_epoch: int
    previous_member_epoch: int
    state: int  # Kafka's streams MemberState: 1 STABLE, 2 UNREVOKED_TASKS, 3 UNRELEASED_TASKS, 127 UNKNOWN
    active_tasks: tuple[EpochTaskIds, ...]
    standby_tasks: tuple[EpochTaskIds, ...]
    warmup_tasks: tuple[EpochTaskIds, ...]
    active_tasks_pending_revocation: tuple[EpochTaskIds, ...]
    standby_tasks_pending_revocation: tuple[EpochTaskIds, ...]
    warmup_tasks_pending_revocation: tuple[EpochTaskIds, ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int  # 0: decided by the broker
    replication_factor: int  # 0: the broker's default
    topic_configs: tuple[KeyValue, ...] = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's source_topics, source_topic_regex, repartition_source_topics."""

    source_topics: tuple[int, ...]
    source_topic_regex: tuple[int, ...]
    repartition_source_topics: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    copartition_groups: tuple[CopartitionGroup, ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupTopologyValue:
    record_type: ClassVar[int] = STREAMS_GROUP_TOPOLOGY
    epoch: int
    subtopologies: tuple[Subtopology, ...]


StreamsGroupRecordKey: TypeAlias = (
    StreamsGroupMetadataKey
    | StreamsGroupPartitionMetadataKey
    | StreamsGroupMemberMetadataKey
    | StreamsGroupTargetAssignmentMetadataKey
    | StreamsGroupTargetAssignmentMemberKey
    | StreamsGroupCurrentMemberAssignmentKey
    | StreamsGroupTopologyKey
)
StreamsGroupRecordValue: TypeAlias = (
    StreamsGroupMetadataValue
    | StreamsGroupMemberMetadataValue
    | StreamsGroupTargetAssignmentMetadataValue
    | StreamsGroupTargetAssignmentMemberValue
    | StreamsGroupCurrentMemberAssignmentValue
    | StreamsGroupTopologyValue
)


# ---- encode -----------------------------------------------------------------------------------


def _count(out: bytearray, n: int) -> None:
    out += encode_uvarint(n + 1)


def _cstrs(out: bytearray, items: tuple[str, ...]) -> None:
    _count(out, len(items))
    for s in items:
        _cstr(out, s)


def _ints(out: bytearray, fmt: str, items: tuple[int, ...]) -> None:
    _count(out, len(items))
    out += struct.pack(f">{len(items)}{fmt}", *items)


def _tags(out: bytearray, fields: list[tuple[int, bytes]]) -> None:
    out += encode_uvarint(len(fields))
    for tag, data in fields:
        out += encode_uvarint(tag)
        out += encode_uvarint(len(data))
        out += data


def _key_values(out: bytearray, kvs: tuple[KeyValue, ...]) -> None:
    _count(out, len(kvs))
    for kv in kvs:
        _cstr(out, kv.key)
        _cstr(out, kv.value)
        out.append(0)


def _task_ids(out: bytearray, tasks: tuple[TaskIds, ...]) -> None:
    _count(out, len(tasks))
    for t in tasks:
        _cstr(out, t.subtopology_id)
        _ints(out, "i", t.partitions)
        out.append(0)


def _epoch_task_ids(out: bytearray, tasks: tuple[EpochTaskIds, ...]) -> None:
    _count(out, len(tasks))
    for t in tasks:
        _cstr(out, t.subtopology_id)
        _ints(out, "i", t.partitions)
        if t.assignment_epochs is None:
            _tags(out, [(0, _NULL_TAG_DATA)])
        elif t.assignment_epochs:
            data = bytearray()
            _ints(data, "i", t.assignment_epochs)
            _tags(out, [(0, bytes(data))])
        else:
            out.append(0)


def _topic_infos(out: bytearray, infos: tuple[TopicInfo, ...]) -> None:
    _count(out, len(infos))
    for info in infos:
        _cstr(out, info.name)
        out += _i32.pack(info.partitions)
        out += _i16.pack(info.replication_factor)
        _key_values(out, info.topic_configs)
        out.append(0)


def _encode_value_body(out: bytearray, value: StreamsGroupRecordValue) -> None:
    if isinstance(value, StreamsGroupMetadataValue):
        out += _i32.pack(value.epoch)
        out += _i64.pack(value.metadata_hash)
        tags: list[tuple[int, bytes]] = []
        if value.validated_topology_epoch != -1:
            tags.append((0, _i32.pack(value.validated_topology_epoch)))
        if value.last_assignment_configs is None:
            tags.append((1, _NULL_TAG_DATA))
        elif value.last_assignment_configs:
            data = bytearray()
            _key_values(data, value.last_assignment_configs)
            tags.append((1, bytes(data)))
        _tags(out, tags)
    elif isinstance(value, StreamsGroupMemberMetadataValue):
        _cstr(out, value.instance_id)
        _cstr(out, value.rack_id)
        _cstr(out, value.client_id)
        _cstr(out, value.client_host)
        out += _i32.pack(value.rebalance_timeout_ms)
        out += _i32.pack(value.topology_epoch)
        _cstr(out, value.process_id)
        if value.user_endpoint is None:
            out += _i8.pack(-1)
        else:
            out += _i8.pack(1)
            _cstr(out, value.user_endpoint.host)
            out += _u16.pack(value.user_endpoint.port)
            out.append(0)
        _key_values(out, value.client_tags)
        out.append(0)
    elif isinstance(value, StreamsGroupTargetAssignmentMetadataValue):
        out += _i32.pack(value.assignment_epoch)
        _tags(out, [(0, _i64.pack(value.assignment_timestamp))] if value.assignment_timestamp else [])
    elif isinstance(value, StreamsGroupTargetAssignmentMemberValue):
        _task_ids(out, value.active_tasks)
        _task_ids(out, value.standby_tasks)
        _task_ids(out, value.warmup_tasks)
        out.append(0)
    elif isinstance(value, StreamsGroupCurrentMemberAssignmentValue):
        out += _i32.pack(value.member_epoch)
        out += _i32.pack(value.previous_member_epoch)
        out += _i8.pack(value.state)
        for tasks in (
            value.active_tasks,
            value.standby_tasks,
            value.warmup_tasks,
            value.active_tasks_pending_revocation,
            value.standby_tasks_pending_revocation,
            value.warmup_tasks_pending_revocation,
        ):
            _epoch_task_ids(out, tasks)
        out.append(0)
    elif isinstance(value, StreamsGroupTopologyValue):
        out += _i32.pack(value.epoch)
        _count(out, len(value.subtopologies))
        for s in value.subtopologies:
            _cstr(out, s.subtopology_id)
            _cstrs(out, s.source_topics)
            _cstrs(out, s.source_topic_regex)
            _topic_infos(out, s.state_changelog_topics)
            _cstrs(out, s.repartition_sink_topics)
            _topic_infos(out, s.repartition_source_topics)
            _count(out, len(s.copartition_groups))
            for g in s.copartition_groups:
                _ints(out, "h", g.source_topics)
                _ints(out, "h", g.source_topic_regex)
                _ints(out, "h", g.repartition_source_topics)
                out.append(0)
            out.append(0)
        out.append(0)
    else:
        raise TypeError(f"not a streams group record value: {type(value).__name__}")


def encode_key(key: StreamsGroupRecordKey) -> bytes:
    """The key's bytes: int16 record type, then its strings. RecordFormatError for a string over
    32767 bytes or one that is not encodable as UTF-8."""
    out = bytearray(_i16.pack(key.record_type))
    try:
        for s in (key.group, getattr(key, "member_id", None)):
            if s is not None:
                b = _utf8(s)
                out += _i16.pack(len(b))
                out += b
    except UnicodeEncodeError as e:
        raise RecordFormatError(f"{type(key).__name__}: {e}") from None
    return bytes(out)


def encode_value(value: StreamsGroupRecordValue) -> bytes:
    """The value's bytes: int16 version 0, then its fields, as Kafka 4.3.1 writes them.
    RecordFormatError for a field out of its type's range or a string Kafka would refuse."""
    out = bytearray(_i16.pack(VALUE_VERSION))
    try:
        _encode_value_body(out, value)
    except (struct.error, UnicodeEncodeError) as e:
        raise RecordFormatError(f"{type(value).__name__}: {e}") from None
    return bytes(out)


# ---- decode -----------------------------------------------------------------------------------


def _r_str(r: Reader) -> str:
    n = r.int16()
    if n < 0:
        raise DecodeError(f"null in a key string at offset {r.pos - 2}")
    return _text(r, n)


def _r_i32s(r: Reader) -> tuple[int, ...]:
    return tuple(r.int32_list(r.compact_array_len()))


def _r_i16s(r: Reader) -> tuple[int, ...]:
    n = r.compact_array_len()
    return tuple(r.int16() for _ in range(n))


def _r_tags(r: Reader) -> dict[int, bytes]:
    return r.tagged_fields() or {}


def _tagged(data: bytes, parse: Callable[[Reader], T]) -> T:
    r = Reader(data)
    v = parse(r)
    if r.remaining():
        raise DecodeError(f"tagged field of {len(data)} bytes holds {r.pos} bytes of value")
    return v


def _r_key_value(r: Reader) -> KeyValue:
    kv = KeyValue(_r_cstr(r), _r_cstr(r))
    _r_tags(r)
    return kv


def _r_key_values(r: Reader) -> tuple[KeyValue, ...]:
    return tuple(_r_key_value(r) for _ in range(r.compact_array_len()))


def _r_nullable_key_values(r: Reader) -> tuple[KeyValue, ...] | None:
    n = r.compact_nullable_array_len()
    return None if n < 0 else tuple(_r_key_value(r) for _ in range(n))


def _r_i32(r: Reader) -> int:
    return r.int32()


def _r_metadata(r: Reader) -> StreamsGroupMetadataValue:
    epoch, metadata_hash = r.int32(), r.int64()
    tags = _r_tags(r)
    validated = _tagged(tags[0], _r_i32) if 0 in tags else -1
    configs = _tagged(tags[1], _r_nullable_key_values) if 1 in tags else ()
    return StreamsGroupMetadataValue(epoch, metadata_hash, validated, configs)


def _r_member_metadata(r: Reader) -> StreamsGroupMemberMetadataValue:
    instance_id, rack_id = _r_cnstr(r), _r_cnstr(r)
    client_id, client_host = _r_cstr(r), _r_cstr(r)
    rebalance_timeout_ms, topology_epoch = r.int32(), r.int32()
    process_id = _r_cstr(r)
    endpoint = None
    if r.int8() >= 0:
        host = _r_cstr(r)
        port = r.int16() & 0xFFFF
        _r_tags(r)
        endpoint = Endpoint(host, port)
    client_tags = _r_key_values(r)
    _r_tags(r)
    return StreamsGroupMemberMetadataValue(
        instance_id,
        rack_id,
        client_id,
        client_host,
        rebalance_timeout_ms,
        topology_epoch,
        process_id,
        endpoint,
        client_tags,
    )


def _r_target_metadata(r: Reader) -> StreamsGroupTargetAssignmentMetadataValue:
    epoch = r.int32()
    tags = _r_tags(r)
    return StreamsGroupTargetAssignmentMetadataValue(epoch, _tagged(tags[0], _r_i64) if 0 in tags else 0)


def _r_task_ids(r: Reader) -> tuple[TaskIds, ...]:
    out = []
    for _ in range(r.compact_array_len()):
        t = TaskIds(_r_cstr(r), _r_i32s(r))
        _r_tags(r)
        out.append(t)
    return tuple(out)


def _r_epoch_task_ids(r: Reader) -> tuple[EpochTaskIds, ...]:
    out = []
    for _ in range(r.compact_array_len()):
        subtopology_id, partitions = _r_cstr(r), _r_i32s(r)
        tags = _r_tags(r)
        epochs = _tagged(tags[0], _r_nullable_i32s) if 0 in tags else ()
        out.append(EpochTaskIds(subtopology_id, partitions, epochs))
    return tuple(out)


def _r_target_member(r: Reader) -> StreamsGroupTargetAssignmentMemberValue:
    value = StreamsGroupTargetAssignmentMemberValue(_r_task_ids(r), _r_task_ids(r), _r_task_ids(r))
    _r_tags(r)
    return value


def _r_current_assignment(r: Reader) -> StreamsGroupCurrentMemberAssignmentValue:
    member_epoch, previous, state = r.int32(), r.int32(), r.int8()
    lists = [_r_epoch_task_ids(r) for _ in range(6)]
    _r_tags(r)
    return StreamsGroupCurrentMemberAssignmentValue(member_epoch, previous, state, *lists)


def _r_topic_infos(r: Reader) -> tuple[TopicInfo, ...]:
    out = []
    for _ in range(r.compact_array_len()):
        info = TopicInfo(_r_cstr(r), r.int32(), r.int16(), _r_key_values(r))
        _r_tags(r)
        out.append(info)
    return tuple(out)


def _r_subtopology(r: Reader) -> Subtopology:
    subtopology_id = _r_cstr(r)
    source_topics, regex = _r_cstrs(r), _r_cstrs(r)
    changelogs = _r_topic_infos(r)
    sinks = _r_cstrs(r)
    repartition_sources = _r_topic_infos(r)
    groups = []
    for _ in range(r.compact_array_len()):
        g = CopartitionGroup(_r_i16s(r), _r_i16s(r), _r_i16s(r))
        _r_tags(r)
        groups.append(g)
    _r_tags(r)
    return Subtopology(subtopology_id, source_topics, regex, changelogs, sinks, repartition_sources, tuple(groups))


def _r_topology(r: Reader) -> StreamsGroupTopologyValue:
    epoch = r.int32()
    subtopologies = tuple(_r_subtopology(r) for _ in range(r.compact_array_len()))
    _r_tags(r)
    return StreamsGroupTopologyValue(epoch, subtopologies)


_KEYS: dict[int, tuple[type, int]] = {
    STREAMS_GROUP_METADATA: (StreamsGroupMetadataKey, 1),
    STREAMS_GROUP_PARTITION_METADATA: (StreamsGroupPartitionMetadataKey, 1),
    STREAMS_GROUP_MEMBER_METADATA: (StreamsGroupMemberMetadataKey, 2),
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA: (StreamsGroupTargetAssignmentMetadataKey, 1),
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER: (StreamsGroupTargetAssignmentMemberKey, 2),
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT: (StreamsGroupCurrentMemberAssignmentKey, 2),
    STREAMS_GROUP_TOPOLOGY: (StreamsGroupTopologyKey, 1),
}

_VALUE_READERS: dict[type, Callable[[Reader], StreamsGroupRecordValue]] = {
    StreamsGroupMetadataKey: _r_metadata,
    StreamsGroupMemberMetadataKey: _r_member_metadata,
    StreamsGroupTargetAssignmentMetadataKey: _r_target_metadata,
    StreamsGroupTargetAssignmentMemberKey: _r_target_member,
    StreamsGroupCurrentMemberAssignmentKey: _r_current_assignment,
    StreamsGroupTopologyKey: _r_topology,
}


def decode_key(data: Buffer) -> StreamsGroupRecordKey:
    """The key of a streams group record (types 17-23); RecordFormatError for any other type or
    malformed bytes."""
    try:
        r = Reader(data)
        record_type = r.int16()
        if record_type not in _KEYS:
            raise RecordFormatError(f"record type {record_type} is not a streams group record")
        cls, n = _KEYS[record_type]
        key: StreamsGroupRecordKey = cls(*(_r_str(r) for _ in range(n)))
        r.expect_end()
    except DecodeError as e:
        raise RecordFormatError(f"streams group record key: {e}") from None
    return key


def decode_value(key: StreamsGroupRecordKey, data: Buffer) -> StreamsGroupRecordValue:
    """The (non-null) value of the record with `key`. RecordFormatError for malformed bytes, a value
    version other than 0, or a StreamsGroupPartitionMetadata key (skipped, as by Kafka 4.3.1)."""
    parse = _VALUE_READERS.get(type(key))
    if parse is None:
        raise RecordFormatError(f"tidelog does not decode the value of a {type(key).__name__} record")
    what = type(key).__name__.removesuffix("Key") + "Value"
    try:
        r = Reader(data)
        version = r.int16()
        if version != VALUE_VERSION:
            raise RecordFormatError(f"{what}: unknown value version {version}")
        value = parse(r)
        r.expect_end()
    except DecodeError as e:
        raise RecordFormatError(f"{what}: {e}") from None
    return value
