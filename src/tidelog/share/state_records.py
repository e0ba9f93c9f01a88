"""The share coordinator's records of `__share_group_state` (KIP-932), in Apache Kafka 4.3.1's formats.

Each record holds the delivery state of one share-partition (a share group's view of one topic
partition). A key is an int16 record type (Kafka calls it the key version) and the key's fields in the
classic encoding; a value is an int16 value version (0 for both types) and the value's fields in the
flexible encoding:

    str        int16 length + UTF-8, at most 32767 bytes, never null
    uuid       16 raw bytes (the zero uuid is an ordinary value here)
    [T]        compact array: uvarint (count + 1) + the items (never null here)
    tags       uvarint count, then per field: uvarint tag, uvarint size, size bytes. The value and
               every StateBatch in it end with their own section.

    type key                          value v0
    0    ShareSnapshot                snapshot_epoch i32, state_epoch i32, leader_epoch i32, start_offset i64,
         group str, topic_id uuid,    create_timestamp i64, write_timestamp i64, state_batches [StateBatch],
         partition i32                tags {0: delivery_complete_count i32}
    1    ShareUpdate                  snapshot_epoch i32, leader_epoch i32, start_offset i64,
         group str, topic_id uuid,    state_batches [StateBatch], tags {0: delivery_complete_count i32}
         partition i32                  StateBatch = first_offset i64, last_offset i64, delivery_state i8,
                                                     delivery_count i16, tags

A snapshot is the share-partition's whole state; an update, the batches that changed since the
snapshot of its snapshot epoch (start_offset -1: the start offset did not change). A null value is a
tombstone: the share-partition's state is gone. Kafka writes every tombstone with a ShareSnapshot
key; a ShareUpdate tombstone is still a valid record (Kafka's serde reads it).

Both types came with Kafka 4.0 (share groups' early access). The tagged field, when Kafka added it,
and when Kafka 4.3.1 writes it:

    delivery_complete_count  4.2 (KIP-1226)  when it is not -1 (0 is written: -1 is the default).
                                             It sits between start_offset and create_timestamp in
                                             Kafka's schema, but as a tagged field it is in the tags.

tidelog writes exactly what Kafka 4.3.1 writes for the same field values, byte for byte (tests/share/
test_state_records.py checks it against Kafka's own classes): the record type as the key version,
value version 0, and the tagged field by the rule above. It writes no unknown tags. Kafka checks no
field's value (a delivery state outside 0/2/4, a last offset below the first): neither does tidelog.

Reading skips tagged fields it does not know (in the batches too). Anything else malformed raises
`RecordFormatError`, never another exception, and a forged count never allocates more than the
input's size: truncation, trailing bytes (which Kafka's reader ignores), an unknown record type or
value version, a null group (any negative length), invalid UTF-8 (which Kafka replaces), tags out of
order, or a delivery_complete_count tag whose size is not 4. Writing refuses a group over 32767 bytes
(Kafka's limit) and any field out of its type's range.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeAlias, overload

from tidelog.groups.record_fields import (
    I16 as _i16,
)
from tidelog.groups.record_fields import (
    I32 as _i32,
)
from tidelog.groups.record_fields import (
    MAX_STRING as _MAX_STRING,
)
from tidelog.groups.records import RecordFormatError
from tidelog.wire.primitives import DecodeError, Reader, encode_uvarint

__all__ = [
    "SHARE_SNAPSHOT",
    "SHARE_UPDATE",
    "RECORD_TYPES",
    "VALUE_VERSION",
    "DELIVERY_STATE_AVAILABLE",
    "DELIVERY_STATE_ACKNOWLEDGED",
    "DELIVERY_STATE_ARCHIVED",
    "ShareSnapshotKey",
    "ShareUpdateKey",
    "StateBatch",
    "ShareSnapshotValue",
    "ShareUpdateValue",
    "ShareStateRecordKey",
    "ShareStateRecordValue",
    "RecordFormatError",
    "encode_key",
    "encode_value",
    "decode_key",
    "decode_value",
]

Buffer: TypeAlias = bytes | bytearray | memoryview

# The record types (key versions) of __share_group_state.
SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
RECORD_TYPES = frozenset({SHARE_SNAPSHOT, SHARE_UPDATE})
VALUE_VERSION = 0  # the only value version of both types (Kafka 4.3.1)

# StateBatch.delivery_state: the states Kafka persists (its RecordState; "acquired", 1, is never written).
DELIVERY_STATE_AVAILABLE = 0
DELIVERY_STATE_ACKNOWLEDGED = 2
DELIVERY_STATE_ARCHIVED = 4

_NO_DELIVERY_COMPLETE_COUNT = -1  # Kafka's default, left out of the bytes

_key_tail = struct.Struct(">16si")  # topic id, partition
_snapshot_head = struct.Struct(">iiiq")  # snapshot epoch, state epoch, leader epoch, start offset
_update_head = struct.Struct(">iiq")  # snapshot epoch, leader epoch, start offset
_timestamps = struct.Struct(">qq")  # create, write
_batch = struct.Struct(">qqbh")  # first offset, last offset, delivery state, delivery count


# ---- records ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareSnapshotKey:
    record_type: ClassVar[int] = SHARE_SNAPSHOT
    group: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareUpdateKey:
    record_type: ClassVar[int] = SHARE_UPDATE
    group: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Kafka's ShareSnapshotValue.StateBatch and ShareUpdateValue.StateBatch (the same layout): the
    offsets first_offset..last_offset (inclusive) share a delivery state and count."""

    first_offset: int
    last_offset: int
    delivery_state: int  # DELIVERY_STATE_*
    delivery_count: int  # int16


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    record_type: ClassVar[int] = SHARE_SNAPSHOT
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = _NO_DELIVERY_COMPLETE_COUNT  # tag 0, Kafka 4.2+


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    record_type: ClassVar[int] = SHARE_UPDATE
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int  # -1: not updated
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = _NO_DELIVERY_COMPLETE_COUNT  # tag 0, Kafka 4.2+


