"""Protobuf values in typed columns: registered schemas -> descriptors -> Arrow types, and the
values of Confluent's Protobuf framing -> Python values of those types.

Framing (Confluent's ProtobufSerializer): magic byte 0, the 4-byte big-endian schema id, the
message indexes, then the message. The indexes locate the record's message in the schema's file:
a zigzag varint count then that many zigzag varints (the index among the file's top-level
messages, then among the nested messages of each level, map entries counted); a single 0 byte
is the common case, `[0]`, the first message.

A registered schema is a base64 `FileDescriptorProto` (confluent-kafka's Python serializer) or
.proto text (`proto_text`); with its references (named by their import paths) it is built into
a `DescriptorPool` of its own, once per worker process and schema id (`_compiled`). Well-known
types a file imports but the registry does not hold (confluent-kafka does not register them)
come from the `protobuf` library; any other import that is missing is added as an empty file
(it usually brings only options; a type used from it fails the build, which says so).

A message becomes a struct of its fields in declaration order: scalars (int32/sint32/sfixed32 ->
int32, int64/sint64/sfixed64 -> int64, uint32/fixed32 -> int64, uint64/fixed64 ->
decimal(20, 0), float, double, bool, string, bytes -> binary), enums -> their value's name (the
number as text for a value the schema does not name), repeated -> list, map<K, V> -> map,
messages -> structs, `google.protobuf.Timestamp` -> timestamp (UTC, microseconds), the wrapper
types -> their value, other well-known types (Duration, Struct, Value, Any, ...) -> their
canonical JSON text, a message that contains itself -> JSON text where it recurses. A field with
presence (proto2 optional, proto3 `optional`, a member of a oneof, a message field) that is not
set is null; a proto3 scalar without presence reads as its default (0, "", false), as in
Protobuf itself. A oneof is its member fields, each nullable, at most one of them set.

Which messages a column holds (`Writer.messages`, decided on the driver by `column_messages`):
those the subject names (RecordNameStrategy subjects are a message's full name), else the
file's root messages (top-level messages no other top-level message of the file uses as a field
type, transitively: `Address` in a file whose `Order` has an `Address` field is not one). A
record of another message of the schema is not decoded (`_error` says which it was).
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from .arrow_types import list_of, merge

_WELL_KNOWN = {
    "google/protobuf/any.proto": "any_pb2",
    "google/protobuf/api.proto": "api_pb2",
    "google/protobuf/descriptor.proto": "descriptor_pb2",
    "google/protobuf/duration.proto": "duration_pb2",
    "google/protobuf/empty.proto": "empty_pb2",
    "google/protobuf/field_mask.proto": "field_mask_pb2",
    "google/protobuf/source_context.proto": "source_context_pb2",
    "google/protobuf/struct.proto": "struct_pb2",
    "google/protobuf/timestamp.proto": "timestamp_pb2",
    "google/protobuf/type.proto": "type_pb2",
    "google/protobuf/wrappers.proto": "wrappers_pb2",
}
_MAIN = "tidelog-schema.proto"  # the name of a schema given as text (its references keep theirs)


def file_proto(text: str, name: str) -> Any:
    """The `FileDescriptorProto` of a registered schema (base64 descriptor or .proto text)."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    from . import proto_text

    stripped = text.strip()
    if stripped and not any(c in stripped for c in " ;{\n"):
        try:
            fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(stripped, validate=True))
        except (binascii.Error, ValueError, DecodeError) as e:
            raise ValueError(f"not a base64 FileDescriptorProto: {e}") from None
        fdp.name = fdp.name or name
        return fdp
    return proto_text.parse(text, name)


