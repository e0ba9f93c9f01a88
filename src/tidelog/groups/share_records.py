"""The share group (KIP-932) records of `__consumer_offsets`, in Apache Kafka 4.3.1's formats.

A key is an int16 record type (Kafka calls it the key version) and the key's fields in the classic
encoding: str = int16 length + UTF-8 (never null). A value is an int16 value version (0 for every
type here) and the value's fields in the flexible encoding, as in `consumer_records`:

    cstr       compact string: uvarint (length + 1) + UTF-8, at most 32767 bytes; `cstr?` is nullable, 0 = null
    [T]        compact array: uvarint (count + 1) + the items (never null here)
    uuid       16 raw bytes (the zero uuid is an ordinary value here)
    tags       uvarint count, then per field: uvarint tag, uvarint size, size bytes. The value and
               every struct inside it (array items included) end with their own section.

    type key                                  value v0
    9    ShareGroupPartitionMetadata          (Kafka 4.0 only: topic id/name/partition count/racks per
         group str                             subscribed topic; read by tidelog only as a key to ignore)
    10   ShareGroupMemberMetadata             rack_id cstr?, client_id cstr, client_host cstr,
         group str, member_id str             subscribed_topic_names [cstr], tags
    11   ShareGroupMetadata                   epoch i32, metadata_hash i64, tags
         group str
    12   ShareGroupTargetAssignmentMetadata   assignment_epoch i32, tags {0: assignment_timestamp i64}
         group str
    13   ShareGroupTargetAssignmentMember     topic_partitions [TopicPartitions], tags
         group str, member_id str
    14   ShareGroupCurrentMemberAssignment    member_epoch i32, previous_member_epoch i32, state i8,
         group str, member_id str             assigned_partitions [TopicPartitions], tags
                                                TopicPartitions = topic_id uuid, partitions [i32], tags
    15   ShareGroupStatePartitionMetadata     initializing_topics [TopicPartitionsInfo],
         group str                            initialized_topics [TopicPartitionsInfo],
                                              deleting_topics [TopicInfo], tags
                                                TopicPartitionsInfo = topic_id uuid, topic_name cstr,
                                                                      partitions [i32], tags
                                                TopicInfo = topic_id uuid, topic_name cstr, tags

The member record's type (10) is below the group's (11), the reverse of the consumer group records.
A null value is a tombstone: the member, group, assignment or share-partition state metadata is gone.

Kafka 4.0 (share groups' early access) was the first to write types 9-15, and it wrote 11 and 15 in
an older layout under the same value version 0: ShareGroupMetadataValue without metadata_hash, and
ShareGroupStatePartitionMetadataValue without initializing_topics. Kafka 4.1 (share groups' preview)
changed both in place: metadata_hash (KIP-1101) and initializing_topics are ordinary fields, not
tagged ones, so metadata_hash is written even when it is 0, and a 4.0 record of either type is
refused by Kafka 4.1+ (its loader fails on it) and by tidelog (RecordFormatError: the old bytes run
out, or end where the new layout has a non-nullable array). Kafka 4.1 also dropped type 9: 4.3.1 has
no class for it, its serde refuses the key as an unknown record type, and its loader skips such
records. tidelog decodes the key of type 9, so that a reader can skip the record too, and refuses its
value (whose layout changed between 3.9 and 4.0).

The one tagged field, when Kafka added it, and when Kafka 4.3.1 writes it:

    assignment_timestamp   4.3 (KIP-1263)  when it is not 0

tidelog writes exactly what Kafka 4.3.1 writes for the same field values, byte for byte (tests/groups/
test_share_records.py checks it against Kafka's own classes): the record type as the key version,
value version 0, and the tagged field by the rule above. It writes no unknown tags. Kafka's rack id
default is "" rather than null; both are ordinary values and stay distinct through a write and a read.

The two topic-partition structs of types 13 and 14 have the layout of the consumer group target
assignment's, so both are `consumer_records.TargetTopicPartitions` here (re-exported).

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

from tidelog.groups.consumer_records import VALUE_VERSION, TargetTopicPartitions
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
    r_i64 as _r_i64,
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
    "SHARE_GROUP_PARTITION_METADATA",
    "SHARE_GROUP_MEMBER_METADATA",
    "SHARE_GROUP_METADATA",
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA",
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER",
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT",
    "SHARE_GROUP_STATE_PARTITION_METADATA",
    "RECORD_TYPES",
    "VALUE_VERSION",
    "ShareGroupPartitionMetadataKey",
    "ShareGroupMemberMetadataKey",
    "ShareGroupMemberMetadataValue",
    "ShareGroupMetadataKey",
    "ShareGroupMetadataValue",
    "ShareGroupTargetAssignmentMetadataKey",
    "ShareGroupTargetAssignmentMetadataValue",
    "ShareGroupTargetAssignmentMemberKey",
    "TargetTopicPartitions",
    "ShareGroupTargetAssignmentMemberValue",
    "ShareGroupCurrentMemberAssignmentKey",
    "ShareGroupCurrentMemberAssignmentValue",
    "ShareGroupStatePartitionMetadataKey",
    "TopicPartitionsInfo",
    "TopicInfo",
    "ShareGroupStatePartitionMetadataValue",
    "ShareGroupRecordKey",
    "ShareGroupRecordValue",
    "RecordFormatError",
    "encode_key",
    "encode_value",
    "decode_key",
    "decode_value",
]

T = TypeVar("T")
Buffer: TypeAlias = bytes | bytearray | memoryview

# The record types (key versions) of __consumer_offsets this module reads.
SHARE_GROUP_PARTITION_METADATA = 9  # Kafka 4.0 only
SHARE_GROUP_MEMBER_METADATA = 10
SHARE_GROUP_METADATA = 11
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
SHARE_GROUP_STATE_PARTITION_METADATA = 15
RECORD_TYPES = frozenset({9, 10, 11, 12, 13, 14, 15})


# ---- keys -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupPartitionMetadataKey:
    """Written by Kafka 4.0 only (4.1+ neither writes nor knows it); tidelog reads the key to skip the record."""

    record_type: ClassVar[int] = SHARE_GROUP_PARTITION_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataKey:
    record_type: ClassVar[int] = SHARE_GROUP_MEMBER_METADATA
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataKey:
    record_type: ClassVar[int] = SHARE_GROUP_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataKey:
    record_type: ClassVar[int] = SHARE_GROUP_TARGET_ASSIGNMENT_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberKey:
    record_type: ClassVar[int] = SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentKey:
    record_type: ClassVar[int] = SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataKey:
    record_type: ClassVar[int] = SHARE_GROUP_STATE_PARTITION_METADATA
    group: str


# ---- values -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataValue:
    record_type: ClassVar[int] = SHARE_GROUP_MEMBER_METADATA
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataValue:
    record_type: ClassVar[int] = SHARE_GROUP_METADATA
    epoch: int
    metadata_hash: int = 0  # an ordinary field (Kafka 4.1+), not a tagged one: always written


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataValue:
    record_type: ClassVar[int] = SHARE_GROUP_TARGET_ASSIGNMENT_METADATA
    assignment_epoch: int
    assignment_timestamp: int = 0  # tag 0, Kafka 4.3+


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberValue:
    record_type: ClassVar[int] = SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER
    topic_partitions: tuple[TargetTopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    record_type: ClassVar[int] = SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT
    member_epoch: int
    previous_member_epoch: int
    state: int  # consumer_records.MEMBER_STATE_* (Kafka's MemberState; a share group member is always stable)
    assigned_partitions: tuple[TargetTopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class TopicPartitionsInfo:
    """Kafka's ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo."""

    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """Kafka's ShareGroupStatePartitionMetadataValue.TopicInfo."""

    topic_id: uuid.UUID
    topic_name: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataValue:
    """The share-partitions whose state (in `__share_group_state`) is being initialized, is initialized,
    or is being deleted."""

    record_type: ClassVar[int] = SHARE_GROUP_STATE_PARTITION_METADATA
    initializing_topics: tuple[TopicPartitionsInfo, ...]
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[TopicInfo, ...]


