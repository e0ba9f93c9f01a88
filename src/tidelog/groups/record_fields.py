"""The field codecs the coordinators' record formats share (`consumer_records`, `share_records`,
`streams_records`, `share.state_records`): Kafka's generated serializers write keys with classic
strings (int16 length) and values with compact ones (uvarint length + 1, 0 for null), compact
int32 arrays, UUIDs as 16 bytes. Writers raise `RecordFormatError` for a string over 32767 bytes
(Kafka's limit); readers raise `DecodeError` for a string over it, one that is not UTF-8, or a
null where the field allows none."""

from __future__ import annotations

import struct
import uuid

from tidelog.groups.records import RecordFormatError
from tidelog.wire.primitives import DecodeError, Reader, encode_uvarint

MAX_STRING = 0x7FFF
NULL_TAG_DATA = b"\x00"  # an empty tagged-field section

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")


# ---- writing ------------------------------------------------------------------------------------
def utf8(s: str) -> bytes:
    b = s.encode()
    if len(b) > MAX_STRING:
        raise RecordFormatError(f"string of {len(b)} bytes is longer than {MAX_STRING}")
    return b


def key_str(out: bytearray, s: str) -> None:
    """A classic (key) string."""
    b = utf8(s)
    out += I16.pack(len(b))
    out += b


def cstr(out: bytearray, s: str | None) -> None:
    """A compact string (None: null)."""
    if s is None:
        out.append(0)
        return
    b = utf8(s)
    out += encode_uvarint(len(b) + 1)
    out += b


def ci32s(out: bytearray, items: tuple[int, ...]) -> None:
    """A compact array of int32."""
    out += encode_uvarint(len(items) + 1)
    out += struct.pack(f">{len(items)}i", *items)


# ---- reading ------------------------------------------------------------------------------------
def text(r: Reader, n: int) -> str:
    """`n` bytes of UTF-8."""
    if n > MAX_STRING:
        raise DecodeError(f"string of {n} bytes is longer than {MAX_STRING}")
    try:
        return str(r.raw(n), "utf-8")
    except UnicodeDecodeError:
        raise DecodeError(f"string at offset {r.pos - n} is not UTF-8") from None


def r_cstr(r: Reader) -> str:
    n = r.uvarint() - 1
    if n < 0:
        raise DecodeError(f"null in a non-nullable string at offset {r.pos - 1}")
    return text(r, n)


def r_cnstr(r: Reader) -> str | None:
    n = r.uvarint() - 1
    return None if n < 0 else text(r, n)


def r_cstrs(r: Reader) -> tuple[str, ...]:
    return tuple(r_cstr(r) for _ in range(r.compact_array_len()))


def r_ci32s(r: Reader) -> tuple[int, ...]:
    return tuple(r.int32_list(r.compact_array_len()))


def r_nullable_i32s(r: Reader) -> tuple[int, ...] | None:
    n = r.compact_nullable_array_len()
    return None if n < 0 else tuple(r.int32_list(n))


def r_uuid(r: Reader) -> uuid.UUID:
    return uuid.UUID(bytes=r.raw(16).tobytes())


def r_i64(r: Reader) -> int:
    return r.int64()
