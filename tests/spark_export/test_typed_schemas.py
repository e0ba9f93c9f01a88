"""The schema languages of typed columns without Spark: JSON Schema to Arrow types, JSON values
fitted to them, the manifest's form of a type."""

from __future__ import annotations

import json

import pytest

pa = pytest.importorskip("pyarrow")

from tidelog.spark_export import arrow_types, json_arrow  # noqa: E402
from tidelog.spark_export.typed import Field, Writer, decode  # noqa: E402


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
