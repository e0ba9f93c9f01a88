"""JSON schemas: validation of the schema document (jsonschema) and compatibility.

`incompatibilities(reader, writer)` lists why a document valid under `writer` may be invalid
under `reader` (empty: every writer document is a reader document), following the rules Confluent
documents for its JSON Schema compatibility (the names of its difference types head each message):

- types: the reader's types must cover the writer's (`number` covers `integer`); a reader type
  on a writer without one narrows (TYPE_NARROWED)
- enum / const: the reader's values must include the writer's (ENUM_ARRAY_NARROWED)
- bounds: maxLength, maxItems, maxProperties, maximum (and exclusive) may not decrease, their min
  counterparts may not increase, nor be added; a new or changed `pattern` narrows; a new
  `multipleOf` must divide the writer's
- objects, by content model: a property the writer has and the reader lacks is read by the
  reader's additionalProperties (closed: PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL); a property
  the reader adds is checked against what the writer allowed there (its additionalProperties:
  open -> PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL, whatever the property's schema; a schema -> the
  property must accept what it accepts; closed -> fine); closing an open model is
  ADDITIONAL_PROPERTIES_REMOVED; a property the reader requires that the writer did not require
  is REQUIRED_PROPERTY_ADDED (unless it has a default)
- arrays: items resolve (tuples position by position, with additionalItems); uniqueItems may not
  be added
- a `not` the reader adds or changes narrows (NOT_TYPE_EXTENDED); `patternProperties` of the
  writer say what a property the reader adds may hold
- oneOf / anyOf: every writer branch must resolve against the reader; a writer that is not a
  combination must resolve against some reader branch; allOf: each reader branch must hold
- boolean schemas are judged by the values they accept (a `false` writer writes nothing, so any
  reader reads it), where Confluent's checker calls some such changes TYPE_CHANGED
- `$ref`s are followed, local ones and into referenced schemas, each (reader, writer) pair once
  (recursion ends)
- a schema without `$schema` is read as draft 7, as Confluent's and Karapace's registries do
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import invalid_schema


@dataclass(frozen=True)
class ParsedJson:
    schema: Any
    canonical: str
    refs: dict[str, Any] = field(default_factory=dict)  # a referenced schema's name -> its document


def parse(text: str, references: list[tuple[str, str]] | None = None) -> ParsedJson:
    """Parse and check the document (and those it references) against its metaschema; 42201
    when one is not a schema. A `$ref` to a reference's name (its URL, as the referencing
    schema writes it) reads that document."""
    import jsonschema

    refs: dict[str, Any] = {}
    try:
        for name, ref in [*(references or ()), ("", text)]:
            doc = json.loads(ref)
            if not isinstance(doc, (dict, bool)):
                raise invalid_schema("a JSON schema is an object or a boolean")
            # no $schema: draft 7, as Confluent's and Karapace's registries read it
            jsonschema.validators.validator_for(doc, default=jsonschema.Draft7Validator).check_schema(doc)
            refs[name] = doc
    except (ValueError, jsonschema.exceptions.SchemaError) as e:
        raise invalid_schema(str(e).splitlines()[0]) from e
    doc = refs.pop("")
    return ParsedJson(doc, json.dumps(doc, separators=(",", ":"), sort_keys=True), refs)


def incompatibilities(reader: ParsedJson, writer: ParsedJson) -> list[str]:
    return _Checker(reader, writer).check(reader.schema, writer.schema, "#")


_NUMERIC = {"integer": {"integer", "number"}}


def _any_value(schema: Any) -> Any:
    """`{}` and `true` are one schema (every value)."""
    return True if schema == {} else schema


def _matching(patterns: Any, name: str) -> list[Any]:
    """The schemas of the `patternProperties` whose regular expression finds `name`."""
    if not isinstance(patterns, dict):
        return []
    out = []
    for pattern, schema in patterns.items():
        try:
            if re.search(pattern, name):
                out.append(schema)
        except re.error:
            continue
    return out


_UPPER = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum")
_LOWER = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum")


def _types(s: dict[str, Any]) -> set[str] | None:
    t = s.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


class _Checker:
    """`roots`: the documents the reader's and the writer's schemas being compared sit in (a
    local `$ref` is resolved in its own document; one into a reference moves to that document)."""

    def __init__(self, reader: ParsedJson, writer: ParsedJson) -> None:
        self.refs = (reader.refs, writer.refs)
        self.roots = (reader.schema, writer.schema)
        self.seen: set[tuple[int, int]] = set()
        self.alive: list[Any] = []  # what `seen` names stays alive (a freed dict's id is reused)

    @staticmethod
    def _resolve(s: Any, root: Any, refs: dict[str, Any]) -> tuple[Any, Any]:
        """(the schema a chain of `$ref`s ends at, its document); an unknown target is `{}`."""
        for _ in range(32):  # a chain of $refs, bounded
            if not (isinstance(s, dict) and isinstance(s.get("$ref"), str)):
                return s, root
            url, _, pointer = s["$ref"].partition("#")
            if url:
                root = refs.get(url, refs.get(url.rpartition("/")[2], {}))
            target = root
            for part in pointer.split("/")[1:]:
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            s = target if target is not None else {}
        return s, root

    def check(self, r: Any, w: Any, path: str) -> list[str]:
        (r, rroot), (w, wroot) = (
            self._resolve(r, self.roots[0], self.refs[0]),
            self._resolve(w, self.roots[1], self.refs[1]),
        )
        saved, self.roots = self.roots, (rroot, wroot)
        try:
            return self._check(r, w, path)
        finally:
            self.roots = saved

    def _check(self, r: Any, w: Any, path: str) -> list[str]:
        if r is True or r == {} or w is False:
            return []
        if r is False:
            return [f"TYPE_NARROWED at {path}: the reader accepts nothing"]
        if w is True:
            w = {}
        if (id(r), id(w)) in self.seen:
            return []
        self.seen.add((id(r), id(w)))
        self.alive += (r, w)
        for combo in ("oneOf", "anyOf"):
            if isinstance(w.get(combo), list):
                rest = {k: v for k, v in w.items() if k != combo}
                branches = [{**rest, **b} if isinstance(b, dict) else rest for b in w[combo] if b is not False]
                return [m for i, b in enumerate(branches) for m in self.check(r, b, f"{path}/{combo}/{i}")]
        for combo in ("oneOf", "anyOf"):
            if isinstance(r.get(combo), list):
                if any(not self.check(b, w, path) for b in r[combo]):
                    return self.check({k: v for k, v in r.items() if k != combo}, w, path)
                return [f"COMBINED_TYPE_SUBSCHEMAS_CHANGED at {path}: no reader branch accepts the writer"]
        out = [m for i, b in enumerate(r.get("allOf", ())) for m in self.check(b, w, f"{path}/allOf/{i}")]
        return (
            out
            + self._types(r, w, path)
            + self._values(r, w, path)
            + self._object(r, w, path)
            + self._array(r, w, path)
        )

    def _types(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        rt, wt = _types(r), _types(w)
        if rt is None:
            return []
        if wt is None:
            return [f"TYPE_NARROWED at {path}: reader types {sorted(rt)} on a writer of any type"]
        covered = set(rt) | ({"integer"} if "number" in rt else set())
        lost = wt - covered
        return [f"TYPE_CHANGED at {path}: writer types {sorted(lost)} not in reader types {sorted(rt)}"] if lost else []

    def _values(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        out: list[str] = []
        for key in ("enum", "const"):
            if key in r:
                rv = r[key] if key == "enum" else [r[key]]
                wv = w.get("enum", [w["const"]] if "const" in w else None)
                if wv is None or any(v not in rv for v in wv):
                    out.append(f"ENUM_ARRAY_NARROWED at {path}/{key}")
        for key in _UPPER:
            if key in r and (key not in w or w[key] > r[key]):
                out.append(f"{key.upper()}_DECREASED at {path}/{key}")
        for key in _LOWER:
            if key in r and (key not in w or w[key] < r[key]):
                out.append(f"{key.upper()}_INCREASED at {path}/{key}")
        if "not" in r and _any_value(r["not"]) != _any_value(w.get("not")):
            out.append(f"NOT_TYPE_EXTENDED at {path}/not")
        if "pattern" in r and r.get("pattern") != w.get("pattern"):
            out.append(f"PATTERN_CHANGED at {path}/pattern")
        if "multipleOf" in r and ("multipleOf" not in w or w["multipleOf"] % r["multipleOf"]):
            out.append(f"MULTIPLE_OF_CHANGED at {path}/multipleOf")
        return out

    def _object(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        rprops, wprops = r.get("properties") or {}, w.get("properties") or {}
        rextra, wextra = r.get("additionalProperties", True), w.get("additionalProperties", True)
        out: list[str] = []
        for name, wp in wprops.items():
            where = f"{path}/properties/{name}"
            if name in rprops:
                out.extend(self.check(rprops[name], wp, where))
            elif rextra is False:
                out.append(f"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL at {where}")
            elif isinstance(rextra, dict) and self.check(rextra, wp, where):
                out.append(f"PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at {where}")
        for name, rp in rprops.items():
            where = f"{path}/properties/{name}"
            if name in wprops:
                continue
            patterns = _matching(w.get("patternProperties"), name)
            if patterns:  # the writer's pattern properties said what it may hold there
                if any(self.check(rp, ps, where) for ps in patterns):
                    out.append(f"PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at {where}")
            elif wextra is False:
                continue
            elif not isinstance(wextra, dict):  # fully open: old data may hold anything under that name
                out.append(f"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at {where}")
            elif self.check(rp, wextra, where):
                out.append(f"PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at {where}")
        if rextra is False and wextra is not False:
            out.append(f"ADDITIONAL_PROPERTIES_REMOVED at {path}/additionalProperties")
        elif isinstance(rextra, dict) and wextra is not False:
            out.extend(self.check(rextra, wextra, f"{path}/additionalProperties"))
        added = set(r.get("required", ())) - set(w.get("required", ()))
        for name in sorted(added):
            if not (isinstance(rprops.get(name), dict) and "default" in rprops[name]):
                out.append(f"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL at {path}/required/{name}")
        return out

    def _array(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        """Items: one schema each side, or tuples (a list of items, then `additionalItems`)
        compared position by position, a position one side lacks read by the other's
        additionalItems; a change between the two forms is ITEMS_KIND_CHANGED."""
        out: list[str] = []
        ritems, witems = r.get("items"), w.get("items")
        if ritems is None:
            pass
        elif isinstance(ritems, list) != isinstance(witems, list) and witems is not None:
            out.append(f"ITEMS_KIND_CHANGED at {path}/items: a tuple and a single schema")
        elif isinstance(ritems, list):
            wlist = witems if isinstance(witems, list) else []
            radd, wadd = r.get("additionalItems", True), w.get("additionalItems", True)
            for i in range(max(len(ritems), len(wlist))):
                reader_i = ritems[i] if i < len(ritems) else radd
                writer_i = wlist[i] if i < len(wlist) else wadd
                out.extend(self.check(reader_i, writer_i, f"{path}/items/{i}"))
            out.extend(self.check(radd, wadd, f"{path}/additionalItems"))
        else:
            out.extend(self.check(ritems, True if witems is None else witems, f"{path}/items"))
        if r.get("uniqueItems") and not w.get("uniqueItems"):
            out.append(f"UNIQUE_ITEMS_ADDED at {path}/uniqueItems")
        return out
