"""AVRO schemas: parsing (fastavro) and Avro's schema resolution rules as compatibility.

`parse(text, references)` validates a schema (the named types of its references, in order, are
known to it) and answers a `ParsedAvro`. `incompatibilities(reader, writer)` lists why data
written with `writer` cannot be read with `reader` under the Avro specification's resolution
rules (empty: compatible), as Avro's Java `SchemaCompatibility` (which Confluent uses) decides:

- primitives match themselves; promotions int -> long, float, double; long -> float, double;
  float -> double; string <-> bytes
- records: named alike (full or short name, or a reader alias); every reader field is found in
  the writer (by name or one of its aliases) and its types resolve, or has a default; writer
  fields the reader lacks are skipped
- enums: every writer symbol is a reader symbol, unless the reader has a default symbol
- fixed: same name and size; arrays: items resolve; maps: values resolve
- unions: every branch of a writer union resolves against the reader; a writer non-union
  resolves against some branch of a reader union
- named and recursive types are followed by name; a (reader, writer) pair being checked is
  assumed compatible when met again (recursion ends)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import invalid_schema

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}


@dataclass(frozen=True)
class ParsedAvro:
    schema: Any  # fastavro's parsed form: named types by full name after their first use
    named: dict[str, Any]  # full name -> definition (references' types included)
    canonical: str  # Avro's Parsing Canonical Form (what `normalize=true` compares)


def parse(text: str, references: list[tuple[str, str]] | None = None) -> ParsedAvro:
    """Parse and validate; `references`: (name, text) of the referenced schemas, dependencies
    first. Raises RegistryError 42201 on a schema that is not valid Avro."""
    import fastavro

    named: dict[str, Any] = {}
    try:
        for _, ref in references or ():
            fastavro.parse_schema(json.loads(ref), named_schemas=named, _write_hint=False)
        parsed = fastavro.parse_schema(json.loads(text), named_schemas=named, _write_hint=False)
        canonical = json.dumps(_canonical(parsed), separators=(",", ":"))
        bad = _bad_defaults(parsed, named)
    except Exception as e:  # fastavro raises its own classes too (UnknownType, SchemaParseException)
        raise invalid_schema(f"{type(e).__name__}: {e}") from e
    if bad:
        raise invalid_schema(bad)
    return ParsedAvro(parsed, named, canonical)


def _bad_defaults(schema: Any, named: dict[str, Any], seen: set[str] | None = None) -> str | None:
    """The first field whose default is not a value of its type (a union's: of its first
    branch), as Avro's Java parser with default validation (Confluent's) refuses it."""
    seen = set() if seen is None else seen
    schema = named.get(schema, schema) if isinstance(schema, str) else schema
    if isinstance(schema, list):
        return next((b for b in (_bad_defaults(x, named, seen) for x in schema) if b), None)
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind in ("record", "error"):
        if schema.get("name") in seen:
            return None
        seen.add(str(schema.get("name")))
        for f in schema.get("fields", ()):
            if "default" in f and not _valid(f["default"], f["type"], named):
                return f"invalid default for field {f['name']!r} of {schema.get('name')}: {f['default']!r}"
            bad = _bad_defaults(f["type"], named, seen)
            if bad:
                return bad
        return None
    if kind in ("array", "map"):
        return _bad_defaults(schema["items" if kind == "array" else "values"], named, seen)
    return _bad_defaults(kind, named, seen) if isinstance(kind, (dict, list)) else None


_PLAIN: dict[str, Any] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31,
    "long": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63,
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "double": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bytes": lambda v: isinstance(v, str),
    "string": lambda v: isinstance(v, str),
}


def _valid(value: Any, schema: Any, named: dict[str, Any], depth: int = 0) -> bool:
    """Whether a JSON default is a value of the schema (bounded depth: a recursive default)."""
    if depth > 64:
        return True
    schema = named.get(schema, schema) if isinstance(schema, str) else schema
    if isinstance(schema, list):
        return bool(schema) and _valid(value, schema[0], named, depth + 1)
    if isinstance(schema, str):
        return bool(_PLAIN.get(schema, lambda v: True)(value))
    kind = schema.get("type")
    if isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in _COMPLEX):
        return _valid(value, kind, named, depth + 1)
    if kind == "enum":
        return value in schema.get("symbols", ())
    if kind == "fixed":
        return isinstance(value, str) and len(value) == schema.get("size")
    if kind == "array":
        return isinstance(value, list) and all(_valid(v, schema["items"], named, depth + 1) for v in value)
    if kind == "map":
        return isinstance(value, dict) and all(_valid(v, schema["values"], named, depth + 1) for v in value.values())
    if not isinstance(value, dict):
        return False
    return all(
        _valid(value[f["name"]], f["type"], named, depth + 1) if f["name"] in value else "default" in f
        for f in schema.get("fields", ())
    )


_CANONICAL_KEYS = ("name", "type", "fields", "symbols", "items", "values", "size")


def _canonical(schema: Any) -> Any:
    """Avro's Parsing Canonical Form of a parsed schema (full names, only the attributes that
    matter to reading, in the specification's order); named types referenced by name stay names."""
    if isinstance(schema, list):
        return [_canonical(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if isinstance(schema.get("type"), str) and schema["type"] in PRIMITIVES:
        return schema["type"]
    out: dict[str, Any] = {}
    for key in _CANONICAL_KEYS:
        if key not in schema:
            continue
        value = schema[key]
        if key == "fields":
            value = [{"name": f["name"], "type": _canonical(f["type"])} for f in value]
        elif key in ("type", "items", "values"):
            value = _canonical(value)
        out[key] = value
    return out


def incompatibilities(reader: ParsedAvro, writer: ParsedAvro) -> list[str]:
    """Why `reader` cannot read what `writer` wrote; empty when it can."""
    return _Resolver(reader.named, writer.named).check(reader.schema, writer.schema, "/")


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        t = schema.get("type")
        return t if isinstance(t, str) else _kind(t)
    return str(schema)


def _short(name: str) -> str:
    return name.rpartition(".")[2]


class _Resolver:
    def __init__(self, reader_named: dict[str, Any], writer_named: dict[str, Any]) -> None:
        self.rnamed = reader_named
        self.wnamed = writer_named
        self.assumed: set[tuple[int, int]] = set()

    def _deref(self, schema: Any, named: dict[str, Any]) -> Any:
        if isinstance(schema, str) and schema not in PRIMITIVES:
            return named.get(schema, schema)
        if isinstance(schema, dict) and isinstance(schema.get("type"), (dict, list)):
            return self._deref(schema["type"], named)
        if isinstance(schema, dict) and isinstance(schema.get("type"), str) and schema["type"] not in _COMPLEX:
            return self._deref(schema["type"], named)  # {"type": "int", "logicalType": ...} or a named ref
        return schema

    def check(self, reader: Any, writer: Any, path: str) -> list[str]:
        r, w = self._deref(reader, self.rnamed), self._deref(writer, self.wnamed)
        pair = (id(r), id(w))
        if pair in self.assumed:
            return []
        if isinstance(r, dict) and isinstance(w, dict):
            self.assumed.add(pair)
        rk, wk = _kind(r), _kind(w)
        if wk == "union":
            return [m for i, branch in enumerate(w) for m in self.check(r, branch, f"{path}{i}/")]
        if rk == "union":
            if any(not self.check(branch, w, path) for branch in r):
                return []
            return [f"TYPE_MISMATCH at {path}: reader union lacks writer type {_name_of(w)}"]
        if rk != wk:
            if rk in PROMOTIONS.get(wk, ()):
                return []
            return [f"TYPE_MISMATCH at {path}: reader type {rk} is not compatible with writer type {wk}"]
        return _COMPARE.get(rk, _same)(self, r, w, path)

    def _names_match(self, r: dict[str, Any], w: dict[str, Any]) -> bool:
        rname, wname = str(r.get("name", "")), str(w.get("name", ""))
        aliases = {str(a) for a in r.get("aliases", ())}
        return (
            rname == wname
            or _short(rname) == _short(wname)
            or wname in aliases
            or _short(wname) in {_short(a) for a in aliases}
        )

    def record(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        if not self._names_match(r, w):
            return [f"NAME_MISMATCH at {path}: expected {w.get('name')}, found {r.get('name')}"]
        wfields = {f["name"]: f for f in w.get("fields", ())}
        out: list[str] = []
        for f in r.get("fields", ()):
            names = [f["name"], *f.get("aliases", ())]
            wf = next((wfields[n] for n in names if n in wfields), None)
            if wf is None:
                if "default" not in f:
                    out.append(f"READER_FIELD_MISSING_DEFAULT_VALUE at {path}fields/{f['name']}: {f['name']}")
                continue
            out.extend(self.check(f["type"], wf["type"], f"{path}fields/{f['name']}/"))
        return out

    def enum(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        if not self._names_match(r, w):
            return [f"NAME_MISMATCH at {path}: expected {w.get('name')}, found {r.get('name')}"]
        missing = [s for s in w.get("symbols", ()) if s not in r.get("symbols", ())]
        if missing and "default" not in r:
            return [f"MISSING_ENUM_SYMBOLS at {path}symbols: {missing}"]
        return []

    def fixed(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        if not self._names_match(r, w):
            return [f"NAME_MISMATCH at {path}: expected {w.get('name')}, found {r.get('name')}"]
        if r.get("size") != w.get("size"):
            return [f"FIXED_SIZE_MISMATCH at {path}size: expected {w.get('size')}, found {r.get('size')}"]
        return []

    def array(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        return self.check(r["items"], w["items"], f"{path}items/")

    def map(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        return self.check(r["values"], w["values"], f"{path}values/")


def _same(resolver: _Resolver, r: Any, w: Any, path: str) -> list[str]:
    return []


def _name_of(schema: Any) -> str:
    if isinstance(schema, dict):
        return str(schema.get("name") or schema.get("type"))
    return str(schema)


_COMPLEX = frozenset({"record", "error", "enum", "fixed", "array", "map"})
_COMPARE = {
    "record": _Resolver.record,
    "error": _Resolver.record,
    "enum": _Resolver.enum,
    "fixed": _Resolver.fixed,
    "array": _Resolver.array,
    "map": _Resolver.map,
}