class _Compiled:
    """One schema's descriptor pool, its main file, and per message its Arrow type, message
    class and converter (built when first asked for)."""

    def __init__(self, text: str, refs: tuple[tuple[str, str], ...]) -> None:
        from google.protobuf import descriptor_pool

        files = {name: file_proto(t, name) for name, t in refs}
        self.main_proto = file_proto(text, _MAIN)
        if self.main_proto.name in files:
            self.main_proto.name = _MAIN
        files[self.main_proto.name] = self.main_proto
        self.pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()
        for name in files:
            _add(self.pool, name, files, added)
        self.file = self.pool.FindFileByName(self.main_proto.name)
        self._types: dict[str, tuple[pa.DataType, Callable[[Any], Any]]] = {}
        self._classes: dict[str, Any] = {}

    def top_level(self) -> list[Any]:
        package = self.main_proto.package
        return [
            self.pool.FindMessageTypeByName(f"{package}.{m.name}" if package else m.name)
            for m in self.main_proto.message_type
        ]

    def at(self, indexes: list[int]) -> Any:
        """The message the framing's indexes name; ValueError when none."""
        try:
            desc = self.top_level()[indexes[0]]
            for i in indexes[1:]:
                desc = desc.nested_types[i]
        except IndexError:
            raise ValueError(f"no message at indexes {indexes}") from None
        return desc

    def converted(self, desc: Any) -> tuple[pa.DataType, Callable[[Any], Any]]:
        if desc.full_name not in self._types:
            self._types[desc.full_name] = _message(desc, [])
        return self._types[desc.full_name]

    def message_class(self, desc: Any) -> Any:
        if desc.full_name not in self._classes:
            from google.protobuf.message_factory import GetMessageClass

            self._classes[desc.full_name] = GetMessageClass(desc)
        return self._classes[desc.full_name]


def _add(pool: Any, name: str, files: dict[str, Any], added: set[str], depth: int = 0) -> None:
    """Add file `name` to `pool`, the files it imports first."""
    if name in added or depth > 64:
        return
    added.add(name)
    fdp = files.get(name)
    if fdp is None:
        fdp = _well_known(name)
    for dep in fdp.dependency:
        _add(pool, dep, files, added, depth + 1)
    try:
        pool.Add(fdp)
    except (TypeError, ValueError) as e:  # upb: TypeError for unresolved names, duplicates
        raise ValueError(f"Protobuf schema does not build ({name}): {e}") from None


def _well_known(name: str) -> Any:
    """A well-known type's file from the protobuf library; an empty file for another import."""
    import importlib

    from google.protobuf import descriptor_pb2

    module = _WELL_KNOWN.get(name)
    if module is None:
        return descriptor_pb2.FileDescriptorProto(name=name)
    serialized = importlib.import_module(f"google.protobuf.{module}").DESCRIPTOR.serialized_pb
    return descriptor_pb2.FileDescriptorProto.FromString(serialized)


@functools.lru_cache(maxsize=256)
def _compiled(text: str, refs: tuple[tuple[str, str], ...]) -> _Compiled:
    return _Compiled(text, refs)


def column_messages(text: str, refs: tuple[tuple[str, str], ...], named: tuple[str, ...] = ()) -> frozenset[str]:
    """Full names of the messages of a schema a column holds: those of `named` the file defines
    at top level, else its root messages (see the module's doc)."""
    c = _compiled(text, refs)
    top = c.top_level()
    names = [d.full_name for d in top]
    wanted = [n for n in named if n in names]
    if wanted:
        return frozenset(wanted)
    used: set[str] = set()
    for d in top:
        used |= _used_types(d, set()) - {d.full_name}
    roots = [n for n in names if n not in used]
    return frozenset(roots or names[:1])


def _used_types(desc: Any, seen: set[str]) -> set[str]:
    """Full names of the messages `desc`'s fields use, transitively."""
    for f in desc.fields:
        m = f.message_type
        if m is not None and m.full_name not in seen:
            seen.add(m.full_name)
            _used_types(m, seen)
    return seen


def arrow_type(writer: Any) -> pa.DataType:
    """The union of the Arrow types of the messages `writer` (a `typed.Writer`) holds."""
    c = _compiled(writer.text, writer.refs)
    names = writer.messages or column_messages(writer.text, writer.refs)
    out: pa.DataType = pa.null()
    for d in c.top_level():
        if d.full_name in names:
            out = merge(out, c.converted(d)[0])
    return out


def decode(raw: bytes, sid: int, writer: Any) -> Any:
    """The value of a framed record (header already checked); ValueError saying why not."""
    from google.protobuf.message import DecodeError

    try:
        c = _compiled(writer.text, writer.refs)
    except ValueError as e:
        raise ValueError(f"schema id {sid}: {e}") from None
    indexes, pos = message_indexes(raw, 5)
    desc = c.at(indexes)
    if desc.full_name not in writer.messages:
        held = ", ".join(sorted(writer.messages))
        raise ValueError(f"message {desc.full_name} (schema id {sid}) is not one the column holds ({held})")
    try:
        message = c.message_class(desc).FromString(raw[pos:])
    except DecodeError as e:
        raise ValueError(f"Protobuf decode failure (schema id {sid}): {e}") from None
    return c.converted(desc)[1](message)


