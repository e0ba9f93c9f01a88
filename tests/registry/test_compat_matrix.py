"""Each compatibility level x AVRO / JSON / PROTOBUF x a compatible and an incompatible change,
through the REST API of a real broker: the answers Confluent documents for each (its "Schema Evolution and
Compatibility" summary tables: which changes each level allows, checked against which versions).

A case registers its history under the level, then asks POST /compatibility (against the
versions the level names) and registers the candidate: 200 when compatible, 409 when not. AVRO's
transitive levels' incompatible candidates are compatible with the latest version and not with
the first one (so the non-transitive level would accept them: checked too)."""

from __future__ import annotations

import itertools
import json

import pytest
import requests

pytestmark = pytest.mark.interop


def avro(*fields: tuple[str, str] | tuple[str, str, object]) -> dict[str, object]:
    out: list[dict[str, object]] = []
    for f in fields:
        spec: dict[str, object] = {"name": f[0], "type": f[1]}
        if len(f) == 3:
            spec["default"] = f[2]
        out.append(spec)
    return {"type": "record", "name": "R", "fields": out}


def js(props: dict[str, str], extra: object = False) -> dict[str, object]:
    return {"type": "object", "properties": {k: {"type": t} for k, t in props.items()}, "additionalProperties": extra}


def proto(body: str) -> str:
    return f'syntax = "proto3"; package m; message R {{ {body} }}'


A, B = ("a", "int"), ("b", "string")
B_DEFAULT = ("b", "string", "")
STR = {"type": "string"}

# level -> type -> (history, compatible candidate, incompatible candidate); PROTOBUF's rules are
# the same both ways for these changes, so its transitive cases differ from the latest too
CASES: dict[str, dict[str, tuple[list[object], object, object | None]]] = {
    "NONE": {
        "AVRO": ([avro(A)], avro(("a", "string")), None),
        "JSON": ([js({"a": "integer"})], js({"a": "string"}), None),
        "PROTOBUF": ([proto("int32 a = 1;")], proto("string a = 1;"), None),
    },
    "BACKWARD": {  # new reads old: add with a default, delete anything
        "AVRO": ([avro(A)], avro(A, B_DEFAULT), avro(A, B)),
        "JSON": ([js({"a": "integer"})], js({"a": "integer", "b": "string"}), js({"a": "string"})),
        "PROTOBUF": ([proto("int32 a = 1;")], proto("int64 a = 1; string b = 2;"), proto("string a = 1;")),
    },
    "FORWARD": {  # old reads new: add anything, delete only what had a default
        "AVRO": ([avro(A, B)], avro(A, B, ("c", "long")), avro(A)),
        "JSON": ([js({"a": "integer", "b": "string"})], js({"a": "integer"}), js({"a": "integer", "c": "string"})),
        "PROTOBUF": ([proto("int32 a = 1; string b = 2;")], proto("int32 a = 1;"), proto("repeated int32 a = 1;")),
    },
    "FULL": {  # both: add or delete fields with defaults
        "AVRO": ([avro(A, B_DEFAULT)], avro(A), avro(("a", "long"), B_DEFAULT)),
        "JSON": ([js({"a": "integer"}, STR)], js({"a": "integer", "b": "string"}, STR), js({"a": "string"}, STR)),
        "PROTOBUF": ([proto("int32 a = 1;")], proto("uint32 a = 1; bytes c = 3;"), proto("double a = 1;")),
    },
    "BACKWARD_TRANSITIVE": {
        "AVRO": ([avro(A), avro(A, B_DEFAULT)], avro(A, ("c", "int", 0)), avro(A, B)),
        "JSON": ([js({"a": "integer"}), js({"a": "number"})], js({"a": "number"}, True), js({"a": "string"})),
        "PROTOBUF": (
            [proto("int32 a = 1;"), proto("int32 a = 1; bool b = 2;")],
            proto("int64 a = 1;"),
            proto("float a = 1;"),
        ),
    },
    "FORWARD_TRANSITIVE": {
        "AVRO": (
            [avro(A, ("c", "int")), avro(("a", "int", 0), ("c", "int"))],
            avro(A, ("c", "int"), B),
            avro(("c", "int")),
        ),
        "JSON": ([js({"a": "number"}), js({"a": "integer"})], js({"a": "integer"}), js({"a": "number"}, True)),
        "PROTOBUF": (
            [proto("int32 a = 1;"), proto("int64 a = 1;")],
            proto("sint32 z = 9; int32 a = 1;"),
            proto("fixed32 a = 1;"),
        ),
    },
    "FULL_TRANSITIVE": {
        "AVRO": ([avro(A), avro(A, B_DEFAULT)], avro(A, B_DEFAULT, ("c", "int", 0)), avro(A, B)),
        "JSON": ([js({"a": "integer"}, STR)], js({"a": "integer", "b": "string"}, STR), js({"a": "integer"}, False)),
        "PROTOBUF": (
            [proto("string a = 1;"), proto("bytes a = 1;")],
            proto("string a = 1; int32 n = 2;"),
            proto("int32 a = 1;"),
        ),
    },
}
TRANSITIVE_AVRO = {"BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"}
_n = itertools.count()


def body(schema_type: str, schema: object) -> dict[str, object]:
    out: dict[str, object] = {"schema": schema if isinstance(schema, str) else json.dumps(schema)}
    if schema_type != "AVRO":
        out["schemaType"] = schema_type
    return out


def subject_with(url: str, level: str, schema_type: str, history: list[object]) -> str:
    subject = f"m{next(_n)}-{level}-{schema_type}"
    assert requests.put(f"{url}/config/{subject}", json={"compatibility": level}).status_code == 200
    for schema in history:
        r = requests.post(f"{url}/subjects/{subject}/versions", json=body(schema_type, schema))
        assert r.status_code == 200, r.text
    return subject


@pytest.mark.parametrize("level", list(CASES))
@pytest.mark.parametrize("schema_type", ["AVRO", "JSON", "PROTOBUF"])
@pytest.mark.parametrize("compatible", [True, False])
def test_matrix(registry_broker, level, schema_type, compatible):
    history, good, bad = CASES[level][schema_type]
    candidate = good if compatible else bad
    if candidate is None:
        pytest.skip("NONE accepts every change")
    url = registry_broker.url
    subject = subject_with(url, level, schema_type, history)
    check = requests.post(f"{url}/compatibility/subjects/{subject}/versions", json=body(schema_type, candidate))
    assert check.json() == {"is_compatible": compatible}, check.text
    if not compatible and level in TRANSITIVE_AVRO and schema_type == "AVRO":
        latest = requests.post(
            f"{url}/compatibility/subjects/{subject}/versions/latest", json=body(schema_type, candidate)
        )
        assert latest.json() == {"is_compatible": True}  # only an older version rules it out
    r = requests.post(f"{url}/subjects/{subject}/versions", json=body(schema_type, candidate))
    assert r.status_code == (200 if compatible else 409), r.text
    if not compatible:
        assert r.json()["error_code"] == 409
