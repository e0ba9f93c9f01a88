"""The records of the `_schemas` topic, in Confluent's format (which Karapace and Redpanda read
and write too), so another vendor's registry pointed at the same cluster sees the same schemas.

Every key and value is a JSON object (UTF-8). Keys, with their fields in this order:

    {"keytype":"SCHEMA","subject":S,"version":N,"magic":1}
        value {"subject":S,"version":N,"id":ID,"schema":TEXT,"deleted":BOOL
               [,"schemaType":"JSON"|"PROTOBUF"] [,"references":[{"name","subject","version"}...]]}
        (no schemaType: AVRO); a null value (tombstone) is a permanent delete of that version
    {"keytype":"CONFIG","subject":S|null,"magic":0}
        value {"compatibilityLevel":LEVEL} (subject null: the global level); null: back to default
    {"keytype":"MODE","subject":S|null,"magic":0}
        value {"mode":"READWRITE"|"READONLY"|"IMPORT"}; null: back to default
    {"keytype":"DELETE_SUBJECT","subject":S,"magic":0}
        value {"subject":S,"version":N}: versions up to N are soft-deleted (older registries)
    {"keytype":"CLEAR_SUBJECT","subject":S,"magic":0}: read and ignored (Confluent's cleanup)
    {"keytype":"NOOP","magic":0}: a marker a registry writes to learn the log end; ignored

`decode` returns None for a key it cannot read (another vendor's extension): the reader skips it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class SchemaKey:
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class ConfigKey:
    subject: str | None


@dataclass(frozen=True, slots=True)
class ModeKey:
    subject: str | None


@dataclass(frozen=True, slots=True)
class DeleteSubjectKey:
    subject: str


@dataclass(frozen=True, slots=True)
class OtherKey:
    """NOOP, CLEAR_SUBJECT: read and ignored."""

    keytype: str


Key = SchemaKey | ConfigKey | ModeKey | DeleteSubjectKey | OtherKey


@dataclass(frozen=True, slots=True)
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = field(default=())
    deleted: bool = False


def _dumps(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def encode_key(key: Key) -> bytes:
    if isinstance(key, SchemaKey):
        return _dumps({"keytype": "SCHEMA", "subject": key.subject, "version": key.version, "magic": 1})
    if isinstance(key, ConfigKey):
        return _dumps({"keytype": "CONFIG", "subject": key.subject, "magic": 0})
    if isinstance(key, ModeKey):
        return _dumps({"keytype": "MODE", "subject": key.subject, "magic": 0})
    if isinstance(key, DeleteSubjectKey):
        return _dumps({"keytype": "DELETE_SUBJECT", "subject": key.subject, "magic": 0})
    return _dumps({"keytype": key.keytype, "magic": 0})


def encode_schema(value: SchemaValue) -> bytes:
    out: dict[str, Any] = {
        "subject": value.subject,
        "version": value.version,
        "id": value.id,
        "schema": value.schema,
        "deleted": value.deleted,
    }
    if value.schema_type != "AVRO":
        out["schemaType"] = value.schema_type
    if value.references:
        out["references"] = [r.to_json() for r in value.references]
    return _dumps(out)


def encode_config(level: str) -> bytes:
    return _dumps({"compatibilityLevel": level})


def encode_mode(mode: str) -> bytes:
    return _dumps({"mode": mode})


def _object(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def decode_key(raw: bytes) -> Key | None:
    obj = _object(raw)
    if obj is None:
        return None
    kind, subject = obj.get("keytype"), obj.get("subject")
    if subject is not None and not isinstance(subject, str):
        return None
    if kind == "SCHEMA" and isinstance(subject, str) and isinstance(obj.get("version"), int):
        return SchemaKey(subject, obj["version"])
    if kind == "CONFIG":
        return ConfigKey(subject)
    if kind == "MODE":
        return ModeKey(subject)
    if kind == "DELETE_SUBJECT" and isinstance(subject, str):
        return DeleteSubjectKey(subject)
    if isinstance(kind, str):
        return OtherKey(kind)
    return None


def decode_schema(raw: bytes) -> SchemaValue | None:
    obj = _object(raw)
    if obj is None:
        return None
    try:
        refs = tuple(
            Reference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in obj.get("references") or ()
        )
        return SchemaValue(
            subject=str(obj["subject"]),
            version=int(obj["version"]),
            id=int(obj["id"]),
            schema=str(obj["schema"]),
            schema_type=str(obj.get("schemaType") or "AVRO"),
            references=refs,
            deleted=bool(obj.get("deleted", False)),
        )
    except (KeyError, TypeError, ValueError):
        return None


def decode_field(raw: bytes, name: str) -> str | None:
    """A string field of a CONFIG / MODE value (`compatibilityLevel`, `mode`), None if absent."""
    obj = _object(raw)
    value = None if obj is None else obj.get(name)
    return value if isinstance(value, str) else None


def decode_delete_subject(raw: bytes) -> int | None:
    """The version up to which a DELETE_SUBJECT record soft-deletes."""
    obj = _object(raw)
    version = None if obj is None else obj.get("version")
    return version if isinstance(version, int) else None
