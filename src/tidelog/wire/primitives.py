"""Kafka wire primitives, sans-IO: a `Reader` over a memoryview and a chunk-list `Writer`.

Every integer is big-endian two's complement. The variable-length forms:

    uvarint       unsigned LEB128, 7 bits a byte, low group first, high bit = "more"; at most
                  5 bytes for 32-bit values (10 for 64-bit)
    varint/long   zigzag ((n << 1) ^ (n >> 31|63)) then uvarint
    string        int16 length + UTF-8; nullable: length -1 is null
    compact str   uvarint (length + 1) + UTF-8; nullable: 0 is null (non-nullable: 0 is an error)
    bytes         int32 length + bytes; nullable: -1 is null; compact: uvarint (length + 1)
    array         int32 count + items; nullable: -1; compact: uvarint (count + 1), 0 is null
    uuid          16 raw bytes; all zeros means "no id" and reads as None
    tagged fields uvarint count, then per field: uvarint tag, uvarint size, size bytes; tags are
                  strictly increasing. An empty section is the single byte 0x00.

`Reader` never lets `IndexError`, `struct.error` or `UnicodeDecodeError` escape: truncated or
malformed input raises `DecodeError` (a `ValueError`). Byte fields are returned as zero-copy
memoryview slices of the input, so large payloads (record batches) are never copied.

`Writer` appends small fields to a bytearray and large payloads as separate chunks (`chunk()`),
so `finish()` returns a list ready for `transport.writelines` without concatenating payloads.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "DecodeError",
    "Reader",
    "Writer",
    "Chunk",
    "HotVersions",
    "pick",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT32",
    "encode_uvarint",
    "encode_varint",
    "encode_varlong",
    "encode_tagged_fields",
    "chunks_size",
]

T = TypeVar("T")
Chunk = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT32 = struct.Struct(">I")

_i8 = INT8.unpack_from
_i16 = INT16.unpack_from
_i32 = INT32.unpack_from
_i64 = INT64.unpack_from
_u32 = UINT32.unpack_from
_p8 = INT8.pack
_p16 = INT16.pack
_p32 = INT32.pack
_p64 = INT64.pack
_pu32 = UINT32.pack

_ZERO_UUID = bytes(16)
_EMPTY_TAGS = b"\x00"


class DecodeError(ValueError):
    """The bytes are truncated or are not a valid encoding of the expected message."""


def read_uvarint(buf: bytes | bytearray | memoryview, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """The protocol's unsigned varint at `pos` -> (value, next pos); the one reader the wire code
    uses (`Reader.uvarint`, request headers, the control-plane guard). Raises DecodeError when
    truncated or longer than `max_bytes`."""
    value = shift = 0
    for i in range(max_bytes):
        try:
            b = buf[pos + i]
        except IndexError:
            raise DecodeError(f"truncated varint at offset {pos + i}") from None
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + i + 1
        shift += 7
    raise DecodeError(f"varint longer than {max_bytes} bytes at offset {pos}")


# ---- variable-length integers (module functions: also used by the record codecs) ------------

_SMALL_UVARINTS = [bytes((i,)) for i in range(128)]


def encode_uvarint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _SMALL_UVARINTS[n]
    if n < 0 or n >= 1 << 64:
        raise ValueError(f"uvarint out of range: {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_varint(n: int) -> bytes:
    """Zigzag-encoded 32-bit signed integer."""
    if not -0x8000_0000 <= n <= 0x7FFF_FFFF:
        raise ValueError(f"varint out of range: {n}")
    return encode_uvarint(((n << 1) ^ (n >> 31)) & 0xFFFF_FFFF)


def encode_varlong(n: int) -> bytes:
    """Zigzag-encoded 64-bit signed integer."""
    if not -0x8000_0000_0000_0000 <= n <= 0x7FFF_FFFF_FFFF_FFFF:
        raise ValueError(f"varlong out of range: {n}")
    return encode_uvarint(((n << 1) ^ (n >> 63)) & 0xFFFF_FFFF_FFFF_FFFF)


def chunks_size(chunks: Iterable[Chunk]) -> int:
    """Total byte length of a chunk list (memoryviews are byte-formatted: len == nbytes)."""
    return sum(map(len, chunks))


# ---- reading ----------------------------------------------------------------------------------


class Reader:
    """A cursor over a byte buffer. Methods read one field and advance `pos`."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0) -> None:
        mv = data if isinstance(data, memoryview) else memoryview(data)
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B")
        self.buf = mv
        self.pos = pos
        self.end = len(mv)

    # -- bookkeeping
    def remaining(self) -> int:
        return self.end - self.pos

    def expect_end(self) -> None:
        if self.pos != self.end:
            raise DecodeError(f"{self.end - self.pos} trailing bytes at offset {self.pos}")

    def _truncated(self, what: str) -> DecodeError:
        return DecodeError(f"truncated {what} at offset {self.pos} of {self.end}")

    # -- fixed width
    def int8(self) -> int:
        v: int
        try:
            (v,) = _i8(self.buf, self.pos)
        except struct.error:
            raise self._truncated("int8") from None
        self.pos += 1
        return v

    def int16(self) -> int:
        v: int
        try:
            (v,) = _i16(self.buf, self.pos)
        except struct.error:
            raise self._truncated("int16") from None
        self.pos += 2
        return v

    def int32(self) -> int:
        v: int
        try:
            (v,) = _i32(self.buf, self.pos)
        except struct.error:
            raise self._truncated("int32") from None
        self.pos += 4
        return v

    def int64(self) -> int:
        v: int
        try:
            (v,) = _i64(self.buf, self.pos)
        except struct.error:
            raise self._truncated("int64") from None
        self.pos += 8
        return v

    def uint32(self) -> int:
        v: int
        try:
            (v,) = _u32(self.buf, self.pos)
        except struct.error:
            raise self._truncated("uint32") from None
        self.pos += 4
        return v

    def fixed(self, s: struct.Struct) -> tuple[Any, ...]:
        """Several fixed-width fields at once, with a precompiled struct (the hot-path form)."""
        try:
            v = s.unpack_from(self.buf, self.pos)
        except struct.error:
            raise self._truncated(f"fields {s.format!r}") from None
        self.pos += s.size
        return v

    def int32_list(self, n: int) -> list[int]:
        size = 4 * n
        if n < 0 or self.pos + size > self.end:
            raise self._truncated(f"{n} int32s")
        v = list(struct.unpack_from(f">{n}i", self.buf, self.pos))
        self.pos += size
        return v

    def int64_list(self, n: int) -> list[int]:
        size = 8 * n
        if n < 0 or self.pos + size > self.end:
            raise self._truncated(f"{n} int64s")
        v = list(struct.unpack_from(f">{n}q", self.buf, self.pos))
        self.pos += size
        return v

    # -- variable length integers
    def uvarint(self, max_bytes: int = 5) -> int:
        pos = self.pos
        try:
            b = self.buf[pos]
        except IndexError:
            raise self._truncated("uvarint") from None
        if b < 0x80:  # the common one-byte case without a call
            self.pos = pos + 1
            return int(b)
        value, self.pos = read_uvarint(self.buf, pos, max_bytes)
        return value

    def uvarlong(self) -> int:
        return self.uvarint(10)

    def varint(self) -> int:
        v = self.uvarint(5) & 0xFFFF_FFFF
        return (v >> 1) ^ -(v & 1)

    def varlong(self) -> int:
        v = self.uvarint(10) & 0xFFFF_FFFF_FFFF_FFFF
        return (v >> 1) ^ -(v & 1)

    # -- raw slices
    def raw(self, n: int) -> memoryview:
        pos = self.pos
        end = pos + n
        if n < 0 or end > self.end:
            raise self._truncated(f"{n} bytes")
        self.pos = end
        return self.buf[pos:end]

    def uuid(self) -> uuid.UUID | None:
        pos = self.pos
        end = pos + 16
        if end > self.end:
            raise self._truncated("uuid")
        b = self.buf[pos:end].tobytes()
        self.pos = end
        return None if b == _ZERO_UUID else uuid.UUID(bytes=b)

    def _text(self, n: int, what: str) -> str:
        pos = self.pos
        end = pos + n
        if end > self.end:
            raise self._truncated(what)
        try:
            s = str(self.buf[pos:end], "utf-8")
        except UnicodeDecodeError:
            raise DecodeError(f"{what} at offset {pos} is not UTF-8") from None
        self.pos = end
        return s

    # -- strings
    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise DecodeError(f"null in non-nullable string at offset {self.pos - 2}")
        return self._text(n, "string")

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n < 0:
            return None
        return self._text(n, "string")

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError(f"null in non-nullable compact string at offset {self.pos - 1}")
        return self._text(n, "compact string")

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        return self._text(n, "compact string")

    # -- bytes (zero-copy)
    def bytes_(self) -> memoryview:
        n = self.int32()
        if n < 0:
            raise DecodeError(f"null in non-nullable bytes at offset {self.pos - 4}")
        return self.raw(n)

    def nullable_bytes(self) -> memoryview | None:
        n = self.int32()
        if n < 0:
            return None
        return self.raw(n)

    def compact_bytes(self) -> memoryview:
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError(f"null in non-nullable compact bytes at offset {self.pos - 1}")
        return self.raw(n)

    def compact_nullable_bytes(self) -> memoryview | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        return self.raw(n)

    # -- arrays
    def _count(self, n: int) -> int:
        # Every array item takes at least one byte: a cheap guard against absurd counts.
        if n > self.end - self.pos:
            raise DecodeError(f"array count {n} exceeds the {self.end - self.pos} bytes left")
        return n

    def array_len(self) -> int:
        n = self.int32()
        if n < 0:
            raise DecodeError(f"null in non-nullable array at offset {self.pos - 4}")
        return self._count(n)

    def nullable_array_len(self) -> int:
        """The count, or -1 for null."""
        n = self.int32()
        return -1 if n < 0 else self._count(n)

    def compact_array_len(self) -> int:
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError(f"null in non-nullable compact array at offset {self.pos - 1}")
        return self._count(n)

    def compact_nullable_array_len(self) -> int:
        n = self.uvarint() - 1
        return -1 if n < 0 else self._count(n)

    def array(self, item: Callable[[Reader], T]) -> list[T]:
        return [item(self) for _ in range(self.array_len())]

    def nullable_array(self, item: Callable[[Reader], T]) -> list[T] | None:
        n = self.nullable_array_len()
        return None if n < 0 else [item(self) for _ in range(n)]

    def compact_array(self, item: Callable[[Reader], T]) -> list[T]:
        return [item(self) for _ in range(self.compact_array_len())]

    def compact_nullable_array(self, item: Callable[[Reader], T]) -> list[T] | None:
        n = self.compact_nullable_array_len()
        return None if n < 0 else [item(self) for _ in range(n)]

    # -- tagged fields
    def tagged_fields(self) -> dict[int, bytes] | None:
        """The tagged-field section: None when empty (the common case), else {tag: raw bytes}."""
        pos = self.pos
        try:
            first = self.buf[pos]
        except IndexError:
            raise self._truncated("tagged fields") from None
        if first == 0:
            self.pos = pos + 1
            return None
        count = self.uvarint()
        self._count(count)
        fields: dict[int, bytes] = {}
        last = -1
        for _ in range(count):
            tag = self.uvarint()
            if tag <= last:
                raise DecodeError(f"tagged field {tag} out of order at offset {self.pos}")
            last = tag
            fields[tag] = self.raw(self.uvarint()).tobytes()
        return fields


