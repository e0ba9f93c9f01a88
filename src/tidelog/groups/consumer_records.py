"""The KIP-848 consumer group records of `__consumer_offsets`, in Apache Kafka 4.3.1's formats.

A key is an int16 record type (Kafka calls it the key version) and the key's fields in the classic
encoding: str = int16 length + UTF-8 (never null). A value is an int16 value version (0 for every
type here) and the value's fields in the flexible encoding:

    cstr       compact string: uvarint (length + 1) + UTF-8, at most 32767 bytes; `cstr?` is nullable, 0 = null
    [T]        compact array: uvarint (count + 1) + the items; `[T]?` is nullable, 0 = null
    cbytes     compact bytes: uvarint (length + 1) + the bytes
    uuid       16 raw bytes (the zero uuid is an ordinary value here)
    tags       uvarint count, then per field: uvarint tag, uvarint size, size bytes. The value and
               every struct inside it (array items included) end with their own section.

    type key                                   value v0
    3    ConsumerGroupMetadata                 epoch i32, tags {0: metadata_hash i64}
         group str
    4    ConsumerGroupPartitionMetadata        (topic id/name/partition count/racks per subscribed
         group str                              topic; read by tidelog only as a key to ignore)
    5    ConsumerGroupMemberMetadata           instance_id cstr?, rack_id cstr?, client_id cstr,
         group str, member_id str              client_host cstr, subscribed_topic_names [cstr],
                                               subscribed_topic_regex cstr?, rebalance_timeout_ms i32,
                                               server_assignor cstr?, tags {0: classic_member_metadata}
                                                 classic_member_metadata = marker uvarint (0 = null,
                                                 else present), session_timeout_ms i32,
                                                 supported_protocols [name cstr, metadata cbytes, tags], tags
    6    ConsumerGroupTargetAssignmentMetadata assignment_epoch i32, tags {0: assignment_timestamp i64}
         group str
    7    ConsumerGroupTargetAssignmentMember   topic_partitions [topic_id uuid, partitions [i32], tags], tags
         group str, member_id str
    8    ConsumerGroupCurrentMemberAssignment  member_epoch i32, previous_member_epoch i32, state i8,
         group str, member_id str              assigned_partitions [TopicPartitions],
                                               partitions_pending_revocation [TopicPartitions], tags
                                                 TopicPartitions = topic_id uuid, partitions [i32],
                                                 tags {0: assignment_epochs [i32]?}
    16   ConsumerGroupRegularExpression        topics [cstr], version i64, timestamp i64, tags
         group str, regular_expression str

A null value is a tombstone: the group, member, assignment or regular expression is gone. Types 3, 5,
6, 7 and 8 came with KIP-848 (Kafka 3.7); type 16 with Kafka 4.0; type 4 was last written by 4.0 (4.1+
writes only its tombstone). The tagged fields, when Kafka added them, and when Kafka 4.3.1 writes them:

    metadata_hash          4.1 (KIP-1101)  when it is not 0
    assignment_timestamp   4.3 (KIP-1263)  when it is not 0
    classic_member_metadata  3.8           unless it equals Kafka's default struct (session timeout 0,
                                           no protocols). Null IS written, as 00 01 00 (tag 0, size 1,
                                           marker 0): Kafka writes null for every member on the consumer
                                           protocol, and reads a record without the tag as the default
                                           struct (a classic-protocol member), not as null.
    assignment_epochs      4.3             unless it is empty: null is written as 00 01 00 too, and a
                                           TopicPartitions without the tag (every one from Kafka <= 4.2)
                                           reads as an empty list. Kafka pairs epochs with partitions by
                                           index; for null it uses max(member_epoch, 0) for every
                                           partition, and likewise, logging an error, when the lengths
                                           differ (an empty list for a non-empty partition list).

tidelog writes exactly what Kafka 4.3.1 writes for the same field values, byte for byte (tests/groups/
test_consumer_records.py checks it against Kafka's own classes): the record type as the key version,
value version 0, and the tagged fields by the rules above, so `None` and `()` in
`TopicPartitions.assignment_epochs`, and `None` and `ClassicMemberMetadata(0)` in
`classic_member_metadata`, stay distinct through a write and a read. It writes no unknown tags.

Reading skips tagged fields it does not know (in nested structs too). Anything else malformed raises
`RecordFormatError`, never another exception, and a forged length or count never allocates more than
the input's size: truncation, trailing bytes (which Kafka's reader ignores), an unknown record type or
value version, null in a non-nullable field, invalid UTF-8 (which Kafka replaces), a string over 32767
bytes, tags out of order, or a known tagged field whose size disagrees with its content.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeAlias, TypeVar, overload

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
    ci32s as _ci32s,
)
from tidelog.groups.record_fields import (
    cstr as _cstr,
)
from tidelog.groups.record_fields import (
    key_str as _str,
)
from tidelog.groups.record_fields import (
    r_ci32s as _r_ci32s,
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
    r_uuid as _r_uuid,
)
from tidelog.groups.record_fields import (
    text as _text,
)
from tidelog.groups.records import RecordFormatError
from tidelog.wire.primitives import DecodeError, Reader, encode_uvarint

__all__ = [
    "CONSUMER_GROUP_METADATA",
    "CONSUMER_GROUP_PARTITION_METADATA",
    "CONSUMER_GROUP_MEMBER_METADATA",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER",
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT",
    "CONSUMER_GROUP_REGULAR_EXPRESSION",
    "RECORD_TYPES",
    "VALUE_VERSION",
    "MEMBER_STATE_STABLE",
    "MEMBER_STATE_UNREVOKED_PARTITIONS",
    "MEMBER_STATE_UNRELEASED_PARTITIONS",
    "MEMBER_STATE_UNKNOWN",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupMemberMetadataKey",
    "ClassicProtocol",
    "ClassicMemberMetadata",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "TargetTopicPartitions",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "TopicPartitions",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupRegularExpressionKey",
    "ConsumerGroupRegularExpressionValue",
    "ConsumerGroupRecordKey",
    "ConsumerGroupRecordValue",
    "RecordFormatError",
    "encode_key",
    "encode_value",
    "decode_key",
    "decode_value",
]

T = TypeVar("T")
Buffer: TypeAlias = bytes | bytearray | memoryview

# The record types (key versions) of __consumer_offsets this module reads.
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16
RECORD_TYPES = frozenset({3, 4, 5, 6, 7, 8, 16})
VALUE_VERSION = 0  # the only value version of every type here (Kafka 4.3.1)

# ConsumerGroupCurrentMemberAssignmentValue.state: Kafka's MemberState.
MEMBER_STATE_STABLE = 0
MEMBER_STATE_UNREVOKED_PARTITIONS = 1
MEMBER_STATE_UNRELEASED_PARTITIONS = 2
MEMBER_STATE_UNKNOWN = 127


# ---- keys -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    """Written by Kafka 3.7-4.0 (4.1+ only tombstones it); tidelog reads the key to skip the record."""

    record_type: ClassVar[int] = CONSUMER_GROUP_PARTITION_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_MEMBER_METADATA
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_REGULAR_EXPRESSION
    group: str
    regular_expression: str


# ---- values -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    record_type: ClassVar[int] = CONSUMER_GROUP_METADATA
    epoch: int
    metadata_hash: int = 0  # tag 0, Kafka 4.1+


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """A member that joined with the classic protocol (JoinGroup) in a consumer group. Kafka treats
    `ClassicMemberMetadata(0)` as its default: it is left out of the bytes and is what a record
    without the tag reads as."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    record_type: ClassVar[int] = CONSUMER_GROUP_MEMBER_METADATA
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None = None  # tag 0, Kafka 3.8+; None: consumer protocol


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    record_type: ClassVar[int] = CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA
    assignment_epoch: int
    assignment_timestamp: int = 0  # tag 0, Kafka 4.3+


