"""Properties of the compatibility checkers over generated schemas (no sockets): every schema
reads its own data, no pair of schemas makes a checker fail (a failure would be an HTTP 500),
and adding a field with a default never breaks BACKWARD for Avro."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.registry import avro, json_schema

_names = itertools.count()
PRIMITIVES = st.sampled_from(["null", "boolean", "int", "long", "float", "double", "bytes", "string"])


def avro_types(depth: int = 2) -> st.SearchStrategy[object]:
    if depth == 0:
        return PRIMITIVES
    inner = avro_types(depth - 1)
    return st.one_of(
        PRIMITIVES,
        st.builds(lambda t: {"type": "array", "items": t}, inner),
        st.builds(lambda t: {"type": "map", "values": t}, inner),
        st.builds(union, st.lists(inner, max_size=3)),
        st.builds(enum, st.lists(st.sampled_from("ABCD"), min_size=1)),
        st.builds(record, st.lists(inner, max_size=3)),
    )


def union(types: list[object]) -> list[object]:
    return ["null", *[t for t in types if t != "null" and not isinstance(t, list)]][:3]


def enum(symbols: list[str]) -> dict[str, object]:
    return {"type": "enum", "name": f"E{next(_names)}", "symbols": sorted(set(symbols))}


def record(types: list[object]) -> dict[str, object]:
    return {
        "type": "record",
        "name": f"R{next(_names)}",
        "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(types)],
    }


def parse(schema: object) -> avro.ParsedAvro:
    return avro.parse(json.dumps(schema))


def _legal_unions(t: object) -> bool:
    """Avro forbids two branches of one unnamed kind in a union: such generated schemas are skipped."""
    if isinstance(t, list):
        kinds = [b["name"] if isinstance(b, dict) and "name" in b else _kind(b) for b in t]
        return len(kinds) == len(set(kinds)) and all(_legal_unions(b) for b in t)
    if isinstance(t, dict):
        parts = [t.get("items"), t.get("values"), *(f["type"] for f in t.get("fields", ()))]
        return all(_legal_unions(p) for p in parts if p is not None)
    return True


def _kind(t: object) -> str:
    return str(t["type"]) if isinstance(t, dict) else json.dumps(t)


@settings(max_examples=150, deadline=None)
@given(st.lists(avro_types(), max_size=4), st.lists(avro_types(), max_size=4))
def test_avro_self_compatible_and_total(a, b):
    ra, rb = record(a), record(b)
    if not (_legal_unions(ra) and _legal_unions(rb)):
        return
    rb["name"] = ra["name"]
    pa, pb = parse(ra), parse(rb)
    assert avro.incompatibilities(pa, pa) == []
    avro.incompatibilities(pa, pb)  # never raises
    avro.incompatibilities(pb, pa)
    wider = {**ra, "fields": [*ra["fields"], {"name": "added", "type": "string", "default": ""}]}
    assert avro.incompatibilities(parse(wider), pa) == []


def json_types(depth: int = 2) -> st.SearchStrategy[object]:
    leaf = st.one_of(
        st.sampled_from([{}, True, {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "null"}]),
        st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 9)),
        st.builds(lambda vs: {"enum": vs}, st.lists(st.sampled_from(["a", "b", 1, None]), min_size=1, unique=True)),
    )
    if depth == 0:
        return leaf
    inner = json_types(depth - 1)
    return st.one_of(
        leaf,
        st.builds(lambda t: {"type": "array", "items": t}, inner),
        st.builds(lambda ts: {"oneOf": ts}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(
            lambda props, extra, req: {
                "type": "object",
                "properties": props,
                "additionalProperties": extra,
                "required": sorted(set(req) & set(props)),
            },
            st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
            st.one_of(st.booleans(), inner),
            st.lists(st.sampled_from("abc"), max_size=3),
        ),
    )


@settings(max_examples=200, deadline=None)
@given(json_types(), json_types())
def test_json_self_compatible_and_total(a, b):
    pa, pb = json_schema.parse(json.dumps(a)), json_schema.parse(json.dumps(b))
    assert json_schema.incompatibilities(pa, pa) == []
    json_schema.incompatibilities(pa, pb)
    json_schema.incompatibilities(pb, pa)


PROTO_WORDS = st.sampled_from(
    ["syntax", "=", '"proto3"', ";", "package", "a.b", "message", "M", "{", "}", "enum", "oneof", "o",
     "repeated", "map", "<", ">", ",", "string", "int32", "x", "1", "2", "[", "]", "option", "reserved", "import"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(PROTO_WORDS, max_size=40).map(" ".join)))
def test_any_text_parses_or_is_42201(text):
    from tidelog.registry import schemas
    from tidelog.registry.errors import RegistryError

    for schema_type in ("AVRO", "JSON", "PROTOBUF"):
        try:
            schemas.parse(schema_type, text)
        except RegistryError as e:
            assert e.code == 42201
