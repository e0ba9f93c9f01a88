"""The schema languages of typed columns without Spark: JSON Schema and Protobuf schemas to Arrow
types, .proto text to descriptors, Confluent's message indexes, the manifest's form of a type."""

from __future__ import annotations

import json

import pytest

pa = pytest.importorskip("pyarrow")

from tidelog.spark_export import arrow_types, json_arrow, proto_arrow, proto_text  # noqa: E402
from tidelog.spark_export.typed import Field, Writer, decode  # noqa: E402

ORDER_PROTO = """
syntax = "proto3";
package shop;
import "shop/address.proto";
import "google/protobuf/timestamp.proto";

/* Line comes first: an Order's indexes are [1] */
message Line { string sku = 1; int32 qty = 2; }

message Order {
  option deprecated = false;
  int64 id = 1;
  repeated Line lines = 3;
  map<string, int64> attrs = 4 [deprecated = true];
  enum Status { NEW = 0; PAID = 1; reserved 7; }
  Status status = 5;
  oneof pay { string card = 6; int32 cash = 7; }
  google.protobuf.Timestamp at = 8;
  shop.Address ship = 9;
  optional string note = 10;
  uint64 big = 11;
  reserved 20 to 30;
}
"""


def test_proto_text_reads_as_the_same_descriptor_as_a_hand_built_one():
    from typed_broker import proto_classes

    order, _line = proto_classes(1)
    address = "syntax = 'proto3'; package shop; message Address { string city = 1; }"
    c = proto_arrow._compiled(ORDER_PROTO, (("shop/address.proto", address),))
    parsed = c.at([1])
    want = order.DESCRIPTOR

    def shape(d):
        return [
            (
                f.name,
                f.number,
                f.type,
                f.is_repeated,
                f.message_type and f.message_type.full_name,
                f.enum_type and f.enum_type.full_name,
                f.containing_oneof and f.containing_oneof.name,
                f.has_presence,
            )
            for f in d.fields
        ]

    assert parsed.full_name == "shop.Order" and shape(parsed) == shape(want)
    # a message serialized by the hand-built class decodes with the text's descriptor
    m = order(id=7, status=1, cash=3, note="n")
    m.attrs["a"] = 1
    w = Writer("PROTOBUF", ORDER_PROTO, (("shop/address.proto", address),), frozenset({"shop.Order"}))
    raw = b"\0\0\0\0\1" + bytes([2, 2]) + m.SerializeToString()
    value = proto_arrow.decode(raw, 1, w)
    assert (value["id"], value["status"], value["cash"], value["card"], value["note"]) == (7, "PAID", 3, None, "n")
    assert value["attrs"] == {"a": 1} and value["ship"] is None and value["lines"] == []
    assert proto_arrow.column_messages(ORDER_PROTO, w.refs) == {"shop.Order"}  # Line is used by Order


def test_proto_text_refuses_what_it_does_not_read():
    with pytest.raises(ValueError, match="groups"):
        proto_text.parse("syntax = 'proto2'; message A { optional group G = 1 { } }", "a.proto")
    with pytest.raises(ValueError, match="ends inside"):
        proto_text.parse("message A { int32 a = 1;", "a.proto")
    with pytest.raises(ValueError, match="does not build"):
        proto_arrow._compiled("syntax = 'proto3'; message A { Missing m = 1; }", ())


def test_message_indexes():
    assert proto_arrow.message_indexes(b"\0", 0) == ([0], 1)
    assert proto_arrow.message_indexes(bytes([4, 2, 6]), 0) == ([1, 3], 3)  # zigzag: 4 -> 2 items
    with pytest.raises(ValueError, match="end early"):
        proto_arrow.message_indexes(bytes([4, 2]), 0)