@dataclass(frozen=True, slots=True)
class TargetTopicPartitions:
    """Kafka's ConsumerGroupTargetAssignmentMemberValue.TopicPartition: no tagged fields of its own."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    record_type: ClassVar[int] = CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER
    topic_partitions: tuple[TargetTopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """Kafka's ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions. `assignment_epochs` (tag 0,
    Kafka 4.3+) pairs with `partitions` by index; None and () are both valid and encode differently."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    record_type: ClassVar[int] = CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT
    member_epoch: int
    previous_member_epoch: int
    state: int  # MEMBER_STATE_*
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    record_type: ClassVar[int] = CONSUMER_GROUP_REGULAR_EXPRESSION
    topics: tuple[str, ...]
    version: int
    timestamp: int


ConsumerGroupRecordKey: TypeAlias = (
    ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
)
ConsumerGroupRecordValue: TypeAlias = (
    ConsumerGroupMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
)


# ---- encode -----------------------------------------------------------------------------------


def _cbytes(out: bytearray, b: bytes) -> None:
    out += encode_uvarint(len(b) + 1)
    out += b


def _cstrs(out: bytearray, items: tuple[str, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for s in items:
        _cstr(out, s)


def _tags(out: bytearray, fields: list[tuple[int, bytes]]) -> None:
    """A tagged-field section; `fields` in increasing tag order."""
    out += encode_uvarint(len(fields))
    for tag, data in fields:
        out += encode_uvarint(tag)
        out += encode_uvarint(len(data))
        out += data


def _classic_member_metadata_tag(c: ClassicMemberMetadata | None) -> list[tuple[int, bytes]]:
    if c is None:
        return [(0, _NULL_TAG_DATA)]
    if c.session_timeout_ms == 0 and not c.supported_protocols:
        return []  # Kafka's default struct
    data = bytearray(b"\x01")  # the non-null marker
    data += _i32.pack(c.session_timeout_ms)
    data += encode_uvarint(len(c.supported_protocols) + 1)
    for p in c.supported_protocols:
        _cstr(data, p.name)
        _cbytes(data, p.metadata)
        data.append(0)
    data.append(0)
    return [(0, bytes(data))]


def _topic_partitions(out: bytearray, tp: TopicPartitions) -> None:
    out += tp.topic_id.bytes
    _ci32s(out, tp.partitions)
    epochs = tp.assignment_epochs
    if epochs is None:
        _tags(out, [(0, _NULL_TAG_DATA)])
    elif epochs:
        data = bytearray()
        _ci32s(data, epochs)
        _tags(out, [(0, bytes(data))])
    else:
        out.append(0)


def _encode_value_body(out: bytearray, value: ConsumerGroupRecordValue) -> None:
    if isinstance(value, ConsumerGroupMetadataValue):
        out += _i32.pack(value.epoch)
        _tags(out, [(0, _i64.pack(value.metadata_hash))] if value.metadata_hash else [])
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        _cstr(out, value.instance_id)
        _cstr(out, value.rack_id)
        _cstr(out, value.client_id)
        _cstr(out, value.client_host)
        _cstrs(out, value.subscribed_topic_names)
        _cstr(out, value.subscribed_topic_regex)
        out += _i32.pack(value.rebalance_timeout_ms)
        _cstr(out, value.server_assignor)
        _tags(out, _classic_member_metadata_tag(value.classic_member_metadata))
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        out += _i32.pack(value.assignment_epoch)
        _tags(out, [(0, _i64.pack(value.assignment_timestamp))] if value.assignment_timestamp else [])
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        out += encode_uvarint(len(value.topic_partitions) + 1)
        for ttp in value.topic_partitions:
            out += ttp.topic_id.bytes
            _ci32s(out, ttp.partitions)
            out.append(0)
        out.append(0)
    elif isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
        out += _i32.pack(value.member_epoch)
        out += _i32.pack(value.previous_member_epoch)
        out += _i8.pack(value.state)
        for tps in (value.assigned_partitions, value.partitions_pending_revocation):
            out += encode_uvarint(len(tps) + 1)
            for tp in tps:
                _topic_partitions(out, tp)
        out.append(0)
    elif isinstance(value, ConsumerGroupRegularExpressionValue):
        _cstrs(out, value.topics)
        out += _i64.pack(value.version)
        out += _i64.pack(value.timestamp)
        out.append(0)
    else:
        raise TypeError(f"not a consumer group record value: {type(value).__name__}")


def encode_key(key: ConsumerGroupRecordKey) -> bytes:
    """The key's bytes: int16 record type, then its strings. Raises RecordFormatError for a string
    over 32767 bytes or one that is not encodable as UTF-8."""
    out = bytearray(_i16.pack(key.record_type))
    try:
        _str(out, key.group)
        if isinstance(
            key,
            ConsumerGroupMemberMetadataKey
            | ConsumerGroupTargetAssignmentMemberKey
            | ConsumerGroupCurrentMemberAssignmentKey,
        ):
            _str(out, key.member_id)
        elif isinstance(key, ConsumerGroupRegularExpressionKey):
            _str(out, key.regular_expression)
    except UnicodeEncodeError as e:
        raise RecordFormatError(f"{type(key).__name__}: {e}") from None
    return bytes(out)


def encode_value(value: ConsumerGroupRecordValue) -> bytes:
    """The value's bytes: int16 version 0, then its fields, as Kafka 4.3.1 writes them. Raises
    RecordFormatError for a field out of its type's range, a string over 32767 bytes, or a string
    that is not encodable as UTF-8."""
    out = bytearray(_i16.pack(VALUE_VERSION))
    try:
        _encode_value_body(out, value)
    except (struct.error, UnicodeEncodeError) as e:
        raise RecordFormatError(f"{type(value).__name__}: {e}") from None
    return bytes(out)


# ---- decode -----------------------------------------------------------------------------------


def _r_str(r: Reader) -> str:
    """A classic (key) string, not null."""
    n = r.int16()
    if n < 0:
        raise DecodeError(f"null in a key string at offset {r.pos - 2}")
    return _text(r, n)


def _r_cbytes(r: Reader) -> bytes:
    return r.compact_bytes().tobytes()


def _r_tags(r: Reader) -> dict[int, bytes]:
    """A tagged-field section: {tag: data}, unknown tags included (the caller picks the known)."""
    return r.tagged_fields() or {}


def _tagged(data: bytes, parse: Callable[[Reader], T]) -> T:
    """A known tagged field's value, which must fill its declared size exactly."""
    r = Reader(data)
    v = parse(r)
    if r.remaining():
        raise DecodeError(f"tagged field of {len(data)} bytes holds {r.pos} bytes of value")
    return v


def _r_classic_protocol(r: Reader) -> ClassicProtocol:
    p = ClassicProtocol(_r_cstr(r), _r_cbytes(r))
    _r_tags(r)
    return p


def _r_classic_member_metadata(r: Reader) -> ClassicMemberMetadata | None:
    if r.uvarint() == 0:  # the null marker; Kafka reads any other value as "present"
        return None
    session_timeout_ms = r.int32()
    protocols = tuple(_r_classic_protocol(r) for _ in range(r.compact_array_len()))
    _r_tags(r)
    return ClassicMemberMetadata(session_timeout_ms, protocols)


def _r_topic_partitions(r: Reader) -> TopicPartitions:
    topic_id = _r_uuid(r)
    partitions = _r_ci32s(r)
    tags = _r_tags(r)
    epochs = _tagged(tags[0], _r_nullable_i32s) if 0 in tags else ()
    return TopicPartitions(topic_id, partitions, epochs)


def _r_target_topic_partitions(r: Reader) -> TargetTopicPartitions:
    topic_id = _r_uuid(r)
    partitions = _r_ci32s(r)
    _r_tags(r)
    return TargetTopicPartitions(topic_id, partitions)


def _r_metadata(r: Reader) -> ConsumerGroupMetadataValue:
    epoch = r.int32()
    tags = _r_tags(r)
    return ConsumerGroupMetadataValue(epoch, _tagged(tags[0], _r_i64) if 0 in tags else 0)


def _r_member_metadata(r: Reader) -> ConsumerGroupMemberMetadataValue:
    instance_id = _r_cnstr(r)
    rack_id = _r_cnstr(r)
    client_id = _r_cstr(r)
    client_host = _r_cstr(r)
    topics = _r_cstrs(r)
    regex = _r_cnstr(r)
    rebalance_timeout_ms = r.int32()
    server_assignor = _r_cnstr(r)
    tags = _r_tags(r)
    classic = _tagged(tags[0], _r_classic_member_metadata) if 0 in tags else ClassicMemberMetadata(0)
    return ConsumerGroupMemberMetadataValue(
        instance_id, rack_id, client_id, client_host, topics, regex, rebalance_timeout_ms, server_assignor, classic
    )


def _r_target_metadata(r: Reader) -> ConsumerGroupTargetAssignmentMetadataValue:
    epoch = r.int32()
    tags = _r_tags(r)
    return ConsumerGroupTargetAssignmentMetadataValue(epoch, _tagged(tags[0], _r_i64) if 0 in tags else 0)


def _r_target_member(r: Reader) -> ConsumerGroupTargetAssignmentMemberValue:
    tps = tuple(_r_target_topic_partitions(r) for _ in range(r.compact_array_len()))
    _r_tags(r)
    return ConsumerGroupTargetAssignmentMemberValue(tps)


def _r_current_assignment(r: Reader) -> ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch = r.int32()
    previous_member_epoch = r.int32()
    state = r.int8()
    assigned = tuple(_r_topic_partitions(r) for _ in range(r.compact_array_len()))
    pending = tuple(_r_topic_partitions(r) for _ in range(r.compact_array_len()))
    _r_tags(r)
    return ConsumerGroupCurrentMemberAssignmentValue(member_epoch, previous_member_epoch, state, assigned, pending)


def _r_regex(r: Reader) -> ConsumerGroupRegularExpressionValue:
    topics = _r_cstrs(r)
    version = r.int64()
    timestamp = r.int64()
    _r_tags(r)
    return ConsumerGroupRegularExpressionValue(topics, version, timestamp)


def _r_key(r: Reader) -> ConsumerGroupRecordKey:
    record_type = r.int16()
    if record_type == CONSUMER_GROUP_METADATA:
        return ConsumerGroupMetadataKey(_r_str(r))
    if record_type == CONSUMER_GROUP_PARTITION_METADATA:
        return ConsumerGroupPartitionMetadataKey(_r_str(r))
    if record_type == CONSUMER_GROUP_MEMBER_METADATA:
        return ConsumerGroupMemberMetadataKey(_r_str(r), _r_str(r))
    if record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        return ConsumerGroupTargetAssignmentMetadataKey(_r_str(r))
    if record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        return ConsumerGroupTargetAssignmentMemberKey(_r_str(r), _r_str(r))
    if record_type == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        return ConsumerGroupCurrentMemberAssignmentKey(_r_str(r), _r_str(r))
    if record_type == CONSUMER_GROUP_REGULAR_EXPRESSION:
        return ConsumerGroupRegularExpressionKey(_r_str(r), _r_str(r))
    raise RecordFormatError(f"record type {record_type} is not a consumer group record")


_VALUE_READERS: dict[type, Callable[[Reader], ConsumerGroupRecordValue]] = {
    ConsumerGroupMetadataKey: _r_metadata,
    ConsumerGroupMemberMetadataKey: _r_member_metadata,
    ConsumerGroupTargetAssignmentMetadataKey: _r_target_metadata,
    ConsumerGroupTargetAssignmentMemberKey: _r_target_member,
    ConsumerGroupCurrentMemberAssignmentKey: _r_current_assignment,
    ConsumerGroupRegularExpressionKey: _r_regex,
}


def decode_key(data: Buffer) -> ConsumerGroupRecordKey:
    """The key of a consumer group record (types 3-8 and 16); RecordFormatError for any other type
    (the classic records' keys 0-2 are `records.decode_key`'s) or malformed bytes."""
    try:
        r = Reader(data)
        key = _r_key(r)
        r.expect_end()
    except DecodeError as e:
        raise RecordFormatError(f"consumer group record key: {e}") from None
    return key


@overload
def decode_value(key: ConsumerGroupMetadataKey, data: Buffer) -> ConsumerGroupMetadataValue: ...
@overload
def decode_value(key: ConsumerGroupMemberMetadataKey, data: Buffer) -> ConsumerGroupMemberMetadataValue: ...
@overload
def decode_value(
    key: ConsumerGroupTargetAssignmentMetadataKey, data: Buffer
) -> ConsumerGroupTargetAssignmentMetadataValue: ...
@overload
def decode_value(
    key: ConsumerGroupTargetAssignmentMemberKey, data: Buffer
) -> ConsumerGroupTargetAssignmentMemberValue: ...
@overload
def decode_value(
    key: ConsumerGroupCurrentMemberAssignmentKey, data: Buffer
) -> ConsumerGroupCurrentMemberAssignmentValue: ...
@overload
def decode_value(key: ConsumerGroupRegularExpressionKey, data: Buffer) -> ConsumerGroupRegularExpressionValue: ...
@overload
def decode_value(key: ConsumerGroupRecordKey, data: Buffer) -> ConsumerGroupRecordValue: ...


def decode_value(key: ConsumerGroupRecordKey, data: Buffer) -> ConsumerGroupRecordValue:
    """The (non-null) value of the record with `key`. RecordFormatError for malformed bytes, a value
    version other than 0, or a ConsumerGroupPartitionMetadata key (tidelog skips those records)."""
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