# ---- writing ----------------------------------------------------------------------------------


class Writer:
    """Builds a list of chunks: small fields accumulate in a bytearray, `chunk()` adds payloads
    by reference. `size` is the total encoded length so far."""

    __slots__ = ("chunks", "buf", "_flushed")

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.buf = bytearray()
        self._flushed = 0

    @property
    def size(self) -> int:
        return self._flushed + len(self.buf)

    def finish(self) -> list[Chunk]:
        """The chunks; the writer must not be used afterwards."""
        if self.buf:
            self.chunks.append(bytes(self.buf))
            self.buf = bytearray()
        return self.chunks

    def chunk(self, data: Chunk) -> None:
        """Append `data` as its own chunk, by reference (never copied)."""
        n = len(data)
        if not n:
            return
        buf = self.buf
        if buf:
            self.chunks.append(bytes(buf))
            self._flushed += len(buf)
            self.buf = bytearray()
        self.chunks.append(data)
        self._flushed += n

    def raw(self, data: Chunk) -> None:
        """Append `data` by copying it into the current buffer (for small pieces)."""
        self.buf += data

    # -- fixed width
    def int8(self, v: int) -> None:
        self.buf += _p8(v)

    def int16(self, v: int) -> None:
        self.buf += _p16(v)

    def int32(self, v: int) -> None:
        self.buf += _p32(v)

    def int64(self, v: int) -> None:
        self.buf += _p64(v)

    def uint32(self, v: int) -> None:
        self.buf += _pu32(v)

    def fixed(self, s: struct.Struct, *values: int) -> None:
        self.buf += s.pack(*values)

    def int32_list(self, values: list[int]) -> None:
        self.buf += struct.pack(f">{len(values)}i", *values)

    def int64_list(self, values: list[int]) -> None:
        self.buf += struct.pack(f">{len(values)}q", *values)

    # -- variable length integers
    def uvarint(self, v: int) -> None:
        if 0 <= v < 0x80:
            self.buf.append(v)
        else:
            self.buf += encode_uvarint(v)

    def varint(self, v: int) -> None:
        self.buf += encode_varint(v)

    def varlong(self, v: int) -> None:
        self.buf += encode_varlong(v)

    def uuid(self, v: uuid.UUID | None) -> None:
        self.buf += _ZERO_UUID if v is None else v.bytes

    # -- strings
    def string(self, s: str) -> None:
        b = s.encode()
        self.buf += _p16(len(b))
        self.buf += b

    def nullable_string(self, s: str | None) -> None:
        if s is None:
            self.buf += b"\xff\xff"
        else:
            self.string(s)

    def compact_string(self, s: str) -> None:
        b = s.encode()
        self.uvarint(len(b) + 1)
        self.buf += b

    def compact_nullable_string(self, s: str | None) -> None:
        if s is None:
            self.buf.append(0)
        else:
            self.compact_string(s)

    # -- bytes: copied when small, by reference when large
    _BY_REFERENCE = 4096

    def _payload(self, b: Chunk) -> None:
        if len(b) >= self._BY_REFERENCE:
            self.chunk(b)
        else:
            self.buf += b

    def bytes_(self, b: Chunk) -> None:
        self.buf += _p32(len(b))
        self._payload(b)

    def nullable_bytes(self, b: Chunk | None) -> None:
        if b is None:
            self.buf += b"\xff\xff\xff\xff"
        else:
            self.bytes_(b)

    def compact_bytes(self, b: Chunk) -> None:
        self.uvarint(len(b) + 1)
        self._payload(b)

    def compact_nullable_bytes(self, b: Chunk | None) -> None:
        if b is None:
            self.buf.append(0)
        else:
            self.compact_bytes(b)

    # -- array counts (items are written by the caller)
    def array_len(self, n: int) -> None:
        self.buf += _p32(n)

    def nullable_array_len(self, n: int | None) -> None:
        self.buf += _p32(-1 if n is None else n)

    def compact_array_len(self, n: int) -> None:
        self.uvarint(n + 1)

    def compact_nullable_array_len(self, n: int | None) -> None:
        self.uvarint(0 if n is None else n + 1)

    # -- tagged fields
    def tagged_fields(self, fields: dict[int, bytes] | None) -> None:
        if not fields:
            self.buf.append(0)
            return
        self.uvarint(len(fields))
        for tag in sorted(fields):
            data = fields[tag]
            self.uvarint(tag)
            self.uvarint(len(data))
            self.buf += data


