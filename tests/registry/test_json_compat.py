"""JSON Schema compatibility, Confluent's rules for the common cases (no sockets)."""

from __future__ import annotations

import json

import pytest

from tidelog.registry import json_schema as J
from tidelog.registry.errors import RegistryError


def ok(reader: object, writer: object) -> bool:
    return not J.incompatibilities(J.parse(json.dumps(reader)), J.parse(json.dumps(writer)))


def obj(props: dict[str, object], extra: object = None, **kw: object) -> dict[str, object]:
    out: dict[str, object] = {"type": "object", "properties": props, **kw}
    if extra is not None:
        out["additionalProperties"] = extra
    return out


A = {"a": {"type": "integer"}}
AB = {"a": {"type": "integer"}, "b": {"type": "string"}}


def test_closed_content_model():
    assert ok(obj(AB, False), obj(A, False))  # added to a closed model: old data never had it
    assert not ok(obj(A, False), obj(AB, False))  # removed from a closed model: the reader rejects it


def test_open_content_model():
    assert not ok(obj(AB), obj(A))  # added to an open model: old data may hold anything there
    assert not ok(obj({"a": {}}), obj({}))  # even a property that accepts anything, as in Confluent
    assert ok(obj(A), obj(AB))  # removed from an open model: the reader accepts it as extra


def test_pattern_properties_say_what_an_added_property_held():
    writer = {"type": "object", "patternProperties": {"^x": {"type": "integer"}}}
    assert ok(obj({"xa": {"type": "number"}}), writer)
    assert not ok(obj({"xa": {"type": "string"}}), writer)
    assert not ok(obj({"ya": {"type": "number"}}), writer)  # no pattern: the open model's rule


def test_tuples():
    def tup(*types: str, extra: object = None) -> dict[str, object]:
        out: dict[str, object] = {"type": "array", "items": [{"type": t} for t in types]}
        if extra is not None:
            out["additionalItems"] = extra
        return out

    assert ok(tup("integer"), tup("integer", extra=False))  # the reader also accepts more
    assert not ok(tup("integer", "integer", extra=False), tup("integer"))  # the writer's 2nd: anything
    assert ok(tup("integer", extra={"type": "integer"}), tup("integer", "integer", extra=False))
    assert not ok(tup("integer", extra=False), tup("integer", "integer", extra=False))
    assert not ok({"type": "array", "items": {"type": "integer"}}, tup("integer"))  # the form changed


def test_not():
    assert not ok({"not": {"type": "string"}}, {})
    assert ok({}, {"not": {"type": "string"}})
    assert ok({"not": True}, {"not": {}})


def test_partially_open_content_model():
    strings = {"type": "string"}
    assert ok(obj(AB, strings), obj(A, strings))
    assert ok(obj(A, strings), obj(AB, strings))
    assert not ok(obj({"a": {"type": "integer"}, "b": {"type": "integer"}}, strings), obj(A, strings))


def test_types():
    assert ok({"type": "number"}, {"type": "integer"})
    assert not ok({"type": "integer"}, {"type": "number"})
    assert ok({"type": ["string", "null"]}, {"type": "string"})
    assert not ok({"type": "string"}, {"type": ["string", "null"]})
    assert not ok({"type": "string"}, {})


def test_required_and_enums():
    assert not ok(obj(A, False, required=["a"]), obj(A, False))
    assert ok(obj(A, False), obj(A, False, required=["a"]))
    assert ok({"enum": ["x", "y", "z"]}, {"enum": ["x", "y"]})
    assert not ok({"enum": ["x"]}, {"enum": ["x", "y"]})


def test_bounds():
    assert ok({"type": "string", "maxLength": 10}, {"type": "string", "maxLength": 5})
    assert not ok({"type": "string", "maxLength": 5}, {"type": "string", "maxLength": 10})
    assert not ok({"type": "integer", "minimum": 1}, {"type": "integer"})
    assert not ok({"type": "array", "items": {"type": "integer"}}, {"type": "array", "items": {"type": "number"}})


def test_combinations_and_refs():
    assert ok({"oneOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "string"})
    assert not ok({"type": "string"}, {"oneOf": [{"type": "string"}, {"type": "integer"}]})
    ref = {
        "definitions": {"n": {"type": "integer"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/n"}},
    }
    num = {"type": "object", "properties": {"a": {"type": "number"}}}
    assert ok(num, ref)
    assert not ok(ref, num)


def test_invalid_schema_is_42201():
    with pytest.raises(RegistryError) as e:
        J.parse('{"type": "nosuch"}')
    assert e.value.code == 42201


def test_refs_into_referenced_schemas():
    address = json.dumps({"type": "object", "properties": {"zip": {"$ref": "#/definitions/zip"}},
                          "definitions": {"zip": {"type": "integer"}}})  # fmt: skip
    wider = address.replace('"integer"', '"number"')
    user = json.dumps({"type": "object", "properties": {"home": {"$ref": "address.json"}}})
    old = J.parse(user, [("address.json", address)])
    new = J.parse(user, [("address.json", wider)])
    assert not J.incompatibilities(new, old)  # the referenced zip widened: new reads old
    assert any("TYPE_CHANGED" in m for m in J.incompatibilities(old, new))
    with pytest.raises(RegistryError):
        J.parse(user, [("address.json", '{"type": 5}')])