ShareStateRecordKey: TypeAlias = ShareSnapshotKey | ShareUpdateKey
ShareStateRecordValue: TypeAlias = ShareSnapshotValue | ShareUpdateValue


# ---- encode -----------------------------------------------------------------------------------


def _state_batches(out: bytearray, batches: tuple[StateBatch, ...]) -> None:
    out += encode_uvarint(len(batches) + 1)
    for b in batches:
        out += _batch.pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        out.append(0)


def _delivery_complete_count_tag(out: bytearray, count: int) -> None:
    if count == _NO_DELIVERY_COMPLETE_COUNT:
        out.append(0)
    else:
        out += b"\x01\x00\x04"  # one tag: 0, size 4
        out += _i32.pack(count)


def encode_key(key: ShareStateRecordKey) -> bytes:
    """The key's bytes: int16 record type, group, topic id, partition. Raises RecordFormatError for a
    group over 32767 bytes or not encodable as UTF-8, or a partition out of the int32 range."""
    try:
        group = key.group.encode()
        if len(group) > _MAX_STRING:
            raise RecordFormatError(f"string of {len(group)} bytes is longer than {_MAX_STRING}")
        tail = _key_tail.pack(key.topic_id.bytes, key.partition)
        return _i16.pack(key.record_type) + _i16.pack(len(group)) + group + tail
    except (struct.error, UnicodeEncodeError) as e:
        raise RecordFormatError(f"{type(key).__name__}: {e}") from None


def encode_value(value: ShareStateRecordValue) -> bytes:
    """The value's bytes: int16 version 0, then its fields, as Kafka 4.3.1 writes them. Raises
    RecordFormatError for a field out of its type's range."""
    out = bytearray(_i16.pack(VALUE_VERSION))
    try:
        if isinstance(value, ShareSnapshotValue):
            out += _snapshot_head.pack(value.snapshot_epoch, value.state_epoch, value.leader_epoch, value.start_offset)
            out += _timestamps.pack(value.create_timestamp, value.write_timestamp)
        elif isinstance(value, ShareUpdateValue):
            out += _update_head.pack(value.snapshot_epoch, value.leader_epoch, value.start_offset)
        else:
            raise TypeError(f"not a share state record value: {type(value).__name__}")
        _state_batches(out, value.state_batches)
        _delivery_complete_count_tag(out, value.delivery_complete_count)
    except struct.error as e:
        raise RecordFormatError(f"{type(value).__name__}: {e}") from None
    return bytes(out)