def _varint(raw: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(raw) or shift > 63:
            raise ValueError("Protobuf framing: the message indexes end early")
        b = raw[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos  # zigzag
        shift += 7


def message_indexes(raw: bytes, pos: int) -> tuple[list[int], int]:
    """The framing's message indexes from `pos`, and where the message starts."""
    count, pos = _varint(raw, pos)
    if count == 0:
        return [0], pos
    if not 0 < count <= 64:
        raise ValueError(f"Protobuf framing: {count} message indexes")
    out = []
    for _ in range(count):
        i, pos = _varint(raw, pos)
        out.append(i)
    return out, pos


# ---------------------------------------------------------------------------------------------
# Types and values

_INT32 = {5, 15, 17}  # int32, sfixed32, sint32
_INT64 = {3, 16, 18, 13, 7}  # int64, sfixed64, sint64; uint32, fixed32 (Spark has no unsigned types)
_UINT64 = {4, 6}  # uint64, fixed64
_SCALAR = {1: pa.float64(), 2: pa.float32(), 8: pa.bool_(), 9: pa.string(), 12: pa.binary()}
_WRAPPERS = {
    "google.protobuf.DoubleValue": pa.float64(),
    "google.protobuf.FloatValue": pa.float32(),
    "google.protobuf.Int64Value": pa.int64(),
    "google.protobuf.UInt64Value": pa.decimal128(20, 0),
    "google.protobuf.Int32Value": pa.int32(),
    "google.protobuf.UInt32Value": pa.int64(),
    "google.protobuf.BoolValue": pa.bool_(),
    "google.protobuf.StringValue": pa.string(),
    "google.protobuf.BytesValue": pa.binary(),
}
Convert = Callable[[Any], Any]


def _same(v: Any) -> Any:
    return v


def _json_text(m: Any) -> Any:
    from google.protobuf import json_format

    try:
        return json_format.MessageToJson(m, indent=None, preserving_proto_field_name=True)
    except (TypeError, ValueError, KeyError):  # an Any of a type the pool lacks
        return str(m)


def _timestamp(m: Any) -> int:
    return m.seconds * 1_000_000 + m.nanos // 1000


def _message(desc: Any, stack: list[str]) -> tuple[pa.DataType, Convert]:
    """A message's struct type and the converter of its values into Python dicts."""
    name = desc.full_name
    if name == "google.protobuf.Timestamp":
        return pa.timestamp("us", tz="UTC"), _timestamp
    if name in _WRAPPERS:
        return _WRAPPERS[name], lambda m: m.value
    if name.startswith("google.protobuf.") or name in stack:
        return pa.string(), _json_text
    stack.append(name)
    try:
        fields = [(f, *_field(f, stack)) for f in desc.fields]
    finally:
        stack.pop()
    parts = [(f.name, f.has_presence and not _repeated(f), conv) for f, _t, conv in fields]

    def convert(m: Any) -> dict:
        out: dict[str, Any] = {}
        for fname, presence, conv in parts:
            if presence and not m.HasField(fname):
                out[fname] = None
            else:
                out[fname] = conv(getattr(m, fname))
        return out

    return pa.struct([pa.field(f.name, t) for f, t, _conv in fields]), convert


def _repeated(f: Any) -> bool:
    is_repeated = getattr(f, "is_repeated", None)
    return bool(is_repeated) if is_repeated is not None else f.label == 3


def _field(f: Any, stack: list[str]) -> tuple[pa.DataType, Convert]:
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        key, value = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        kt, kconv = _single(key, stack)
        vt, vconv = _single(value, stack)
        return pa.map_(kt, vt), lambda m: {kconv(k): vconv(v) for k, v in m.items()}
    item_type, conv = _single(f, stack)
    if _repeated(f):
        return list_of(item_type), (lambda v: list(v)) if conv is _same else (lambda v: [conv(x) for x in v])
    return item_type, conv


def _single(f: Any, stack: list[str]) -> tuple[pa.DataType, Convert]:
    """The type and converter of one value of field `f` (an item, if it is repeated)."""
    if f.message_type is not None:
        return _message(f.message_type, stack)
    if f.enum_type is not None:
        names = {v.number: v.name for v in f.enum_type.values}
        return pa.string(), lambda v: names.get(v, str(v))
    if f.type in _INT32:
        return pa.int32(), _same
    if f.type in _INT64:
        return pa.int64(), _same
    if f.type in _UINT64:
        return pa.decimal128(20, 0), _same
    return _SCALAR[f.type], _same
