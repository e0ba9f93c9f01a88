"""Avro schemas as Arrow types, and the union of several versions of one schema.

`arrow_type(text, refs)` maps a registered Avro schema (its text and the texts of the schemas it
references) to the Arrow type of a column: record -> struct (nested records too), array -> list,
map -> map<string, _>, enum -> string, fixed -> binary, a union of null and one type -> that type
(every Arrow field is nullable), a union of several non-null types -> string (the value as JSON),
logical types date -> date32, timestamp-millis/-micros -> timestamp (microseconds, UTC),
local-timestamp-millis/-micros -> timestamp without a zone, decimal -> decimal128 (precision up
to 38, else string), uuid -> string, time-millis/-micros -> int32/int64 (since midnight: Spark
has no time type to read them into). A record that contains itself (a linked list) becomes a
string (JSON) where it recurses. The types are those Spark's Arrow conversion gives (microsecond
timestamps, list items named `element`): the data source must yield exactly those.

`merge(a, b)` (`arrow_types`, shared by every schema language) is the type a column must have
to hold the values of both: struct fields by name, the promotions Avro's schema resolution allows
(int -> long -> float -> double, string <-> bytes as string); `SchemaConflict` for two types no
column holds both of (a field whose type changed incompatibly).

`fixup(text, refs)` is what has to be done to fastavro's decoded value before `pyarrow.array`
takes it (uuid objects and times to plain values, multi-type unions and recursion points to
JSON), or None when nothing has to (the common case: no per-value walk).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from .arrow_types import SchemaConflict, list_of, merge, merge_all

__all__ = ["SchemaConflict", "arrow_type", "fixup", "merge", "merge_all", "parse"]


_PRIMITIVES: dict[str, Any] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_NAMED = ("record", "error", "enum", "fixed")


def parse(text: str, refs: tuple[str, ...] = ()) -> tuple[Any, dict[str, Any]]:
    """fastavro's parsed form of a schema (named types by full name after their first use) and
    the named types of its references."""
    import fastavro

    named: dict[str, Any] = {}
    for ref in refs:
        fastavro.parse_schema(json.loads(ref), named_schemas=named, _write_hint=False)
    return fastavro.parse_schema(json.loads(text), named_schemas=named, _write_hint=False), named


class _Walk:
    """One pass over a parsed schema: named types resolved, records being walked on `stack`."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = dict(named)
        self.stack: list[str] = []

    def resolve(self, s: Any) -> Any:
        if isinstance(s, str) and s not in _PRIMITIVES:
            return self.named[s]
        if isinstance(s, dict) and s.get("type") in _NAMED:
            self.named.setdefault(s["name"], s)
        return s


def arrow_type(text: str, refs: tuple[str, ...] = ()) -> pa.DataType:
    parsed, named = parse(text, refs)
    return _arrow(parsed, _Walk(named))


def _nonnull(branches: list) -> list:
    return [b for b in branches if b != "null"]


def _arrow(s: Any, w: _Walk) -> pa.DataType:
    s = w.resolve(s)
    if isinstance(s, str):
        return _PRIMITIVES[s]
    if isinstance(s, list):
        branches = _nonnull(s)
        if not branches:
            return pa.null()
        return _arrow(branches[0], w) if len(branches) == 1 else pa.string()
    logical = _logical(s)
    if logical is not None:
        return logical
    t = s["type"]
    if t in ("record", "error"):
        if s["name"] in w.stack:
            return pa.string()
        w.stack.append(s["name"])
        try:
            return pa.struct([pa.field(f["name"], _arrow(f["type"], w)) for f in s["fields"]])
        finally:
            w.stack.pop()
    if t == "enum":
        return pa.string()
    if t == "fixed":
        return pa.binary()
    if t == "array":
        return list_of(_arrow(s["items"], w))
    if t == "map":
        return pa.map_(pa.string(), _arrow(s["values"], w))
    return _arrow(t, w)  # {"type": "string"} and the like


def _logical(s: dict) -> pa.DataType | None:
    lt = s.get("logicalType")
    if lt == "date":
        return pa.date32()
    if lt in ("timestamp-millis", "timestamp-micros"):
        return pa.timestamp("us", tz="UTC")
    if lt in ("local-timestamp-millis", "local-timestamp-micros"):
        return pa.timestamp("us")
    if lt == "decimal":
        precision = int(s.get("precision", 0))
        return pa.decimal128(precision, int(s.get("scale", 0))) if 0 < precision <= 38 else pa.string()
    if lt == "uuid":
        return pa.string()
    if lt in ("time-millis", "time-micros"):
        return pa.int32() if lt == "time-millis" else pa.int64()
    return None


# ---------------------------------------------------------------------------------------------
# Values


Fix = Callable[[Any], Any]


def fixup(text: str, refs: tuple[str, ...] = ()) -> Fix | None:
    parsed, named = parse(text, refs)
    return _fix(parsed, _Walk(named))


def _json(v: Any) -> Any:
    return None if v is None else json.dumps(v, default=str, sort_keys=True)


def _time(v: Any) -> Any:
    if isinstance(v, _dt.time):
        micros = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        return micros  # rescaled by the caller for time-millis
    return v


def _fix(s: Any, w: _Walk) -> Fix | None:
    s = w.resolve(s)
    if isinstance(s, str):
        return None
    if isinstance(s, list):
        branches = _nonnull(s)
        if len(branches) > 1:
            return _json
        return _fix(branches[0], w) if branches else None
    lt = s.get("logicalType")
    if lt == "uuid" or (lt == "decimal" and not 0 < int(s.get("precision", 0)) <= 38):
        return lambda v: None if v is None else str(v)
    if lt == "time-millis":
        return lambda v: None if v is None else _time(v) // 1000
    if lt == "time-micros":
        return lambda v: None if v is None else _time(v)
    t = s["type"]
    if t in ("record", "error"):
        return _fix_record(s, w)
    if t == "array":
        item = _fix(s["items"], w)
        return None if item is None else (lambda v: None if v is None else [item(x) for x in v])
    if t == "map":
        val = _fix(s["values"], w)
        return None if val is None else (lambda v: None if v is None else {k: val(x) for k, x in v.items()})
    if isinstance(t, (dict, list)) or (isinstance(t, str) and t in w.named):
        return _fix(t, w)
    return None


def _fix_record(s: dict, w: _Walk) -> Fix | None:
    if s["name"] in w.stack:
        return _json
    w.stack.append(s["name"])
    try:
        fields = [(f["name"], _fix(f["type"], w)) for f in s["fields"]]
    finally:
        w.stack.pop()
    fixes = [(n, f) for n, f in fields if f is not None]
    if not fixes:
        return None

    def fix(v: Any) -> Any:
        if v is None:
            return None
        out = dict(v)
        for name, f in fixes:
            out[name] = f(out.get(name))
        return out

    return fix