def test_json_schema_types():
    struct, string, int64, double = pa.struct, pa.string(), pa.int64(), pa.float64()

    def t(schema: dict, refs=()):
        return json_arrow.arrow_type(json.dumps(schema), refs)

    assert t({"type": ["integer", "number", "null"]}) == double
    assert t({"type": ["string", "integer"]}) == string  # JSON text
    assert t({"anyOf": [{"type": "null"}, {"type": "integer"}]}) == int64
    assert t({"oneOf": [{"type": "integer"}, {"type": "string"}]}) == string
    assert t({"type": "array", "items": [{"type": "integer"}]}) == string  # a tuple
    assert t({"type": "array"}) == arrow_types.list_of(string)
    assert t({"enum": ["a", "b"]}) == string and t({}) == string
    assert t({"allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {"type": "string"}}}]}) == (
        struct([("a", int64), ("b", string)])
    )
    linked = {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#"}}}
    assert t(linked) == struct([("v", int64), ("next", string)])  # recursion: JSON text
    other = {"$id": "https://example.com/schemas/address.json", "properties": {"city": {"type": "string"}}}
    via_id = {"$id": "https://example.com/schemas/order.json", "properties": {"ship": {"$ref": "address.json"}}}
    assert t(via_id, (("address", json.dumps(other)),)) == struct([("ship", struct([("city", string)]))])
    assert t({"properties": {"x": {"$ref": "missing.json"}}}) == struct([("x", string)])


def test_json_values_fit_the_column_type_field_by_field():
    column = pa.struct([("a", pa.int64()), ("b", arrow_types.list_of(pa.float64())), ("c", pa.string())])
    f = Field("value", "t-value", column, {1: Writer("JSON", "{}")})
    body = {"a": 2.0, "b": [1, 2.5, None], "c": {"x": 1}, "d": "dropped"}
    want = {"a": 2, "b": [1, 2.5, None], "c": '{"x": 1}'}
    assert decode(b"\0\0\0\0\1" + json.dumps(body).encode(), f) == (want, None)
    value, error = decode(b"\0\0\0\0\1" + json.dumps({"a": True, "b": 3, "c": "ok"}).encode(), f)
    assert value == {"a": None, "b": None, "c": "ok"}
    assert error == "a: expected int64, got bool; b: expected list<element: double>, got int"
    assert decode(b"\0\0\0\0\1" + json.dumps({"a": 1 << 64}).encode(), f)[1] == "a: expected int64, got int"
    assert decode(b"\0\0\0\0\1null", f) == (None, None)


def test_types_round_trip_through_the_manifest_form():
    t = pa.struct(
        [
            ("a", arrow_types.list_of(pa.struct([("x", pa.timestamp("us", tz="UTC"))]))),
            ("m", pa.map_(pa.int32(), pa.decimal128(20, 0))),
            ("d", pa.date32()),
            ("n", pa.timestamp("us")),
        ]
    )
    doc = arrow_types.to_json(t)
    assert arrow_types.from_json(json.loads(json.dumps(doc))) == t


def test_subject_namings():
    from tidelog.spark_export.subjects import Naming, NoSubjects

    registered = [
        "orders-value",
        "orders-key",
        "orders-shop.Order",
        "orders-eu-value",
        "orders-eu-shop.X",
        "shop.Order",
    ]
    registered += ["orders.v2-value", "orders-shop.Refund", "orders-not a name"]
    assert Naming().choose("orders", "value", registered) == ["orders-value"]
    assert Naming("topic-record").choose("orders", "value", registered) == ["orders-shop.Order", "orders-shop.Refund"]
    assert Naming("record", ("shop.Order",)).choose("orders", "value", registered) == ["shop.Order"]
    with pytest.raises(NoSubjects):
        Naming("record").choose("orders", "key", registered)
    with pytest.raises(ValueError, match="unknown subject name strategy"):
        Naming("by-magic")
    assert Naming.of(None, ["", None]) is None and Naming.of("record", ["a"]) == Naming("record", ("a",))
    assert Naming.recorded(Naming("topic-record").to_entry()) == Naming("topic-record") and Naming().to_entry() == {}
    assert Naming.record_names("orders", "orders-shop.Order") == ("orders-shop.Order", "shop.Order")


def test_json_inference_widens_before_recording_and_only_extends_after():
    from tidelog.spark_export import typed
    from tidelog.spark_export.json_arrow import extend, infer, new_members, widen

    a = infer({"id": 1, "n": None, "e": [], "o": {}, "tags": ["x", 2], "deep": {"v": 1}})
    assert a == pa.struct(
        [("id", pa.int64()), ("tags", arrow_types.list_of(pa.string())), ("deep", pa.struct([("v", pa.int64())]))]
    )
    b = infer({"id": 1.5, "deep": {"w": True}, "extra": 1 << 70})
    merged = widen(a, b)
    assert merged.field("id").type == pa.float64() and merged.field("extra").type == pa.float64()
    assert merged.field("deep").type == pa.struct([("v", pa.int64()), ("w", pa.bool_())])
    assert widen(pa.int64(), pa.string()) == pa.string() and widen(None, None) is None
    grown = extend(a, b)  # a recorded: id stays int64, new fields are added
    assert grown.field("id").type == pa.int64() and grown.field("extra").type == pa.float64()
    assert new_members([(("deep",), {"w": True}), (("tags", "[]"), {"z": None})]) == (
        pa.struct([("deep", pa.struct([("w", pa.bool_())]))]),
        ["deep.w"],
    )

    f = typed.Field("value", "", a, kind="json")
    typed.take_new_types()
    column = pa.array([b'{"id": 2, "deep": {"v": 1, "w": false}}', b'{"id": "x"}', b"nope", None, b"null"], pa.binary())
    values, raw, errors = typed.decode_json_column(column, f)
    assert errors == [
        "not in the column type yet: deep.w",
        "id: expected int64, got str",
        "not JSON: Expecting value: line 1 column 1 (char 0)",
        None,
        None,
    ]
    assert values.to_pylist()[0]["deep"] == {"v": 1} and raw.to_pylist()[3:] == [None, None]
    assert typed.take_new_types() == {"value": pa.struct([("deep", pa.struct([("w", pa.bool_())]))])}
    wider = typed.Formats((f,)).with_new_types({"value": pa.struct([("deep", pa.struct([("w", pa.bool_())]))])})
    assert wider.fields[0].type.field("deep").type == pa.struct([("v", pa.int64()), ("w", pa.bool_())])
