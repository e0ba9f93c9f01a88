"""The registry's operations, as Confluent's REST API defines them, over a `SchemaStore`.

Each method takes the decoded path and query parameters and body of one request and returns the
JSON value to answer with, or raises RegistryError (its HTTP status and Confluent error code).
Reads answer from the store's state after catching up with the log; writes are serialized by one
lock and start with `store.sync()` (in a cluster: be the primary, with the whole log read), so a
check and the write it decides (an id, a version, a compatibility verdict) see the same state,
and return once the record is read back (see `store`).

Registration: an identical schema (same type and references, the same text up to JSON formatting
for AVRO and JSON - or canonical form with `normalize`) already live under the subject answers
its id, on any broker; otherwise the new schema is checked
against the subject's live versions under its compatibility level (not in IMPORT mode), takes
the id an identical schema has under any subject or one past the largest id, and the version one
past the subject's largest (soft-deleted ones included). In IMPORT mode the request gives the id
(and may give the version); READONLY refuses every write but mode changes.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from ..log import schema_records as R
from ..log.schema_state import RegistryState
from . import errors as E
from . import schemas
from .errors import RegistryError
from .store import SchemaStore

MODES = ("READWRITE", "READONLY", "IMPORT")
MAX_VERSION = 2**31 - 1


def parse_version(raw: str) -> int | None:
    """A version of a path: a positive int, or None for `latest` (and -1)."""
    if raw in ("latest", "-1"):
        return None
    if raw.isdigit() and 0 < int(raw) <= MAX_VERSION:
        return int(raw)
    raise RegistryError(
        E.INVALID_VERSION,
        f"The specified version '{raw}' is not a valid version id. Allowed values are between "
        f'[1, {MAX_VERSION}] and the string "latest"',
    )


def _schema_json(v: R.SchemaValue) -> dict[str, Any]:
    out: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id}
    if v.schema_type != "AVRO":
        out["schemaType"] = v.schema_type
    if v.references:
        out["references"] = [r.to_json() for r in v.references]
    out["schema"] = v.schema
    return out


class Registry:
    PARSED_CACHE = 1024  # stored versions kept parsed (a registration checks against them)

    def __init__(self, store: SchemaStore) -> None:
        self.store = store
        self.lock = asyncio.Lock()
        self._parsed: dict[R.SchemaValue, Any] = {}

    def start(self) -> None:
        self.store.start()

    def stop(self) -> None:
        self.store.stop()

    @property
    def state(self) -> RegistryState:
        self.store.catch_up()
        return self.store.state

    # ---- subjects and versions ----------------------------------------------------------
    def subjects(self, deleted: bool = False) -> list[str]:
        return list(self.state.subject_names(deleted))

    def _versions(self, subject: str, deleted: bool = False) -> list[R.SchemaValue]:
        found: list[R.SchemaValue] = self.state.versions(subject, deleted)
        if not found:
            raise E.subject_not_found(subject)
        return found

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        return [v.version for v in self._versions(subject, deleted)]

    def _version(self, subject: str, raw: str, deleted: bool = False) -> R.SchemaValue:
        wanted = parse_version(raw)
        found = self._versions(subject, deleted)
        if wanted is None:
            live = [v for v in found if not v.deleted]
            if not live:
                raise E.version_not_found(subject, raw)
            return live[-1]
        for v in found:
            if v.version == wanted:
                return v
        raise E.version_not_found(subject, raw)

    def version(self, subject: str, raw: str, deleted: bool = False) -> dict[str, Any]:
        return _schema_json(self._version(subject, raw, deleted))

    def referenced_by(self, subject: str, raw: str) -> list[int]:
        v = self._version(subject, raw)
        return list(self.state.referenced_by(v.subject, v.version))

    # ---- schemas by id ------------------------------------------------------------------
    def by_id(self, schema_id: int) -> dict[str, Any]:
        stored = self.state.ids.get(schema_id)
        if stored is None:
            raise E.schema_not_found()
        out: dict[str, Any] = {}
        if stored.schema_type != "AVRO":
            out["schemaType"] = stored.schema_type
        if stored.references:
            out["references"] = [r.to_json() for r in stored.references]
        out["schema"] = stored.schema
        return out

    def all_schemas(self, prefix: str = "", deleted: bool = False, latest_only: bool = False) -> list[dict[str, Any]]:
        """GET /schemas: every (live) version of the subjects starting with `prefix`."""
        out: list[dict[str, Any]] = []
        for subject in self.state.subject_names(deleted):
            if subject.startswith(prefix):
                versions = self.state.versions(subject, deleted)
                out += [_schema_json(v) for v in (versions[-1:] if latest_only else versions)]
        return out

    def id_versions(self, schema_id: int, deleted: bool = False) -> list[dict[str, Any]]:
        if schema_id not in self.state.ids:
            raise E.schema_not_found()
        return [{"subject": s, "version": v} for s, v in self.state.subjects_of_id(schema_id, deleted)]

    def id_subjects(self, schema_id: int, deleted: bool = False) -> list[str]:
        return sorted({d["subject"] for d in self.id_versions(schema_id, deleted)})

    # ---- parsing a request's schema -----------------------------------------------------
    def _references(self, body: dict[str, Any]) -> tuple[tuple[R.Reference, ...], list[tuple[str, str]]]:
        """The request's references, and the (name, text) of the schemas they bring in,
        dependencies first."""
        refs: list[R.Reference] = []
        for r in body.get("references") or ():
            try:
                refs.append(R.Reference(str(r["name"]), str(r["subject"]), int(r["version"])))
            except (KeyError, TypeError, ValueError) as e:
                raise E.invalid_schema(f"bad reference {r!r}") from e
        texts: list[tuple[str, str]] = []
        seen: set[tuple[str, int]] = set()

        def bring(ref: R.Reference) -> None:
            if (ref.subject, ref.version) in seen:
                return
            seen.add((ref.subject, ref.version))
            v = self._version(ref.subject, str(ref.version) if ref.version > 0 else "latest")
            for inner in v.references:
                bring(inner)
            texts.append((ref.name, v.schema))

        for ref in refs:
            bring(ref)
        return tuple(refs), texts

    def _parse(self, body: Any, normalize: bool) -> tuple[str, str, tuple[R.Reference, ...], Any]:
        """(type, text to store, references, parsed) of a request body."""
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise RegistryError(E.INVALID_SCHEMA, "Empty schema", 422)
        schema_type = body.get("schemaType") or "AVRO"
        if schema_type not in schemas.TYPES:
            raise RegistryError(E.INVALID_SCHEMA, f"Invalid schema type {schema_type}", 422)
        refs, texts = self._references(body)
        parsed = schemas.parse(schema_type, body["schema"], texts)
        text = parsed.canonical if normalize else body["schema"]
        return schema_type, text, refs, parsed

    def _same(self, v: R.SchemaValue, schema_type: str, text: str, refs: tuple[R.Reference, ...]) -> bool:
        """The same schema: type, references, and text - an AVRO or JSON text up to its JSON
        formatting (whitespace, key order), as Confluent compares the schemas it parsed."""
        return v.schema_type == schema_type and v.references == refs and _same_text(schema_type, v.schema, text)

    def _same_parsed(self, v: R.SchemaValue, schema_type: str, parsed: Any) -> bool:
        """Same schema up to its canonical form (a schema stored before normalization)."""
        if v.schema_type != schema_type:
            return False
        try:
            return bool(self._parse_stored(v).canonical == parsed.canonical)
        except RegistryError:
            return False

    def _parse_stored(self, v: R.SchemaValue) -> Any:
        key = R.SchemaValue(v.subject, v.version, v.id, v.schema, v.schema_type, v.references)
        parsed = self._parsed.get(key)
        if parsed is None:
            _, texts = self._references({"references": [r.to_json() for r in v.references]})
            parsed = schemas.parse(v.schema_type, v.schema, texts)
            if len(self._parsed) >= self.PARSED_CACHE:
                self._parsed.clear()
            self._parsed[key] = parsed
        return parsed

    # ---- lookup and compatibility -------------------------------------------------------
    def lookup(self, subject: str, body: Any, normalize: bool = False, deleted: bool = False) -> dict[str, Any]:
        schema_type, text, refs, parsed = self._parse(body, normalize)
        found = self._versions(subject, deleted)
        for v in reversed(found):
            if self._same(v, schema_type, text, refs) or (normalize and self._same_parsed(v, schema_type, parsed)):
                return _schema_json(v)
        raise E.schema_not_found()

    def _previous(self, subject: str) -> list[tuple[str, Any]]:
        return [(v.schema_type, self._parse_stored(v)) for v in self.state.versions(subject)]

    def compatibility(
        self, subject: str, raw_version: str | None, body: Any, normalize: bool = False
    ) -> dict[str, Any]:
        """POST /compatibility/subjects/{s}/versions[/{v}]: against one version (or latest) as
        the level's direction says, or against the versions the level names."""
        schema_type, _, _, parsed = self._parse(body, normalize)
        level = self.state.compatibility(subject)
        if raw_version is None:
            previous = self._previous(subject)
        else:
            if not self.state.versions(subject) and parse_version(raw_version) is None:
                return {"is_compatible": True, "messages": []}
            v = self._version(subject, raw_version)
            previous = [(v.schema_type, self._parse_stored(v))]
            level = level.removesuffix("_TRANSITIVE")
        messages = schemas.check(level, schema_type, parsed, previous)
        return {"is_compatible": not messages, "messages": messages}

    # ---- registration -------------------------------------------------------------------
    def _writable(self, subject: str | None) -> str:
        mode: str = self.state.mode(subject)
        if mode == "READONLY":
            raise RegistryError(E.OPERATION_NOT_PERMITTED, f"Subject {subject} is in read-only mode")
        return mode

    async def register(self, subject: str, body: Any, normalize: bool = False) -> dict[str, Any]:
        known = self._registered(subject, body, normalize)
        if known is not None:  # answered by any broker, the primary or not
            return known
        async with self.lock:
            await self.store.sync()
            mode = self._writable(subject)
            schema_type, text, refs, parsed = self._parse(body, normalize)
            state = self.state
            live = state.versions(subject)
            given_id = body.get("id") if isinstance(body.get("id"), int) and body["id"] > 0 else None
            for v in reversed(live):
                if self._same(v, schema_type, text, refs) and given_id in (None, v.id):
                    return {"id": v.id}
            if mode != "IMPORT":
                if given_id is not None:
                    raise RegistryError(E.OPERATION_NOT_PERMITTED, "Registering with an id needs IMPORT mode")
                messages = schemas.check(state.compatibility(subject), schema_type, parsed, self._previous(subject))
                if messages:
                    raise RegistryError(
                        E.INCOMPATIBLE_SCHEMA,
                        f"Schema being registered is incompatible with an earlier schema for subject "
                        f'"{subject}", details: {messages}',
                    )
            value = self._new_value(subject, body, schema_type, text, refs, given_id)
            await self.store.write([(R.encode_key(R.SchemaKey(subject, value.version)), R.encode_schema(value))])
            return {"id": value.id}

    def _registered(self, subject: str, body: Any, normalize: bool) -> dict[str, Any] | None:
        """{"id": N} when the very schema is live under the subject (and no other id is asked)."""
        schema_type, text, refs, _ = self._parse(body, normalize)
        given = body.get("id") if isinstance(body.get("id"), int) else None
        for v in reversed(self.state.versions(subject)):
            if self._same(v, schema_type, text, refs) and given in (None, v.id):
                return {"id": v.id}
        return None

    def _new_value(
        self,
        subject: str,
        body: dict[str, Any],
        schema_type: str,
        text: str,
        refs: tuple[R.Reference, ...],
        given_id: int | None,
    ) -> R.SchemaValue:
        state = self.state
        same = next(
            (
                sid
                for sid, s in sorted(state.ids.items())
                if s.schema_type == schema_type and s.references == refs and _same_text(schema_type, s.schema, text)
            ),
            None,
        )
        if given_id is not None:
            taken = state.ids.get(given_id)
            if taken is not None and (taken.schema, taken.schema_type, taken.references) != (text, schema_type, refs):
                raise RegistryError(E.ID_IN_USE, f"Schema id {given_id} is already in use by another schema")
            schema_id = given_id
        else:
            schema_id = same if same is not None else state.max_id + 1
        every = state.versions(subject, deleted=True)
        version = (every[-1].version if every else 0) + 1
        if isinstance(body.get("version"), int) and body["version"] > 0:
            if any(v.version == body["version"] for v in every):
                raise RegistryError(E.INVALID_VERSION, f"Version {body['version']} already exists")
            version = body["version"]
        return R.SchemaValue(subject, version, schema_id, text, schema_type, refs, False)

    # ---- deletes ------------------------------------------------------------------------
    def _not_referenced(self, subject: str, versions: list[R.SchemaValue]) -> None:
        for v in versions:
            if self.state.referenced_by(subject, v.version):
                raise RegistryError(
                    E.REFERENCE_EXISTS, f"One or more references exist to the schema {{{subject}, version {v.version}}}"
                )

    async def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        async with self.lock:
            await self.store.sync()
            self._writable(subject)
            every = self.state.versions(subject, deleted=True)
            live = [v for v in every if not v.deleted]
            if not every:
                raise E.subject_not_found(subject)
            if permanent:
                if live:
                    raise RegistryError(
                        E.SUBJECT_NOT_SOFT_DELETED,
                        f"Subject '{subject}' was not deleted first before being permanently deleted",
                    )
                gone: list[tuple[bytes, bytes | None]] = [
                    (R.encode_key(R.SchemaKey(subject, v.version)), None) for v in every
                ]
                if subject in self.state.configs:  # the subject's own settings go with it
                    gone.append((R.encode_key(R.ConfigKey(subject)), None))
                if subject in self.state.modes:
                    gone.append((R.encode_key(R.ModeKey(subject)), None))
                await self.store.write(gone)
                return [v.version for v in every]
            if not live:
                raise RegistryError(E.SUBJECT_SOFT_DELETED, f"Subject '{subject}' was soft deleted.")
            self._not_referenced(subject, live)
            await self.store.write([_soft_deleted(v) for v in live])
            return [v.version for v in live]

    async def delete_version(self, subject: str, raw: str, permanent: bool = False) -> int:
        async with self.lock:
            await self.store.sync()
            self._writable(subject)
            v = self._version(subject, raw, deleted=True) if parse_version(raw) else self._version(subject, raw)
            if permanent:
                if not v.deleted:
                    raise RegistryError(
                        E.SCHEMA_VERSION_NOT_SOFT_DELETED,
                        f"Subject '{subject}' Version {v.version} was not deleted first before being "
                        "permanently deleted",
                    )
                await self.store.write([(R.encode_key(R.SchemaKey(subject, v.version)), None)])
                return v.version
            if v.deleted:
                raise RegistryError(
                    E.SCHEMA_VERSION_SOFT_DELETED, f"Subject '{subject}' Version {v.version} was soft deleted."
                )
            self._not_referenced(subject, [v])
            await self.store.write([_soft_deleted(v)])
            return v.version

    # ---- config and mode ----------------------------------------------------------------
    def get_config(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        state = self.state
        if subject is not None and subject not in state.configs and not default_to_global:
            raise RegistryError(
                E.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED,
                f"Subject '{subject}' does not have subject-level compatibility configured",
            )
        return {"compatibilityLevel": state.compatibility(subject)}

    async def set_config(self, subject: str | None, body: Any) -> dict[str, Any]:
        level = body.get("compatibility") if isinstance(body, dict) else None
        if not isinstance(level, str) or level.upper() not in schemas.LEVELS:
            raise RegistryError(
                E.INVALID_COMPATIBILITY_LEVEL, f"Invalid compatibility level. Valid values are {schemas.LEVELS}"
            )
        async with self.lock:
            await self.store.sync()
            self._writable(subject)
            await self.store.write([(R.encode_key(R.ConfigKey(subject)), R.encode_config(level.upper()))])
        return {"compatibility": level.upper()}

    async def delete_config(self, subject: str | None) -> dict[str, Any]:
        async with self.lock:
            await self.store.sync()
            self._writable(subject)
            old = self.get_config(subject)
            await self.store.write([(R.encode_key(R.ConfigKey(subject)), None)])
        return old

    def get_mode(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        state = self.state
        if subject is not None and subject not in state.modes and not default_to_global:
            raise RegistryError(
                E.SUBJECT_LEVEL_MODE_NOT_CONFIGURED, f"Subject '{subject}' does not have subject-level mode configured"
            )
        return {"mode": state.mode(subject)}

    async def set_mode(self, subject: str | None, body: Any, force: bool = False) -> dict[str, Any]:
        """IMPORT only where no schema is registered yet (the subject's, or any for the global
        mode), unless `force`: imported ids must not collide with ids given here."""
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError(E.INVALID_MODE, f"Invalid mode. Valid values are {MODES}")
        async with self.lock:
            await self.store.sync()
            existing = self.state.subject_names() if subject is None else self.state.versions(subject)
            if mode.upper() == "IMPORT" and existing and not force:
                raise RegistryError(E.OPERATION_NOT_PERMITTED, "Cannot import since found existing subjects")
            await self.store.write([(R.encode_key(R.ModeKey(subject)), R.encode_mode(mode.upper()))])
        return {"mode": mode.upper()}

    async def delete_mode(self, subject: str | None) -> dict[str, Any]:
        async with self.lock:
            await self.store.sync()
            old = self.get_mode(subject)
            await self.store.write([(R.encode_key(R.ModeKey(subject)), None)])
        return old


def _same_text(schema_type: str, a: str, b: str) -> bool:
    return a == b or (schema_type != "PROTOBUF" and _json_of(a) == _json_of(b))


@functools.lru_cache(maxsize=1024)
def _json_of(text: str) -> str:
    """A JSON text in one form (keys sorted, no whitespace); the text itself when not JSON."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return text


def _soft_deleted(v: R.SchemaValue) -> tuple[bytes, bytes]:
    gone = R.SchemaValue(v.subject, v.version, v.id, v.schema, v.schema_type, v.references, True)
    return R.encode_key(R.SchemaKey(v.subject, v.version)), R.encode_schema(gone)
