"""PROTOBUF schemas: a schema is either .proto text (proto2/proto3: messages, nested messages,
enums, oneofs, maps, imports, options skipped) read by the small parser below, or a base64
FileDescriptorProto (what confluent-kafka's Python serializer registers), read with `protobuf`.

Both become a `ParsedProto`: every message by full name with its fields by number (label, type
- a message or enum type by its last name, a map as `map<K,V>` - and field name).
`incompatibilities(reader, writer)` applies Confluent's rules for the common cases: a message of
the writer missing from the reader (MESSAGE_REMOVED), a field number whose scalar kind changes
between wire-incompatible kinds (FIELD_SCALAR_KIND_CHANGED: int32, uint32, int64, uint64 and
bool are one varint group; string and bytes one; sint*, fixed32-likes, fixed64-likes each their
own), whose message or enum type changes (FIELD_NAMED_TYPE_CHANGED), whose label moves between
repeated and singular for a numeric type (FIELD_NUMERIC_LABEL_CHANGED; string, bytes and message
fields may), a proto2 required field added or removed (REQUIRED_FIELD_ADDED / _REMOVED), a field
of a oneof removed (ONEOF_FIELD_REMOVED), a field moved into an existing oneof or several into a
new one, a package change (PACKAGE_CHANGED). Fields added or removed otherwise, enum constants
added or removed, and syntax changes are compatible, as in Confluent's checker. Types are
compared by name: the types a reference brings in are not looked into.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field

from ..log.proto_tokens import TokenCursor, tokenize
from .errors import invalid_schema


@dataclass
class ParsedProto:
    syntax: str
    package: str
    messages: dict[str, dict[int, tuple[str, str, str]]] = field(default_factory=dict)  # number -> (label, type, name)
    enums: set[str] = field(default_factory=set)
    canonical: str = ""
    oneofs: dict[str, dict[int, str]] = field(default_factory=dict)  # message -> field number -> its oneof


_VARINT = {"int32", "int64", "uint32", "uint64", "bool"}
_GROUPS = [_VARINT, {"string", "bytes"}, {"sint32", "sint64"}, {"fixed32", "sfixed32"}, {"fixed64", "sfixed64"}]
_SCALARS = set().union(*_GROUPS) | {"float", "double"}


def parse(text: str, references: list[tuple[str, str]] | None = None) -> ParsedProto:
    """Parse .proto text or a base64 FileDescriptorProto; 42201 when neither reads."""
    stripped = text.strip()
    if stripped and not any(c in stripped for c in " ;{") and _looks_base64(stripped):
        return _from_descriptor(stripped)
    try:
        tokens = tokenize(text)
        out = ParsedProto("proto2", "")
        _Parser(tokens, out).file()
    except (IndexError, ValueError) as e:
        raise invalid_schema(f"not a .proto file: {e}") from e
    out.canonical = " ".join(tokens)
    return out


def _short(type_name: str) -> str:
    """A message or enum type by its last name: the text names types relative to their scope,
    a descriptor by full name; the rules compare what the field holds, not where it is named."""
    return type_name.rpartition(".")[2]


def _looks_base64(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _from_descriptor(text: str) -> ParsedProto:
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    fd = descriptor_pb2.FileDescriptorProto()
    try:
        fd.ParseFromString(base64.b64decode(text))
    except DecodeError as e:
        raise invalid_schema(f"not a FileDescriptorProto: {e}") from e
    out = ParsedProto(fd.syntax or "proto2", fd.package, canonical=text)
    labels = {1: "optional", 2: "required", 3: "repeated"}

    def walk(prefix: str, msgs: object) -> None:
        for m in msgs:  # type: ignore[attr-defined]
            name = f"{prefix}.{m.name}" if prefix else m.name
            entries = {e.name: e for e in m.nested_type if e.options.map_entry}
            fields = {}
            for f in m.field:
                tname = _short(f.type_name) if f.type_name else _SCALAR_BY_NUMBER.get(f.type, str(f.type))
                label = labels.get(f.label, "optional")
                if tname in entries:  # a map field: a repeated entry message in the descriptor
                    kv = {
                        e.name: _short(e.type_name) or _SCALAR_BY_NUMBER.get(e.type, "") for e in entries[tname].field
                    }
                    tname, label = f"map<{kv.get('key')},{kv.get('value')}>", "optional"
                fields[f.number] = (label, tname, f.name)
                if f.HasField("oneof_index") and not f.proto3_optional:
                    out.oneofs.setdefault(name, {})[f.number] = m.oneof_decl[f.oneof_index].name
            out.messages[name] = fields
            out.enums.update(f"{name}.{e.name}" for e in m.enum_type)
            walk(name, [n for n in m.nested_type if not n.options.map_entry])

    walk(fd.package, fd.message_type)
    out.enums.update(f"{fd.package}.{e.name}" if fd.package else e.name for e in fd.enum_type)
    return out


_SCALAR_BY_NUMBER = {
    1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32", 8: "bool",
    9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64",
}  # fmt: skip


class _Parser(TokenCursor):
    def __init__(self, tokens: list[str], out: ParsedProto) -> None:
        super().__init__(tokens)
        self.out = out

    def file(self) -> None:
        while self.i < len(self.t):
            tok = self.next()
            if tok == "syntax":
                self.expect("=")
                self.out.syntax = self.next().strip("\"'")
                self.expect(";")
            elif tok == "package":
                self.out.package = self.next()
                self.expect(";")
            elif tok == "message":
                self.message(self.out.package)
            elif tok == "enum":
                self.enum(self.out.package)
            elif tok in ("import", "option", "service", "extend"):
                self.skip_statement()
            elif tok != ";":
                raise ValueError(f"unexpected {tok!r}")

    def enum(self, prefix: str) -> None:
        name = self.next()
        self.out.enums.add(f"{prefix}.{name}" if prefix else name)
        self.expect("{")
        self.i -= 1
        self.skip_statement()

    def message(self, prefix: str) -> None:
        name = self.next()
        full = f"{prefix}.{name}" if prefix else name
        fields: dict[int, tuple[str, str, str]] = {}
        self.out.messages[full] = fields
        self.expect("{")
        while (tok := self.next()) != "}":
            if tok == "message":
                self.message(full)
            elif tok == "enum":
                self.enum(full)
            elif tok == "oneof":
                oneof = self.next()
                self.expect("{")
                while self.t[self.i] != "}":
                    if self.t[self.i] == "option":
                        self.skip_statement()
                    else:
                        self.out.oneofs.setdefault(full, {})[self.field(self.next(), fields)] = oneof
                self.next()
            elif tok in ("option", "reserved", "extensions", "extend"):
                self.i -= 1
                self.skip_statement()
            elif tok != ";":
                self.field(tok, fields)

    def field(self, tok: str, fields: dict[int, tuple[str, str, str]]) -> int:
        """Read one field into `fields`; its number."""
        label = "optional"
        if tok in ("repeated", "optional", "required"):
            label, tok = tok, self.next()
        if tok == "map":
            self.expect("<")
            key = self.next()
            self.expect(",")
            tok = f"map<{key},{self.next()}>"
            self.expect(">")
        name = self.next()
        self.expect("=")
        number = int(self.next())
        self.i -= 1
        self.skip_statement()
        fields[number] = (label, tok if tok.startswith("map<") else _short(tok), name)
        return number


def incompatibilities(reader: ParsedProto, writer: ParsedProto) -> list[str]:
    """Why data written with `writer` may not read as `reader` expects (Confluent's
    incompatible difference types, the writer being the original and the reader the update)."""
    out: list[str] = []
    if reader.package != writer.package:
        out.append(f"PACKAGE_CHANGED: {writer.package} -> {reader.package}")
    for name, wfields in writer.messages.items():
        rfields = reader.messages.get(name)
        if rfields is None:
            out.append(f"MESSAGE_REMOVED: {name}")
            continue
        out += _fields(name, reader, writer, rfields, wfields)
        out += _oneof_moves(name, reader.oneofs.get(name, {}), writer.oneofs.get(name, {}), rfields, wfields)
    return out


def _fields(
    name: str,
    reader: ParsedProto,
    writer: ParsedProto,
    rfields: dict[int, tuple[str, str, str]],
    wfields: dict[int, tuple[str, str, str]],
) -> list[str]:
    out: list[str] = []
    enums = {_short(e) for e in reader.enums | writer.enums}
    for number, (rlabel, _, _) in rfields.items():
        if rlabel == "required" and wfields.get(number, ("",))[0] != "required":
            out.append(f"REQUIRED_FIELD_ADDED: {name}.{number}")
    for number, (wlabel, wtype, _) in wfields.items():
        where = f"{name}.{number}"
        if number not in rfields:
            if wlabel == "required":
                out.append(f"REQUIRED_FIELD_REMOVED: {where}")
            if number in writer.oneofs.get(name, {}):
                out.append(f"ONEOF_FIELD_REMOVED: {where}")
            continue
        rlabel, rtype, _ = rfields[number]
        if (rlabel == "repeated") != (wlabel == "repeated"):
            delimited = wtype in ("string", "bytes") or (wtype not in _SCALARS and wtype not in enums)
            if not delimited or wtype.startswith("map<") or rtype != wtype:
                out.append(f"FIELD_NUMERIC_LABEL_CHANGED: {where}")  # a string/bytes/message one is fine
        elif rtype != wtype and not any(rtype in g and wtype in g for g in _GROUPS):
            kind = "SCALAR_KIND" if rtype in _SCALARS and wtype in _SCALARS else "NAMED_TYPE"
            out.append(f"FIELD_{kind}_CHANGED: {where}: {wtype} -> {rtype}")
    return out


def _oneof_moves(
    name: str,
    roneofs: dict[int, str],
    woneofs: dict[int, str],
    rfields: dict[int, tuple[str, str, str]],
    wfields: dict[int, tuple[str, str, str]],
) -> list[str]:
    """Fields the writer had outside any oneof, inside one in the reader: into a oneof the
    writer had (FIELD_MOVED_TO_EXISTING_ONEOF), or several into a new one."""
    out: list[str] = []
    moved: dict[str, list[int]] = {}
    for number, oneof in roneofs.items():
        if number in wfields and number not in woneofs:
            moved.setdefault(oneof, []).append(number)
    for oneof, numbers in sorted(moved.items()):
        if oneof in woneofs.values():
            out.append(f"FIELD_MOVED_TO_EXISTING_ONEOF: {name}.{oneof}: {numbers}")
        elif len(numbers) > 1:
            out.append(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF: {name}.{oneof}: {numbers}")
    return out
