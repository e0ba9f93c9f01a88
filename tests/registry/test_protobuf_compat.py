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
    repeated = P.parse(V1.replace("string id = 1", "repeated string id = 1"))
    assert any("FIELD_KIND_CHANGED" in m for m in P.incompatibilities(repeated, v1))
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
