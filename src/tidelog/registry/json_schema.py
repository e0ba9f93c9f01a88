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
  open -> PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL unless the property accepts anything; closed ->
  fine); closing an open model is ADDITIONAL_PROPERTIES_REMOVED; a property the reader requires
  that the writer did not require is REQUIRED_PROPERTY_ADDED (unless it has a default)
- arrays: items resolve (a list of items pairwise); uniqueItems may not be added
- oneOf / anyOf: every writer branch must resolve against the reader; a writer that is not a
  combination must resolve against some reader branch; allOf: each reader branch must hold
- local `$ref`s (`#/...`) are followed, each (reader, writer) pair once (recursion ends)
"""

from __future__ import annotations

import json
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
            jsonschema.validators.validator_for(doc).check_schema(doc)
            refs[name] = doc
    except (ValueError, jsonschema.exceptions.SchemaError) as e:
        raise invalid_schema(str(e).splitlines()[0]) from e
    doc = refs.pop("")
    return ParsedJson(doc, json.dumps(doc, separators=(",", ":"), sort_keys=True), refs)


def incompatibilities(reader: ParsedJson, writer: ParsedJson) -> list[str]:
    return _Checker(reader, writer).check(reader.schema, writer.schema, "#")


_NUMERIC = {"integer": {"integer", "number"}}
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
            if name not in wprops and wextra is not False and self.check(rp, wextra, f"{path}/properties/{name}"):
                out.append(f"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at {path}/properties/{name}")
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
        out: list[str] = []
        ritems, witems = r.get("items"), w.get("items", True)
        if isinstance(ritems, list) and isinstance(witems, list):
            for i, (ri, wi) in enumerate(zip(ritems, witems)):
                out.extend(self.check(ri, wi, f"{path}/items/{i}"))
        elif ritems is not None and not isinstance(ritems, list) and not isinstance(witems, list):
            out.extend(self.check(ritems, witems, f"{path}/items"))
        if r.get("uniqueItems") and not w.get("uniqueItems"):
            out.append(f"UNIQUE_ITEMS_ADDED at {path}/uniqueItems")
        return out