def encode_tagged_fields(fields: dict[int, bytes] | None) -> bytes:
    if not fields:
        return _EMPTY_TAGS
    w = Writer()
    w.tagged_fields(fields)
    return bytes(w.buf)


@dataclass(frozen=True, slots=True)
class HotVersions:
    """The version facts of one of tidelog's own hot-path codecs (Produce, Fetch, ListOffsets)."""

    api: str
    min: int
    max: int
    first_flexible: int

    def check(self, version: int, exc: type[ValueError] = ValueError) -> bool:
        """Raise `exc` unless `version` is served; True when it is a flexible version."""
        if not self.min <= version <= self.max:
            raise exc(f"{self.api} v{version} is not supported (v{self.min}-v{self.max})")
        return version >= self.first_flexible


def pick(rw: Reader | Writer, flexible: bool, *names: str) -> tuple[Any, ...]:
    """The reader's or writer's methods `names` in a version's encoding: a flexible version's
    compact strings, bytes and arrays and its tagged fields, else the classic ones (and None for
    `tagged_fields`, which classic versions lack). Looked up once per request, not per field."""
    if flexible:
        return tuple(getattr(rw, n if n == "tagged_fields" else "compact_" + n) for n in names)
    return tuple(None if n == "tagged_fields" else getattr(rw, n) for n in names)
