"""JSON values in typed columns: JSON Schema -> Arrow type, and JSON values -> that type.

`arrow_type(text, refs)` maps a registered JSON Schema (its text and the (name, text) of the
schemas it references) to the Arrow type of a column:

- an object (`"type": "object"`, or `properties` without a type) -> a struct of its
  `properties` in their order (properties it does not declare - `additionalProperties`,
  `patternProperties` - are not kept); an object with no `properties` but an
  `additionalProperties` schema -> map<string, that>;
- `"array"` with one `items` schema -> list of it (no `items`: list of JSON text);
- `string` -> string, `integer` -> int64, `number` -> float64, `boolean` -> bool (`format`s such
  as `date-time` stay strings); a type list of null and one type -> that type (every Arrow field
  is nullable), of integer and number -> float64;
- `$ref` -> the schema it names: `#/...` inside the same document, else a referenced schema (by
  its reference name, its `$id`, or the name resolved against the referring document's `$id`),
  with an optional `#/...` pointer into it; a schema that contains itself becomes a string
  where it recurses;
- `oneOf` / `anyOf` whose branches other than `{"type": "null"}` map to one type -> that type;
  `allOf` -> the union of its branches (`arrow_types.merge`);
- anything else (several types, tuples, `not`, a schema with no type, ...) -> string, holding
  the value's JSON text.

`conformer(t)` gives, per column type, the function that turns a parsed JSON value into the
Python value `pyarrow.array` takes for `t` (compiled once per type: the walk follows the type,
not the value). It never raises: a value that does not fit its position (a string where the
type says int64, an array where it says struct, an integer outside int64) becomes null there
and the conformer reports `value.a.b: expected int64, got str`; a string position takes any
other JSON value as its JSON text; an integral float fits int64; object members the type has no
field for are dropped and, with `report_new`, reported (`json_infer`: the inferred type grows).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .arrow_types import SchemaConflict, list_of, merge

_SCALARS: dict[str, pa.DataType] = {
    "string": pa.string(),
    "integer": pa.int64(),
    "number": pa.float64(),
    "boolean": pa.bool_(),
}


class _Docs:
    """The documents `$ref`s may name: the schema itself and its references."""

    def __init__(self, root: Any, refs: tuple[tuple[str, str], ...]) -> None:
        self.root = root
        self.by_name: dict[str, Any] = {}
        for name, text in refs:
            doc = json.loads(text)
            self.by_name[name] = doc
            if isinstance(doc, dict) and isinstance(doc.get("$id"), str):
                self.by_name.setdefault(doc["$id"], doc)

    def find(self, ref: str, base: str) -> tuple[Any, str] | None:
        """The document `ref` (without its fragment) names, and its base URI."""
        if not ref:
            return None
        for name in (ref, urllib.parse.urljoin(base, ref) if base else ref):
            if name in self.by_name:
                doc = self.by_name[name]
                return doc, _base(doc, name)
        tail = ref.rstrip("/").rpartition("/")[2]
        for name, doc in self.by_name.items():
            if name.rstrip("/").rpartition("/")[2] == tail:
                return doc, _base(doc, name)
        return None


def _base(doc: Any, default: str) -> str:
    return doc["$id"] if isinstance(doc, dict) and isinstance(doc.get("$id"), str) else default


def _pointer(doc: Any, fragment: str) -> Any:
    """The part of `doc` a JSON pointer fragment names; KeyError when none."""
    node = doc
    for raw in fragment.lstrip("/").split("/") if fragment.strip("/") else []:
        part = urllib.parse.unquote(raw).replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


@dataclass
class _Walk:
    docs: _Docs
    stack: list[tuple[int, str]] = field(default_factory=list)  # (id of the document, pointer)


def arrow_type(text: str, refs: tuple[tuple[str, str], ...] = ()) -> pa.DataType:
    root = json.loads(text)
    walk = _Walk(_Docs(root, refs), [(id(root), "")])
    return _or_text(_type(root, walk, root, _base(root, "")))


def _or_text(t: pa.DataType | None) -> pa.DataType:
    return pa.string() if t is None else t


def _type(s: Any, w: _Walk, doc: Any, base: str) -> pa.DataType | None:
    """The type of schema `s` (inside `doc`, whose base URI is `base`); None: unconstrained."""
    if not isinstance(s, dict):
        return None  # true / false
    if isinstance(s.get("$ref"), str):
        return _ref(s["$ref"], w, doc, base)
    if "allOf" in s:
        return _all_of(s, w, doc, base)
    for key in ("oneOf", "anyOf"):
        if key in s:
            return _one_of(s[key], w, doc, base)
    t = s.get("type")
    if isinstance(t, list):
        kinds = [k for k in t if k != "null"]
        if len(kinds) == 1:
            return _type({**s, "type": kinds[0]}, w, doc, base)
        return pa.float64() if kinds and set(kinds) <= {"integer", "number"} else pa.string()
    if t == "object" or (t is None and isinstance(s.get("properties"), dict)):
        return _object(s, w, doc, base)
    if t == "array":
        items = s.get("items")
        if isinstance(items, dict) or items is None:
            return list_of(_or_text(_type(items, w, doc, base)))
        return pa.string()  # a tuple
    if isinstance(t, str) and t in _SCALARS:
        return _SCALARS[t]
    if t is None and (isinstance(s.get("enum"), list) or "const" in s):
        return pa.string()
    return None if t is None else pa.string()


def _object(s: dict, w: _Walk, doc: Any, base: str) -> pa.DataType:
    props = s.get("properties")
    if isinstance(props, dict) and props:
        return pa.struct([pa.field(name, _or_text(_type(sub, w, doc, base))) for name, sub in props.items()])
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        return pa.map_(pa.string(), _or_text(_type(extra, w, doc, base)))
    return pa.string()


def _ref(ref: str, w: _Walk, doc: Any, base: str) -> pa.DataType | None:
    where, _, fragment = ref.partition("#")
    if where:
        found = w.docs.find(where, base)
        if found is None:
            return pa.string()
        doc, base = found
    try:
        target = _pointer(doc, fragment)
    except (KeyError, IndexError, ValueError, TypeError):
        return pa.string()  # an anchor name or a pointer to nothing: kept as JSON text
    key = (id(doc), fragment)
    if key in w.stack:
        return pa.string()  # the schema contains itself
    w.stack.append(key)
    try:
        return _type(target, w, doc, base)
    finally:
        w.stack.pop()


def _all_of(s: dict, w: _Walk, doc: Any, base: str) -> pa.DataType | None:
    own = {k: v for k, v in s.items() if k != "allOf"}
    types = [_type(b, w, doc, base) for b in s["allOf"]]
    if "type" in own or "properties" in own:
        types.append(_type(own, w, doc, base))
    out: pa.DataType | None = None
    for t in types:
        if t is None:
            continue
        try:
            out = t if out is None else merge(out, t)
        except SchemaConflict:
            return pa.string()
    return out


def _one_of(branches: Any, w: _Walk, doc: Any, base: str) -> pa.DataType | None:
    if not isinstance(branches, list):
        return pa.string()
    found = [_type(b, w, doc, base) for b in branches if b != {"type": "null"}]
    types = [t for t in found if t is not None]
    if not types or len(types) < len(found):
        return None  # a branch that is not constrained: any value
    first = types[0]
    return first if all(t.equals(first) for t in types[1:]) else pa.string()


# ---------------------------------------------------------------------------------------------
# Values


class Outcome:
    """What conforming one value found: fields that did not fit (`errors`), and object members
    the type has no field for (`new`: (path of the struct, {name: value}); only with report_new)."""

    __slots__ = ("errors", "new", "report_new")

    def __init__(self, report_new: bool = False) -> None:
        self.errors: list[str] = []
        self.new: list[tuple[tuple[str, ...] | None, Any]] = []
        self.report_new = report_new

    def conflict(self, path: tuple[str, ...], t: pa.DataType, v: Any) -> None:
        where = ".".join(path).replace(".[]", "[]").replace(".{}", "{}") or "(the value)"
        self.errors.append(f"{where}: expected {t}, got {type(v).__name__}")


Conform = Callable[[Any, Outcome], Any]
_INT64 = (-(1 << 63), (1 << 63) - 1)


def conformer(t: pa.DataType) -> Conform:
    """The function fitting a parsed JSON value (not None) to `t`, reporting into an `Outcome`."""
    return _compile(t, ())


def _compile(t: pa.DataType, path: tuple[str, ...]) -> Conform:
    if pa.types.is_struct(t):
        return _struct(t, path)
    if pa.types.is_list(t):
        item = _compile(t.value_type, (*path, "[]"))

        def as_list(v: Any, o: Outcome) -> Any:
            if not isinstance(v, list):
                return o.conflict(path, t, v)
            return [None if x is None else item(x, o) for x in v]

        return as_list
    if pa.types.is_map(t):
        value = _compile(t.item_type, (*path, "{}"))

        def as_map(v: Any, o: Outcome) -> Any:
            if not isinstance(v, dict):
                return o.conflict(path, t, v)
            return {k: None if x is None else value(x, o) for k, x in v.items()}

        return as_map
    return _scalar(t, path)


def _struct(t: pa.DataType, path: tuple[str, ...]) -> Conform:
    fields = [(f.name, _compile(f.type, (*path, f.name))) for f in t]
    known = frozenset(name for name, _ in fields)

    def as_struct(v: Any, o: Outcome) -> Any:
        if not isinstance(v, dict):
            return o.conflict(path, t, v)
        out = {}
        for name, fit in fields:
            x = v.get(name)
            out[name] = None if x is None else fit(x, o)
        if o.report_new and not known.issuperset(v):
            o.new.append((path, {k: x for k, x in v.items() if k not in known}))
        return out

    return as_struct


def _scalar(t: pa.DataType, path: tuple[str, ...]) -> Conform:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return lambda v, o: v if type(v) is str else json.dumps(v, ensure_ascii=False)
    if pa.types.is_integer(t):

        def as_int(v: Any, o: Outcome) -> Any:
            if type(v) is float and v.is_integer():
                v = int(v)
            if type(v) is int and _INT64[0] <= v <= _INT64[1]:
                return v
            return o.conflict(path, t, v)

        return as_int
    if pa.types.is_floating(t):
        return lambda v, o: v if type(v) in (int, float) else o.conflict(path, t, v)
    if pa.types.is_boolean(t):
        return lambda v, o: v if type(v) is bool else o.conflict(path, t, v)
    return lambda v, o: v  # a type JSON does not produce (a union with another language's): pyarrow decides


# ---------------------------------------------------------------------------------------------
# Inferred types (`--value-format json`, `json_infer`)


def infer(v: Any) -> pa.DataType | None:
    """The type of one parsed JSON value; None where nothing is known (null, [], {}): such a
    field is left out until a value shows its type (Parquet has no empty struct, Spark no
    column of nulls only)."""
    if v is None:
        return None
    if type(v) is bool:
        return pa.bool_()
    if type(v) is int:
        return pa.int64() if _INT64[0] <= v <= _INT64[1] else pa.float64()
    if type(v) is float:
        return pa.float64()
    if type(v) is str:
        return pa.string()
    if isinstance(v, list):
        item: pa.DataType | None = None
        for x in v:
            item = widen(item, infer(x))
        return None if item is None else list_of(item)
    if isinstance(v, dict):
        fields = [(k, t) for k, x in v.items() if (t := infer(x)) is not None]
        return pa.struct(fields) if fields else None
    return pa.string()


def widen(a: pa.DataType | None, b: pa.DataType | None) -> pa.DataType | None:
    """The inferred type of values of types `a` and `b`, before either is recorded: structs by
    field name, list items widened, int64 and float64 as float64, any other two types as a
    string of JSON text."""
    if a is None or (b is not None and a.equals(b)):
        return b if a is None else a
    if b is None:
        return a
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        fields = {f.name: f.type for f in a}
        for f in b:
            fields[f.name] = widen(fields.get(f.name), f.type)
        return pa.struct(list(fields.items()))
    if pa.types.is_list(a) and pa.types.is_list(b):
        return list_of(widen(a.value_type, b.value_type))
    if {a, b} == {pa.int64(), pa.float64()}:
        return pa.float64()
    return pa.string()


def extend(recorded: pa.DataType | None, seen: pa.DataType | None) -> pa.DataType | None:
    """`recorded` with the fields of `seen` it lacks (in structs, list items, map values): a
    recorded type only gains fields; a field `seen` gives another type keeps its recorded one
    (its values that do not fit are then null and flagged, `conformer`)."""
    if recorded is None or seen is None:
        return seen if recorded is None else recorded
    if pa.types.is_struct(recorded) and pa.types.is_struct(seen):
        fields = {f.name: f.type for f in recorded}
        for f in seen:
            fields[f.name] = extend(fields.get(f.name), f.type)
        return pa.struct(list(fields.items()))
    if pa.types.is_list(recorded) and pa.types.is_list(seen):
        return list_of(extend(recorded.value_type, seen.value_type))
    if pa.types.is_map(recorded) and pa.types.is_map(seen):
        return pa.map_(recorded.key_type, extend(recorded.item_type, seen.item_type))
    return recorded


def new_members(found: list[tuple[tuple[str, ...] | None, Any]]) -> tuple[pa.DataType | None, list[str]]:
    """The type of the members an `Outcome` found the column type lacks (`Outcome.new`; a path
    None: the whole value, for a column whose type is not known yet), as a type `extend` adds to
    the column's, and their names (`a.b`, `c[].d`); (None, []) when none has a known type."""
    out: pa.DataType | None = None
    names: list[str] = []
    for path, members in found:
        if path is None:
            t = infer(members)
            if t is not None:
                out, names = widen(out, t), [*names, "(the value)"]
            continue
        t = infer(members)
        if t is None:
            continue
        prefix = ".".join(path).replace(".[]", "[]").replace(".{}", "{}")
        names += [f"{prefix}.{f.name}" if prefix else f.name for f in t]
        for step in reversed(path):
            t = list_of(t) if step == "[]" else pa.map_(pa.string(), t) if step == "{}" else pa.struct([(step, t)])
        out = widen(out, t)
    return out, names
