"""Avro's schema resolution rules as the registry's compatibility (no sockets)."""

from __future__ import annotations

import json

import pytest

from tidelog.registry import avro
from tidelog.registry.errors import RegistryError


def p(schema: object, refs: list[object] | None = None) -> avro.ParsedAvro:
    return avro.parse(json.dumps(schema), [("ref", json.dumps(r)) for r in refs or ()])


def rec(*fields: dict[str, object], name: str = "User", **extra: object) -> dict[str, object]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def ok(reader: object, writer: object) -> bool:
    return not avro.incompatibilities(p(reader), p(writer))


def test_added_field_needs_a_default_to_read_old_data():
    old = rec({"name": "a", "type": "int"})
    assert ok(rec({"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""}), old)
    assert not ok(rec({"name": "a", "type": "int"}, {"name": "b", "type": "string"}), old)


def test_removed_field_is_skipped_by_the_reader():
    assert ok(rec({"name": "a", "type": "int"}), rec({"name": "a", "type": "int"}, {"name": "b", "type": "string"}))


@pytest.mark.parametrize(
    "writer,reader,compatible",
    [
        ("int", "long", True),
        ("int", "float", True),
        ("int", "double", True),
        ("long", "float", True),
        ("long", "double", True),
        ("float", "double", True),
        ("string", "bytes", True),
        ("bytes", "string", True),
        ("long", "int", False),
        ("double", "float", False),
        ("string", "int", False),
        ("boolean", "int", False),
    ],
)
def test_promotions(writer, reader, compatible):
    assert ok(rec({"name": "a", "type": reader}), rec({"name": "a", "type": writer})) is compatible


def test_enum_symbols():
    ab = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
    abc = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}
    assert ok(abc, ab)
    assert not ok(ab, abc)
    assert ok({**ab, "default": "A"}, abc)  # the reader's default stands for unknown symbols


def test_unions():
    assert ok(["null", "int", "string"], ["null", "int"])
    assert not ok(["null", "int"], ["null", "int", "string"])
    assert ok(["null", "long"], "int")  # a writer branch promoted into a reader branch
    assert not ok("int", ["null", "int"])
    assert ok(["null", "string"], ["null", "string"])


def test_names_and_aliases():
    assert not ok(rec({"name": "a", "type": "int"}, name="Other"), rec({"name": "a", "type": "int"}))
    assert ok(rec({"name": "a", "type": "int"}, name="Other", aliases=["User"]), rec({"name": "a", "type": "int"}))
    renamed = rec({"name": "renamed", "type": "int", "aliases": ["a"]})
    assert ok(renamed, rec({"name": "a", "type": "int"}))


def test_fixed_arrays_maps():
    assert not ok({"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "F", "size": 8})
    assert ok({"type": "array", "items": "long"}, {"type": "array", "items": "int"})
    assert not ok({"type": "map", "values": "int"}, {"type": "map", "values": "long"})


def test_recursive_types_terminate():
    def node(t: str) -> object:
        return rec({"name": "v", "type": t}, {"name": "next", "type": ["null", "Node"], "default": None}, name="Node")

    assert ok(node("long"), node("int"))
    assert not ok(node("int"), node("long"))


def test_named_types_from_references():
    address = {"type": "record", "name": "Address", "namespace": "x", "fields": [{"name": "s", "type": "string"}]}
    user = rec({"name": "home", "type": "x.Address"})
    parsed = p(user, [address])
    assert "x.Address" in parsed.named
    with pytest.raises(RegistryError) as e:
        p(user)  # the reference is missing
    assert e.value.code == 42201


@pytest.mark.parametrize("bad", ["{", '{"type": "nosuch"}', '{"type": "enum", "name": "E"}', "42"])
def test_invalid_schemas_are_42201(bad):
    with pytest.raises(RegistryError) as e:
        avro.parse(bad)
    assert e.value.code == 42201 and e.value.status == 422


def test_canonical_form_ignores_doc_and_whitespace():
    a = p(rec({"name": "a", "type": "int"}, doc="hello"))
    b = avro.parse('{"type":"record",  "name":"User","fields":[{"name":"a","type":"int"}]}')
    assert a.canonical == b.canonical


@pytest.mark.parametrize(
    "field",
    [
        {"name": "a", "type": "int", "default": "zero"},
        {"name": "a", "type": "int", "default": 2**40},
        {"name": "a", "type": ["null", "string"], "default": "x"},  # a union's default: its first branch
        {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["A"]}, "default": "B"},
        {"name": "a", "type": {"type": "array", "items": "int"}, "default": [1, "2"]},
        {
            "name": "a",
            "type": {"type": "record", "name": "In", "fields": [{"name": "x", "type": "int"}]},
            "default": {},
        },
    ],
)
def test_invalid_defaults_are_42201(field):
    with pytest.raises(RegistryError) as e:
        p(rec(field))
    assert e.value.code == 42201 and "default" in e.value.message.lower()


def test_valid_defaults():
    p(rec({"name": "a", "type": ["null", "string"], "default": None}, {"name": "b", "type": "long", "default": 2**40}))
    p(rec({"name": "a", "type": {"type": "map", "values": "double"}, "default": {"x": 1}}))
    node = rec({"name": "next", "type": ["null", "Node"], "default": None}, name="Node")
    p(node)
