"""The Arrow types of typed columns, whatever schema language they come from: the union of two
types, and their JSON form in the manifest.

`merge(a, b)` is the type a column must have to hold the values of both: struct fields by name
(those of `a` first, in order, then the new ones of `b`), list items and map keys and values
merged, the numeric promotions every source allows (int32 -> int64 -> float32 -> float64; int64
with float32 gives float64), string <-> binary as string; `SchemaConflict` for two types no
column holds both of (a field whose type changed incompatibly). A null type is the identity.

`to_json(t)` / `from_json(doc)` write and read a type as plain JSON (`{"struct": [[name, type],
...]}`, `{"list": type}`, `{"map": [key, value]}`, `"int64"`, `{"timestamp": "UTC"}`,
`{"decimal": [precision, scale]}`, ...) so the manifest records a column's union readably and a
later run only extends it. Only the types the typed columns use are written; `ValueError` for
another.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


class SchemaConflict(ValueError):
    """Two versions give a field types that no one column holds both of."""


def list_of(item: pa.DataType) -> pa.DataType:
    """A list type as Spark's Arrow conversion names it (the item field is `element`)."""
    return pa.list_(pa.field("element", item))


_NUMERIC = [pa.int32(), pa.int64(), pa.float32(), pa.float64()]


def merge(a: pa.DataType, b: pa.DataType, path: str = "") -> pa.DataType:
    if a.equals(b):
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        fields = {f.name: f.type for f in a}
        for f in b:
            fields[f.name] = merge(fields[f.name], f.type, f"{path}.{f.name}") if f.name in fields else f.type
        return pa.struct([pa.field(n, t) for n, t in fields.items()])
    if pa.types.is_map(a) and pa.types.is_map(b):
        return pa.map_(merge(a.key_type, b.key_type, path + "{}"), merge(a.item_type, b.item_type, path + "[]"))
    if pa.types.is_list(a) and pa.types.is_list(b):
        return list_of(merge(a.value_type, b.value_type, path + "[]"))
    if a in _NUMERIC and b in _NUMERIC:
        wider = max(_NUMERIC.index(a), _NUMERIC.index(b))
        # int -> float keeps 24 bits: Avro allows it, so does this, but long -> float doubles
        return pa.float64() if {a, b} == {pa.int64(), pa.float32()} else _NUMERIC[wider]
    if {a, b} == {pa.string(), pa.binary()}:
        return pa.string()
    raise SchemaConflict(f"field {path.lstrip('.') or '(the value)'}: {a} and {b} do not fit one column")


def merge_all(types: list[pa.DataType]) -> pa.DataType:
    out: pa.DataType = pa.null()
    for t in types:
        out = merge(out, t)
    return out


# ---------------------------------------------------------------------------------------------
# The manifest's form

_NAMES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date32": pa.date32(),
}
_BY_TYPE = {t: n for n, t in _NAMES.items()}


def to_json(t: pa.DataType) -> Any:
    if t in _BY_TYPE:
        return _BY_TYPE[t]
    if pa.types.is_struct(t):
        return {"struct": [[f.name, to_json(f.type)] for f in t]}
    if pa.types.is_list(t):
        return {"list": to_json(t.value_type)}
    if pa.types.is_map(t):
        return {"map": [to_json(t.key_type), to_json(t.item_type)]}
    if pa.types.is_timestamp(t) and t.unit == "us":
        return {"timestamp": t.tz}
    if pa.types.is_decimal128(t):
        return {"decimal": [t.precision, t.scale]}
    raise ValueError(f"no JSON form for the Arrow type {t}")


def from_json(doc: Any) -> pa.DataType:
    if isinstance(doc, str):
        return _NAMES[doc]
    (kind, arg), *_ = doc.items()
    if kind == "struct":
        return pa.struct([pa.field(name, from_json(sub)) for name, sub in arg])
    if kind == "list":
        return list_of(from_json(arg))
    if kind == "map":
        return pa.map_(from_json(arg[0]), from_json(arg[1]))
    if kind == "timestamp":
        return pa.timestamp("us", tz=arg)
    if kind == "decimal":
        return pa.decimal128(int(arg[0]), int(arg[1]))
    raise ValueError(f"not a typed column's type: {doc!r}")