# ---- decode -----------------------------------------------------------------------------------


def _r_tags(r: Reader) -> dict[int, bytes]:
    """A tagged-field section: {tag: data}, unknown tags included (the caller picks the known)."""
    return r.tagged_fields() or {}


def _r_delivery_complete_count(r: Reader) -> int:
    tags = _r_tags(r)
    data = tags.get(0)
    if data is None:
        return _NO_DELIVERY_COMPLETE_COUNT
    if len(data) != 4:
        raise DecodeError(f"tagged delivery_complete_count of {len(data)} bytes, not 4")
    count: int = _i32.unpack(data)[0]
    return count


def _r_state_batches(r: Reader) -> tuple[StateBatch, ...]:
    out = []
    for _ in range(r.compact_array_len()):
        out.append(StateBatch(*r.fixed(_batch)))
        _r_tags(r)
    return tuple(out)


def _r_snapshot(r: Reader) -> ShareSnapshotValue:
    snapshot_epoch, state_epoch, leader_epoch, start_offset = r.fixed(_snapshot_head)
    create_timestamp, write_timestamp = r.fixed(_timestamps)
    batches = _r_state_batches(r)
    return ShareSnapshotValue(
        snapshot_epoch,
        state_epoch,
        leader_epoch,
        start_offset,
        create_timestamp,
        write_timestamp,
        batches,
        _r_delivery_complete_count(r),
    )


def _r_update(r: Reader) -> ShareUpdateValue:
    snapshot_epoch, leader_epoch, start_offset = r.fixed(_update_head)
    batches = _r_state_batches(r)
    return ShareUpdateValue(snapshot_epoch, leader_epoch, start_offset, batches, _r_delivery_complete_count(r))


def _r_key(r: Reader) -> ShareStateRecordKey:
    record_type = r.int16()
    if record_type not in RECORD_TYPES:
        raise RecordFormatError(f"record type {record_type} is not a share state record")
    n = r.int16()
    if n < 0:
        raise DecodeError(f"null group at offset {r.pos - 2}")
    try:
        group = str(r.raw(n), "utf-8")
    except UnicodeDecodeError:
        raise DecodeError(f"group at offset {r.pos - n} is not UTF-8") from None
    topic_id, partition = r.fixed(_key_tail)
    cls = ShareSnapshotKey if record_type == SHARE_SNAPSHOT else ShareUpdateKey
    return cls(group, uuid.UUID(bytes=topic_id), partition)


_VALUE_READERS: dict[type, Callable[[Reader], ShareStateRecordValue]] = {
    ShareSnapshotKey: _r_snapshot,
    ShareUpdateKey: _r_update,
}


def decode_key(data: Buffer) -> ShareStateRecordKey:
    """The key of a `__share_group_state` record; RecordFormatError for another record type or
    malformed bytes."""
    try:
        r = Reader(data)
        key = _r_key(r)
        r.expect_end()
    except DecodeError as e:
        raise RecordFormatError(f"share state record key: {e}") from None
    return key


@overload
def decode_value(key: ShareSnapshotKey, data: Buffer) -> ShareSnapshotValue: ...
@overload
def decode_value(key: ShareUpdateKey, data: Buffer) -> ShareUpdateValue: ...
@overload
def decode_value(key: ShareStateRecordKey, data: Buffer) -> ShareStateRecordValue: ...


def decode_value(key: ShareStateRecordKey, data: Buffer) -> ShareStateRecordValue:
    """The (non-null) value of the record with `key`. RecordFormatError for malformed bytes or a value
    version other than 0."""
    parse = _VALUE_READERS.get(type(key))
    if parse is None:
        raise RecordFormatError(f"not a share state record key: {type(key).__name__}")
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
