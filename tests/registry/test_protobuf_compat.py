"""Protobuf: the .proto text parser, descriptors, and the field-level rules (no sockets)."""

from __future__ import annotations

import base64

import pytest

from tidelog.registry import protobuf as P
from tidelog.registry.errors import RegistryError

V1 = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
option java_package = "x.y";
message Order {
  string id = 1;
  int32 quantity = 2 [deprecated = true];
  repeated string tags = 3;
  map<string, int64> counts = 4;
  oneof payment { string card = 5; int64 voucher = 6; }
  message Line { bool gift = 1; }
  enum State { NEW = 0; PAID = 1; }
  reserved 9;
}
"""


def test_parses_messages_and_fields():
    parsed = P.parse(V1)
    assert parsed.syntax == "proto3"
    assert parsed.messages["shop.Order"][2] == ("optional", "int32", "quantity")
    assert parsed.messages["shop.Order"][6] == ("optional", "int64", "voucher")
    assert "shop.Order.Line" in parsed.messages and "shop.Order.State" in parsed.enums


def test_rules():
    v1 = P.parse(V1)
    added = P.parse(V1.replace("reserved 9;", "string note = 10;"))
    assert not P.incompatibilities(added, v1) and not P.incompatibilities(v1, added)
    widened = P.parse(V1.replace("int32 quantity", "int64 quantity"))  # one varint group
    assert not P.incompatibilities(widened, v1)
    changed = P.parse(V1.replace("int32 quantity", "string quantity"))
    assert any("FIELD_SCALAR_KIND_CHANGED" in m for m in P.incompatibilities(changed, v1))
    repeated = P.parse(V1.replace("int32 quantity", "repeated int32 quantity"))
    assert any("FIELD_NUMERIC_LABEL_CHANGED" in m for m in P.incompatibilities(repeated, v1))
    repeated_string = P.parse(V1.replace("string id = 1", "repeated string id = 1"))
    assert not P.incompatibilities(repeated_string, v1)  # length-delimited either way
    no_line = P.parse(V1.replace("message Line { bool gift = 1; }", ""))
    assert any("MESSAGE_REMOVED" in m for m in P.incompatibilities(no_line, v1))


def test_reads_a_base64_file_descriptor():
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto(name="t.proto", package="t", syntax="proto3")
    m = fd.message_type.add(name="M")
    m.field.add(name="x", number=1, type=5, label=1)  # int32
    parsed = P.parse(base64.b64encode(fd.SerializeToString()).decode())
    assert parsed.messages["t.M"][1] == ("optional", "int32", "x")


@pytest.mark.parametrize("bad", ["message {", "syntax = ;", "message M { string x = ; }"])
def test_invalid_is_42201(bad):
    with pytest.raises(RegistryError) as e:
        P.parse(bad)
    assert e.value.code == 42201


def test_text_and_descriptor_forms_agree():
    from google.protobuf import descriptor_pb2, descriptor_pool

    text = """syntax = "proto3"; package d;
    message M { map<string, int64> counts = 1; Inner inner = 2; message Inner { bool x = 1; } }"""
    fdp = descriptor_pb2.FileDescriptorProto(name="d.proto", package="d", syntax="proto3")
    m = fdp.message_type.add(name="M")
    entry = m.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=9, label=1)
    entry.field.add(name="value", number=2, type=3, label=1)
    m.nested_type.add(name="Inner").field.add(name="x", number=1, type=8, label=1)
    m.field.add(name="counts", number=1, type=11, label=3, type_name=".d.M.CountsEntry")
    m.field.add(name="inner", number=2, type=11, label=1, type_name=".d.M.Inner")
    descriptor_pool.DescriptorPool().Add(fdp)  # a valid descriptor
    from_descriptor = P.parse(base64.b64encode(fdp.SerializeToString()).decode())
    from_text = P.parse(text)
    assert from_descriptor.messages == from_text.messages
    assert not P.incompatibilities(from_text, from_descriptor) and not P.incompatibilities(from_descriptor, from_text)


def test_oneofs_required_and_package():
    v1 = P.parse(V1)
    no_card = P.parse(V1.replace("string card = 5; ", ""))
    assert any("ONEOF_FIELD_REMOVED" in m for m in P.incompatibilities(no_card, v1))
    into_existing = P.parse(
        V1.replace("string id = 1;", "").replace("oneof payment {", "oneof payment { string id = 1;")
    )
    assert any("FIELD_MOVED_TO_EXISTING_ONEOF" in m for m in P.incompatibilities(into_existing, v1))
    two = V1.replace(
        "string id = 1;\n  int32 quantity = 2 [deprecated = true];", "oneof k { string id = 1; int32 quantity = 2; }"
    )
    assert any("MULTIPLE_FIELDS_MOVED_TO_ONEOF" in m for m in P.incompatibilities(P.parse(two), v1))
    assert any(
        "PACKAGE_CHANGED" in m for m in P.incompatibilities(P.parse(V1.replace("package shop", "package store")), v1)
    )
    p2 = 'syntax = "proto2"; message M { optional string a = 1; }'
    required = P.parse(p2.replace("optional string a = 1;", "optional string a = 1; required int32 b = 2;"))
    assert any("REQUIRED_FIELD_ADDED" in m for m in P.incompatibilities(required, P.parse(p2)))
    assert any("REQUIRED_FIELD_REMOVED" in m for m in P.incompatibilities(P.parse(p2), required))
    enum_gone = P.parse(V1.replace("PAID = 1; ", ""))
    assert not P.incompatibilities(enum_gone, v1)  # enum constants: compatible, as in Confluent


def test_descriptor_oneofs():
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto(name="o.proto", package="o", syntax="proto3")
    m = fd.message_type.add(name="M")
    m.oneof_decl.add(name="choice")
    m.field.add(name="a", number=1, type=9, label=1, oneof_index=0)
    m.field.add(name="b", number=2, type=5, label=1)
    parsed = P.parse(base64.b64encode(fd.SerializeToString()).decode())
    assert parsed.oneofs == {"o.M": {1: "choice"}}
    text = P.parse('syntax = "proto3"; package o; message M { oneof choice { string a = 1; } int32 b = 2; }')
    assert text.oneofs == parsed.oneofs
