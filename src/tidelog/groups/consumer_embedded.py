"""The consumer's embedded protocol (protocol type "consumer"): the subscription a classic member
sends in JoinGroup and the assignment it gets in SyncGroup, as Kafka's ConsumerProtocol reads and
writes them. The consumer group reads them when a classic member joins it (online migration,
KIP-848) and writes an assignment for each classic member it serves or hands back to a classic
group. Sans-IO, no asyncio.

Both start with an int16 version; the body is the version's fields in the classic (non-flexible)
encoding: str = int16 length + UTF-8, [T] = int32 count + items, bytes? = int32 length (-1 null).

    ConsumerProtocolSubscription v0-3       ConsumerProtocolAssignment v0-3
      topics            [str]                 assigned_partitions [topic str, partitions [int32]]
      user_data         bytes?                user_data           bytes?
      owned_partitions  [topic str, [int32]]  (v1+)
      generation_id     int32 (v2+, -1)
      rack_id           str?  (v3+)

A version above 3 is read (and an assignment written) as version 3, Kafka's highest; a negative
one, truncation, or bad UTF-8 raises `EmbeddedFormatError` (Kafka's SchemaException).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

HIGHEST_VERSION = 3
EMPTY_ASSIGNMENT = b""  # what a classic member that never synced has (Kafka's EMPTY_ASSIGNMENT)

_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")


class EmbeddedFormatError(ValueError):
    """Malformed embedded consumer protocol bytes."""


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: tuple[tuple[str, tuple[int, ...]], ...]
    user_data: bytes | None = None


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise EmbeddedFormatError(f"buffer underflow at offset {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        v: int = _i16.unpack(self._take(2))[0]
        return v

    def i32(self) -> int:
        v: int = _i32.unpack(self._take(4))[0]
        return v

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError:
            raise EmbeddedFormatError(f"string at offset {self.pos - n} is not UTF-8") from None

    def text(self) -> str:
        s = self.string()
        if s is None:
            raise EmbeddedFormatError(f"null in a non-nullable string at offset {self.pos - 2}")
        return s

    def count(self) -> int:
        n = self.i32()
        if n < 0 or n > len(self.data) - self.pos:  # every item takes at least a byte
            raise EmbeddedFormatError(f"array count {n} at offset {self.pos - 4}")
        return n

    def nullable_bytes(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else self._take(n)

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _ in range(self.count()):
            topic = self.text()
            out.append((topic, tuple(self.i32() for _ in range(self.count()))))
        return tuple(out)


def version_of(data: bytes) -> int:
    """The version a subscription (or assignment) starts with."""
    v = _Reader(data).i16()
    if v < 0:
        raise EmbeddedFormatError(f"unsupported version {v}")
    return v


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data)
    version = min(version_of(data), HIGHEST_VERSION)
    r.pos = 2
    topics = tuple(r.text() for _ in range(r.count()))
    user_data = r.nullable_bytes()
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation, rack = -1, None
    if version >= 1:
        owned = r.topic_partitions()
    if version >= 2:
        generation = r.i32()
    if version >= 3:
        rack = r.string()
    return Subscription(version, topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes) -> Assignment:
    r = _Reader(data)
    version_of(data)
    r.pos = 2
    partitions = r.topic_partitions()
    return Assignment(partitions, r.nullable_bytes())


def encode_assignment(version: int, partitions: Iterable[tuple[str, Iterable[int]]]) -> bytes:
    """An assignment without user data at `version` (above 3: 3), topics in the given order."""
    if version < 0:
        raise EmbeddedFormatError(f"unsupported assignment version {version}")
    items = [(t, list(ps)) for t, ps in partitions]
    out = bytearray(_i16.pack(min(version, HIGHEST_VERSION)))
    out += _i32.pack(len(items))
    for topic, ps in items:
        name = topic.encode()
        out += _i16.pack(len(name)) + name
        out += _i32.pack(len(ps))
        out += struct.pack(f">{len(ps)}i", *ps)
    out += _i32.pack(-1)  # no user data
    return bytes(out)


def encode_subscription(
    topics: Iterable[str], owned: Iterable[tuple[str, Iterable[int]]] = (), version: int = 1
) -> bytes:
    """A subscription without user data (tests and tools): v0 topics only, v1 with owned partitions."""
    out = bytearray(_i16.pack(version))
    names = list(topics)
    out += _i32.pack(len(names))
    for t in names:
        b = t.encode()
        out += _i16.pack(len(b)) + b
    out += _i32.pack(-1)
    if version >= 1:
        items = [(t, list(ps)) for t, ps in owned]
        out += _i32.pack(len(items))
        for topic, ps in items:
            b = topic.encode()
            out += _i16.pack(len(b)) + b + _i32.pack(len(ps)) + struct.pack(f">{len(ps)}i", *ps)
    if version >= 2:
        out += _i32.pack(-1)
    if version >= 3:
        out += _i16.pack(-1)
    return bytes(out)
