""".proto text -> `FileDescriptorProto`, for registered Protobuf schemas given as text.

Confluent's Java serializers (and the REST API's users) register a Protobuf schema as .proto
text; confluent-kafka's Python serializer registers a base64 `FileDescriptorProto`. The
`protobuf` library reads only the latter, so `parse(text, name)` turns the text into one for a
`DescriptorPool` to build (`proto_arrow`). It reads what decoding needs of proto2 and proto3:
`syntax`, `package`, `import` (public and weak too), messages and nested messages, enums (their
values and numbers), fields (labels, scalar and named types as written: the pool resolves the
names by protoc's scoping rules and decides message or enum), proto3 `optional` (its synthetic
oneof), `oneof`s, and `map<K, V>` (the `<Name>Entry` message protoc makes). Options, reserved
ranges, extension ranges, `extend` blocks and services are skipped: they do not change how a
message's bytes read. Groups and editions are refused (`ValueError`), as is anything else it
does not read.
"""

from __future__ import annotations

from typing import Any

from tidelog.log.proto_tokens import TokenCursor, tokenize

# FieldDescriptorProto.Type numbers of the scalar types
SCALARS = {
    "double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "fixed64": 6, "fixed32": 7, "bool": 8,
    "string": 9, "bytes": 12, "uint32": 13, "sfixed32": 15, "sfixed64": 16, "sint32": 17, "sint64": 18,
}  # fmt: skip
_LABELS = {"optional": 1, "required": 2, "repeated": 3}


def parse(text: str, name: str) -> Any:
    """The `FileDescriptorProto` (named `name`) of .proto `text`; ValueError when it does not read."""
    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto(name=name, syntax="proto2")
    tokens = tokenize(text)
    try:
        _Parser(tokens, fdp).file()
    except IndexError:
        raise ValueError("not a .proto file: it ends inside a definition") from None
    if fdp.syntax == "proto2":
        fdp.ClearField("syntax")  # protoc leaves it unset for proto2
    return fdp


def _unquote(tok: str) -> str:
    if len(tok) < 2 or tok[0] not in "\"'" or tok[-1] != tok[0]:
        raise ValueError(f"expected a string, found {tok!r}")
    return tok[1:-1]


def _entry_name(field_name: str) -> str:
    """protoc's name of a map field's entry message: the field name in CamelCase + "Entry"."""
    parts = field_name.split("_")
    return "".join(p[:1].upper() + p[1:] for p in parts) + "Entry"


class _Parser(TokenCursor):
    def __init__(self, tokens: list[str], fdp: Any) -> None:
        super().__init__(tokens)
        self.fdp = fdp

    def file(self) -> None:
        while self.i < len(self.t):
            tok = self.next()
            if tok == "syntax":
                self.expect("=")
                self.fdp.syntax = _unquote(self.next())
                self.expect(";")
            elif tok == "edition":
                raise ValueError("Protobuf editions are not read (proto2 and proto3 are)")
            elif tok == "package":
                self.fdp.package = self.next()
                self.expect(";")
            elif tok == "import":
                self.import_()
            elif tok == "message":
                self.message(self.fdp.message_type.add())
            elif tok == "enum":
                self.enum(self.fdp.enum_type.add())
            elif tok in ("option", "service", "extend"):
                self.skip_statement()
            elif tok != ";":
                raise ValueError(f"unexpected {tok!r}")

    def import_(self) -> None:
        tok = self.next()
        kind = None
        if tok in ("public", "weak"):
            kind, tok = tok, self.next()
        self.fdp.dependency.append(_unquote(tok))
        index = len(self.fdp.dependency) - 1
        if kind == "public":
            self.fdp.public_dependency.append(index)
        elif kind == "weak":
            self.fdp.weak_dependency.append(index)
        self.expect(";")

    def enum(self, e: Any) -> None:
        e.name = self.next()
        self.expect("{")
        while (tok := self.next()) != "}":
            if tok in ("option", "reserved"):
                self.skip_statement()
            elif tok != ";":
                self.expect("=")
                e.value.add(name=tok, number=int(self.next(), 0))
                if self.peek() == "[":
                    self.skip_options()
                self.expect(";")

    def skip_options(self) -> None:
        depth = 0
        while True:
            tok = self.next()
            depth += tok == "["
            depth -= tok == "]"
            if depth == 0:
                return

    def message(self, m: Any) -> None:
        m.name = self.next()
        self.expect("{")
        synthetic: list[Any] = []  # proto3 optional fields: their oneofs follow the real ones
        while (tok := self.next()) != "}":
            if tok == "message":
                self.message(m.nested_type.add())
            elif tok == "enum":
                self.enum(m.enum_type.add())
            elif tok == "oneof":
                self.oneof(m)
            elif tok in ("option", "reserved", "extensions", "extend"):
                self.i -= 1
                self.skip_statement()
            elif tok == "group" or (tok in _LABELS and self.peek() == "group"):
                raise ValueError("proto2 groups are not read")
            elif tok != ";":
                f = self.field(m, tok)
                if f.proto3_optional:
                    synthetic.append(f)
        for f in synthetic:
            f.oneof_index = len(m.oneof_decl)
            m.oneof_decl.add(name="_" + f.name)

    def oneof(self, m: Any) -> None:
        index = len(m.oneof_decl)
        m.oneof_decl.add(name=self.next())
        self.expect("{")
        while (tok := self.next()) != "}":
            if tok == "option":
                self.i -= 1
                self.skip_statement()
            elif tok != ";":
                self.field(m, tok).oneof_index = index

    def field(self, m: Any, tok: str) -> Any:
        """Read one field (its first token `tok`) into message `m`."""
        label = None
        if tok in _LABELS:
            label, tok = tok, self.next()
        f = m.field.add()
        if tok == "map":
            self.expect("<")
            key = self.next()
            self.expect(",")
            value = self.next()
            self.expect(">")
            f.name = self.next()
            entry = m.nested_type.add(name=_entry_name(f.name))
            entry.options.map_entry = True
            self._typed(entry.field.add(name="key", number=1, label=1), key)
            self._typed(entry.field.add(name="value", number=2, label=1), value)
            f.label, f.type_name = 3, entry.name
        else:
            self._typed(f, tok)
            f.name = self.next()
            f.label = _LABELS[label] if label else 1
            if label == "optional" and self.fdp.syntax == "proto3":
                f.proto3_optional = True
        self.expect("=")
        f.number = int(self.next(), 0)
        if self.peek() == "[":
            self.skip_options()
        self.expect(";")
        return f

    @staticmethod
    def _typed(f: Any, type_name: str) -> None:
        if type_name in SCALARS:
            f.type = SCALARS[type_name]
        else:
            f.type_name = type_name  # resolved (message or enum) by the pool