ShareGroupRecordKey: TypeAlias = (
    ShareGroupPartitionMetadataKey
    | ShareGroupMemberMetadataKey
    | ShareGroupMetadataKey
    | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
)
ShareGroupRecordValue: TypeAlias = (
    ShareGroupMemberMetadataValue
    | ShareGroupMetadataValue
    | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue
)


# ---- encode -----------------------------------------------------------------------------------


def _cstrs(out: bytearray, items: tuple[str, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for s in items:
        _cstr(out, s)


def _topic_partitions(out: bytearray, tps: tuple[TargetTopicPartitions, ...]) -> None:
    out += encode_uvarint(len(tps) + 1)
    for tp in tps:
        out += tp.topic_id.bytes
        _ci32s(out, tp.partitions)
        out.append(0)


def _encode_value_body(out: bytearray, value: ShareGroupRecordValue) -> None:
    if isinstance(value, ShareGroupMemberMetadataValue):
        _cstr(out, value.rack_id)
        _cstr(out, value.client_id)
        _cstr(out, value.client_host)
        _cstrs(out, value.subscribed_topic_names)
        out.append(0)
    elif isinstance(value, ShareGroupMetadataValue):
        out += _i32.pack(value.epoch)
        out += _i64.pack(value.metadata_hash)
        out.append(0)
    elif isinstance(value, ShareGroupTargetAssignmentMetadataValue):
        out += _i32.pack(value.assignment_epoch)
        if value.assignment_timestamp:
            out += b"\x01\x00\x08"  # one tag: 0, size 8
            out += _i64.pack(value.assignment_timestamp)
        else:
            out.append(0)
    elif isinstance(value, ShareGroupTargetAssignmentMemberValue):
        _topic_partitions(out, value.topic_partitions)
        out.append(0)
    elif isinstance(value, ShareGroupCurrentMemberAssignmentValue):
        out += _i32.pack(value.member_epoch)
        out += _i32.pack(value.previous_member_epoch)
        out += _i8.pack(value.state)
        _topic_partitions(out, value.assigned_partitions)
        out.append(0)
    elif isinstance(value, ShareGroupStatePartitionMetadataValue):
        for infos in (value.initializing_topics, value.initialized_topics):
            out += encode_uvarint(len(infos) + 1)
            for info in infos:
                out += info.topic_id.bytes
                _cstr(out, info.topic_name)
                _ci32s(out, info.partitions)
                out.append(0)
        out += encode_uvarint(len(value.deleting_topics) + 1)
        for topic in value.deleting_topics:
            out += topic.topic_id.bytes
            _cstr(out, topic.topic_name)
            out.append(0)
        out.append(0)
    else:
        raise TypeError(f"not a share group record value: {type(value).__name__}")


def encode_key(key: ShareGroupRecordKey) -> bytes:
    """The key's bytes: int16 record type, then its strings. Raises RecordFormatError for a string
    over 32767 bytes or one that is not encodable as UTF-8."""
    out = bytearray(_i16.pack(key.record_type))
    try:
        _str(out, key.group)
        if isinstance(
            key,
            ShareGroupMemberMetadataKey | ShareGroupTargetAssignmentMemberKey | ShareGroupCurrentMemberAssignmentKey,
        ):
            _str(out, key.member_id)
    except UnicodeEncodeError as e:
        raise RecordFormatError(f"{type(key).__name__}: {e}") from None
    return bytes(out)


def encode_value(value: ShareGroupRecordValue) -> bytes:
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


def _r_topic_partitions(r: Reader) -> tuple[TargetTopicPartitions, ...]:
    out = []
    for _ in range(r.compact_array_len()):
        topic_id = _r_uuid(r)
        partitions = _r_ci32s(r)
        _r_tags(r)
        out.append(TargetTopicPartitions(topic_id, partitions))
    return tuple(out)


def _r_topic_partitions_info(r: Reader) -> TopicPartitionsInfo:
    info = TopicPartitionsInfo(_r_uuid(r), _r_cstr(r), _r_ci32s(r))
    _r_tags(r)
    return info


def _r_topic_info(r: Reader) -> TopicInfo:
    info = TopicInfo(_r_uuid(r), _r_cstr(r))
    _r_tags(r)
    return info


def _r_member_metadata(r: Reader) -> ShareGroupMemberMetadataValue:
    rack_id = _r_cnstr(r)
    client_id = _r_cstr(r)
    client_host = _r_cstr(r)
    topics = tuple(_r_cstr(r) for _ in range(r.compact_array_len()))
    _r_tags(r)
    return ShareGroupMemberMetadataValue(rack_id, client_id, client_host, topics)


def _r_metadata(r: Reader) -> ShareGroupMetadataValue:
    epoch = r.int32()
    metadata_hash = r.int64()
    _r_tags(r)
    return ShareGroupMetadataValue(epoch, metadata_hash)


def _r_target_metadata(r: Reader) -> ShareGroupTargetAssignmentMetadataValue:
    epoch = r.int32()
    tags = _r_tags(r)
    return ShareGroupTargetAssignmentMetadataValue(epoch, _tagged(tags[0], _r_i64) if 0 in tags else 0)


def _r_target_member(r: Reader) -> ShareGroupTargetAssignmentMemberValue:
    tps = _r_topic_partitions(r)
    _r_tags(r)
    return ShareGroupTargetAssignmentMemberValue(tps)


def _r_current_assignment(r: Reader) -> ShareGroupCurrentMemberAssignmentValue:
    member_epoch = r.int32()
    previous_member_epoch = r.int32()
    state = r.int8()
    assigned = _r_topic_partitions(r)
    _r_tags(r)
    return ShareGroupCurrentMemberAssignmentValue(member_epoch, previous_member_epoch, state, assigned)


def _r_state_partition_metadata(r: Reader) -> ShareGroupStatePartitionMetadataValue:
    initializing = tuple(_r_topic_partitions_info(r) for _ in range(r.compact_array_len()))
    initialized = tuple(_r_topic_partitions_info(r) for _ in range(r.compact_array_len()))
    deleting = tuple(_r_topic_info(r) for _ in range(r.compact_array_len()))
    _r_tags(r)
    return ShareGroupStatePartitionMetadataValue(initializing, initialized, deleting)


def _r_key(r: Reader) -> ShareGroupRecordKey:
    record_type = r.int16()
    if record_type == SHARE_GROUP_PARTITION_METADATA:
        return ShareGroupPartitionMetadataKey(_r_str(r))
    if record_type == SHARE_GROUP_MEMBER_METADATA:
        return ShareGroupMemberMetadataKey(_r_str(r), _r_str(r))
    if record_type == SHARE_GROUP_METADATA:
        return ShareGroupMetadataKey(_r_str(r))
    if record_type == SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
        return ShareGroupTargetAssignmentMetadataKey(_r_str(r))
    if record_type == SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
        return ShareGroupTargetAssignmentMemberKey(_r_str(r), _r_str(r))
    if record_type == SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        return ShareGroupCurrentMemberAssignmentKey(_r_str(r), _r_str(r))
    if record_type == SHARE_GROUP_STATE_PARTITION_METADATA:
        return ShareGroupStatePartitionMetadataKey(_r_str(r))
    raise RecordFormatError(f"record type {record_type} is not a share group record")


_VALUE_READERS: dict[type, Callable[[Reader], ShareGroupRecordValue]] = {
    ShareGroupMemberMetadataKey: _r_member_metadata,
    ShareGroupMetadataKey: _r_metadata,
    ShareGroupTargetAssignmentMetadataKey: _r_target_metadata,
    ShareGroupTargetAssignmentMemberKey: _r_target_member,
    ShareGroupCurrentMemberAssignmentKey: _r_current_assignment,
    ShareGroupStatePartitionMetadataKey: _r_state_partition_metadata,
}


def decode_key(data: Buffer) -> ShareGroupRecordKey:
    """The key of a share group record (types 9-15); RecordFormatError for any other type (the
    consumer groups' are `consumer_records.decode_key`'s, the classic records' `records.decode_key`'s)
    or malformed bytes."""
    try:
        r = Reader(data)
        key = _r_key(r)
        r.expect_end()
    except DecodeError as e:
        raise RecordFormatError(f"share group record key: {e}") from None
    return key


@overload
def decode_value(key: ShareGroupMemberMetadataKey, data: Buffer) -> ShareGroupMemberMetadataValue: ...
@overload
def decode_value(key: ShareGroupMetadataKey, data: Buffer) -> ShareGroupMetadataValue: ...
@overload
def decode_value(
    key: ShareGroupTargetAssignmentMetadataKey, data: Buffer
) -> ShareGroupTargetAssignmentMetadataValue: ...
@overload
def decode_value(key: ShareGroupTargetAssignmentMemberKey, data: Buffer) -> ShareGroupTargetAssignmentMemberValue: ...
@overload
def decode_value(key: ShareGroupCurrentMemberAssignmentKey, data: Buffer) -> ShareGroupCurrentMemberAssignmentValue: ...
@overload
def decode_value(key: ShareGroupStatePartitionMetadataKey, data: Buffer) -> ShareGroupStatePartitionMetadataValue: ...
@overload
def decode_value(key: ShareGroupRecordKey, data: Buffer) -> ShareGroupRecordValue: ...


def decode_value(key: ShareGroupRecordKey, data: Buffer) -> ShareGroupRecordValue:
    """The (non-null) value of the record with `key`. RecordFormatError for malformed bytes, a value
    version other than 0, or a ShareGroupPartitionMetadata key (tidelog skips those records)."""
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
