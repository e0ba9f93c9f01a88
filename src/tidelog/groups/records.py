"""The record formats of `__consumer_offsets`, as Kafka writes them, and the group -> partition rule.

Every record key and value starts with an int16 version; fields use the classic (non-flexible)
encoding: string = int16 length + UTF-8 (-1 = null), bytes = int32 length + data (-1 = null),
arrays = int32 count.

    key v0, v1  OffsetCommitKey      group string, topic string, partition int32
    key v2      GroupMetadataKey     group string

    OffsetCommitValue                              GroupMetadataValue (v0-v3)
      v0  offset i64, metadata str, commit_ts i64    protocol_type str, generation i32,
      v1  offset, metadata, commit_ts,               protocol str?, leader str?,
          expire_ts i64                              current_state_timestamp i64   (v2+)
      v2  offset, metadata, commit_ts                members [member_id str, group_instance_id str? (v3+),
      v3  offset, leader_epoch i32, metadata,                 client_id str, client_host str,
          commit_ts                                           rebalance_timeout i32 (v1+),
                                                              session_timeout i32,
                                                              subscription bytes, assignment bytes]

tidelog writes key v1 with value v3 (value v1 only when a v2-v4 OffsetCommit asked for an explicit
retention time), and group metadata key v2 with value v3. It reads all of the above. A null value
is a tombstone: the offset (or the whole group) is gone. Flexible versions (value v4+, written by
Kafka 3.x+ only for new features) are refused with `RecordFormatError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_EXPIRING = 1
GROUP_METADATA_VALUE_VERSION = 3

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")


class RecordFormatError(ValueError):
    pass


# ---- keys and values -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int = -1  # only in value v1


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberValue, ...] = field(default_factory=tuple)


# ---- primitive writer / reader -------------------------------------------------------------


class _Writer:
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i16(self, v: int) -> _Writer:
        self.parts.append(_H.pack(v))
        return self

    def i32(self, v: int) -> _Writer:
        self.parts.append(_I.pack(v))
        return self

    def i64(self, v: int) -> _Writer:
        self.parts.append(_Q.pack(v))
        return self

    def string(self, s: str | None) -> _Writer:
        if s is None:
            return self.i16(-1)
        b = s.encode()
        if len(b) > 0x7FFF:
            raise RecordFormatError(f"string of {len(b)} bytes is too long")
        self.parts.append(_H.pack(len(b)) + b)
        return self

    def bytes_(self, b: bytes | None) -> _Writer:
        if b is None:
            return self.i32(-1)
        self.parts.append(_I.pack(len(b)) + bytes(b))
        return self

    def done(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    def _take(self, st: struct.Struct) -> int:
        if self.pos + st.size > len(self.buf):
            raise RecordFormatError("record truncated")
        v: int = st.unpack_from(self.buf, self.pos)[0]
        self.pos += st.size
        return v

    def i16(self) -> int:
        return self._take(_H)

    def i32(self) -> int:
        return self._take(_I)

    def i64(self) -> int:
        return self._take(_Q)

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        if self.pos + n > len(self.buf):
            raise RecordFormatError("string truncated")
        s = bytes(self.buf[self.pos : self.pos + n]).decode()
        self.pos += n
        return s

    def bytes_(self) -> bytes | None:
        n = self.i32()
        if n < 0:
            return None
        if self.pos + n > len(self.buf):
            raise RecordFormatError("bytes truncated")
        b = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return b


# ---- encode ---------------------------------------------------------------------------------


def encode_offset_key(key: OffsetKey) -> bytes:
    return _Writer().i16(OFFSET_COMMIT_KEY_VERSION).string(key.group).string(key.topic).i32(key.partition).done()


def encode_group_key(key: GroupKey) -> bytes:
    return _Writer().i16(GROUP_METADATA_KEY_VERSION).string(key.group).done()


def encode_offset_value(v: OffsetValue) -> bytes:
    w = _Writer()
    if v.expire_timestamp >= 0:
        return (
            w.i16(OFFSET_COMMIT_VALUE_VERSION_EXPIRING)
            .i64(v.offset)
            .string(v.metadata)
            .i64(v.commit_timestamp)
            .i64(v.expire_timestamp)
            .done()
        )
    return (
        w.i16(OFFSET_COMMIT_VALUE_VERSION)
        .i64(v.offset)
        .i32(v.leader_epoch)
        .string(v.metadata)
        .i64(v.commit_timestamp)
        .done()
    )


def encode_group_value(v: GroupValue) -> bytes:
    w = _Writer().i16(GROUP_METADATA_VALUE_VERSION)
    w.string(v.protocol_type).i32(v.generation).string(v.protocol).string(v.leader).i64(v.current_state_timestamp)
    w.i32(len(v.members))
    for m in v.members:
        (
            w.string(m.member_id)
            .string(m.group_instance_id)
            .string(m.client_id)
            .string(m.client_host)
            .i32(m.rebalance_timeout)
            .i32(m.session_timeout)
            .bytes_(m.subscription)
            .bytes_(m.assignment)
        )
    return w.done()


# ---- decode ---------------------------------------------------------------------------------


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    r = _Reader(data)
    version = r.i16()
    if version in (0, 1):
        group, topic, partition = r.string(), r.string(), r.i32()
        if group is None or topic is None:
            raise RecordFormatError("null group or topic in an offset commit key")
        return OffsetKey(group, topic, partition)
    if version == 2:
        group = r.string()
        if group is None:
            raise RecordFormatError("null group in a group metadata key")
        return GroupKey(group)
    raise RecordFormatError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(data: bytes) -> OffsetValue:
    r = _Reader(data)
    version = r.i16()
    if version == 0:
        return OffsetValue(r.i64(), r.string() or "", r.i64())
    if version == 1:
        return OffsetValue(r.i64(), r.string() or "", r.i64(), expire_timestamp=r.i64())
    if version == 2:
        return OffsetValue(r.i64(), r.string() or "", r.i64())
    if version == 3:
        offset, epoch = r.i64(), r.i32()
        return OffsetValue(offset, r.string() or "", r.i64(), leader_epoch=epoch)
    raise RecordFormatError(f"unsupported offset commit value version {version}")


def decode_group_value(data: bytes) -> GroupValue:
    r = _Reader(data)
    version = r.i16()
    if not 0 <= version <= 3:
        raise RecordFormatError(f"unsupported group metadata value version {version}")
    protocol_type = r.string() or ""
    generation = r.i32()
    protocol = r.string()
    leader = r.string()
    ts = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.i32()):
        member_id = r.string() or ""
        instance = r.string() if version >= 3 else None
        client_id = r.string() or ""
        client_host = r.string() or ""
        rebalance = r.i32() if version >= 1 else -1
        session = r.i32()
        if version == 0:
            rebalance = session
        subscription = r.bytes_() or b""
        assignment = r.bytes_() or b""
        members.append(
            MemberValue(member_id, client_id, client_host, rebalance, session, subscription, assignment, instance)
        )
    return GroupValue(protocol_type, generation, protocol, leader, ts, tuple(members))


# ---- partitioning ----------------------------------------------------------------------------


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, s[0]*31^(n-1) + ... in wrapping int32."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's rule: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions (abs(MIN_VALUE) = 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
