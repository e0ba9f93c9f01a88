"""The three schema types behind one interface, and the compatibility levels.

`parse(schema_type, text, references)` -> a parsed schema with `.canonical` (the form
`normalize=true` compares and stores), raising RegistryError 42201 when invalid;
`check(level, new, previous)` -> the incompatibility messages of `new` (parsed) against the
previous versions (parsed, oldest first) under a compatibility level:

    BACKWARD  new reads what the latest wrote      FORWARD  the latest reads what new writes
    FULL      both                                  NONE     no check
    *_TRANSITIVE: the same against every previous (live) version, not just the latest
"""

from __future__ import annotations

from typing import Any

from . import avro, json_schema, protobuf
from .errors import invalid_schema

TYPES = ("JSON", "PROTOBUF", "AVRO")
LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
_MODULES: dict[str, Any] = {"AVRO": avro, "JSON": json_schema, "PROTOBUF": protobuf}


def parse(schema_type: str, text: str, references: list[tuple[str, str]] | None = None) -> Any:
    """`references`: (name, text) of the schemas the text references, dependencies first."""
    module = _MODULES.get(schema_type)
    if module is None:
        raise invalid_schema(f"unknown schema type {schema_type!r} (one of {', '.join(TYPES)})")
    return module.parse(text, references)


def incompatibilities(schema_type: str, reader: Any, writer: Any) -> list[str]:
    return list(_MODULES[schema_type].incompatibilities(reader, writer))


def check(level: str, schema_type: str, new: Any, previous: list[tuple[str, Any]]) -> list[str]:
    """`previous`: (schema type, parsed) of the subject's live versions, oldest first."""
    if level == "NONE" or not previous:
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    base = level.removesuffix("_TRANSITIVE")
    out: list[str] = []
    for old_type, old in reversed(against):
        if old_type != schema_type:
            out.append(f"TYPE_MISMATCH: schema type {schema_type} differs from an earlier version's {old_type}")
            continue
        if base in ("BACKWARD", "FULL"):
            out.extend(f"{m} (new schema reading old data)" for m in incompatibilities(schema_type, new, old))
        if base in ("FORWARD", "FULL"):
            out.extend(f"{m} (old schema reading new data)" for m in incompatibilities(schema_type, old, new))
    return out
