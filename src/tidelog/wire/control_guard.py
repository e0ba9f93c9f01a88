"""A pre-flight walk over a control-plane request body that rejects forged array counts.

Why: kio's native reader allocates an array's storage from the count on the wire before reading
any item. A 70-byte CreateTopics v7 whose compact array count is 0xFFFFFFFF makes it request
hundreds of GiB; the allocation fails inside the extension, which aborts the whole broker
process (SIGABRT) instead of raising. So before kio sees a body, `check_body(cls, buf, offset)`
walks the same schema (kio's dataclasses, flexible or not, tagged fields included) and raises
`GuardError` when an array announces more items than there are bytes left (every item takes at
least one byte), when an array or string the schema does not allow to be null is null (kio reads
it as None and handlers would then fail on it; Kafka rejects such a request too), or when the
body is truncated. It allocates nothing in proportion to any count.

Format rules (Kafka's, as kio implements them): fixed-width integers; strings int16-length
(compact: uvarint length+1), bytes/records int32-length (compact: uvarint length+1), -1/0 for
null; arrays int32 count (compact: uvarint count+1); a nullable struct is prefixed by an int8
marker (-1 null); a flexible struct ends with a tagged-field section (uvarint count, then uvarint
tag, uvarint size, size bytes), whose known tags are walked within their size.
"""

from __future__ import annotations

import struct
from dataclasses import Field, fields, is_dataclass
from functools import cache
from types import NoneType, UnionType
from typing import Any, get_args, get_origin

from .primitives import DecodeError, read_uvarint

__all__ = ["GuardError", "check_body"]

_FIXED = {
    "int8": 1,
    "bool": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from


class GuardError(ValueError):
    pass


class _Cursor:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int, end: int) -> None:
        self.buf, self.pos, self.end = buf, pos, end

    def take(self, n: int) -> int:
        if n < 0 or self.pos + n > self.end:
            raise GuardError(f"truncated at byte {self.pos}: {n} more bytes announced, {self.end - self.pos} left")
        p = self.pos
        self.pos += n
        return p

    def uvarint(self) -> int:
        try:
            value, pos = read_uvarint(self.buf, self.pos, 10)
        except DecodeError as e:
            raise GuardError(str(e)) from None
        if pos > self.end:
            raise GuardError(f"truncated at byte {self.pos}: a varint runs past the body")
        self.pos = pos
        return value

    def count(self, n: int) -> None:
        if n > self.end - self.pos:
            raise GuardError(f"array of {n} items announced with {self.end - self.pos} bytes left")


_Entry = tuple[str, "str | None", bool, "type | None"]  # (kind, kafka type, optional, item type)


def _strip_none(t: Any) -> tuple[Any, bool]:
    """(the type inside `X | None`, whether None was there); kio's schemas use no other unions."""
    if get_origin(t) is UnionType:
        args = [a for a in get_args(t) if a is not NoneType]
        if len(args) != 1:
            raise TypeError(f"unsupported union {t} in a schema")
        return args[0], True
    return t, False


def _classify(f: Field[Any]) -> tuple[str, type | None, bool]:
    """(kind, item type, optional) of a schema field from its annotation, as kio reads it: a
    dataclass is a struct, `tuple[X, ...]` an array (of structs when X is a dataclass); optional
    when the field - or, for an array, its item type - admits None."""
    t, optional = _strip_none(f.type)
    if get_origin(t) is tuple:
        item, _ = _strip_none(get_args(t)[0])
        if get_origin(f.type) is tuple:
            optional = _strip_none(get_args(f.type)[0])[1]
        return ("entity_array" if is_dataclass(item) else "array"), item, optional
    return ("entity" if is_dataclass(t) else "value"), t, optional


@cache
def _plan(cls: type) -> tuple[list[_Entry], dict[int, _Entry]]:
    """(untagged fields, {tag: field}) of a schema class, each as (kind, kafka_type, optional, item)."""
    plain: list[_Entry] = []
    tagged: dict[int, _Entry] = {}
    for f in fields(cls):
        kind, item, declared_optional = _classify(f)
        kafka_type = f.metadata.get("kafka_type")
        tag = f.metadata.get("tag")
        # Tagged fields are optional by their presence; be lenient about nulls inside them
        # (except a struct, whose encoding has no null marker there).
        optional = (kind != "entity") if tag is not None else declared_optional
        entry: _Entry
        if kind in ("entity_array", "entity"):
            entry = (kind, None, optional, item)
        else:
            entry = (kind, kafka_type, optional, None)
        if tag is not None:
            tagged[tag] = entry
        else:
            plain.append(entry)
    return plain, tagged


def _value(cur: _Cursor, kafka_type: str, flexible: bool, nullable: bool = True) -> None:
    width = _FIXED.get(kafka_type)
    if width is not None:
        cur.take(width)
        return
    if kafka_type == "string" and not flexible:
        n = _I16(cur.buf, cur.take(2))[0]
    elif kafka_type in ("string", "bytes", "records") and flexible:
        n = cur.uvarint() - 1
    elif kafka_type in ("bytes", "records"):
        n = _I32(cur.buf, cur.take(4))[0]
    else:
        raise GuardError(f"unknown kafka type {kafka_type!r}")
    if n < 0 and not nullable:
        raise GuardError(f"non-nullable {kafka_type} field is null at byte {cur.pos}")
    cur.take(max(n, 0))


def _field(cur: _Cursor, entry: _Entry, flexible: bool) -> None:
    kind, kafka_type, optional, item = entry
    if kind == "value":
        _value(cur, kafka_type or "", flexible, optional or kafka_type == "records")
    elif kind == "entity":
        if optional and cur.buf[cur.take(1)] == 0xFF:
            return
        _entity(cur, item or type(None))
    else:
        n = cur.uvarint() - 1 if flexible else _I32(cur.buf, cur.take(4))[0]
        if n < 0:
            if not optional:  # as Kafka's own parser: a null where the schema allows none
                raise GuardError(f"non-nullable array is null at byte {cur.pos}")
            return
        cur.count(n)
        for _ in range(n):
            if kind == "array":
                _value(cur, kafka_type or "", flexible)
            else:
                _entity(cur, item or type(None))


def _entity(cur: _Cursor, cls: type) -> None:
    flexible = bool(getattr(cls, "__flexible__", False))
    plain, tagged = _plan(cls)
    for entry in plain:
        _field(cur, entry, flexible)
    if flexible:
        n = cur.uvarint()
        cur.count(n)
        for _ in range(n):
            tag = cur.uvarint()
            size = cur.uvarint()
            start = cur.take(size)
            tagged_entry = tagged.get(tag)
            if tagged_entry is not None:
                sub = _Cursor(cur.buf, start, start + size)
                _field(sub, tagged_entry, flexible)


def check_body(cls: type, buf: bytes | bytearray | memoryview, offset: int) -> None:
    """Raise GuardError when the body of `cls` at `offset` forges a count or is truncated."""
    if not is_dataclass(cls):
        return
    _entity(
        _Cursor(memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf, offset, len(buf)), cls
    )
