"""The registry's state: what the records of `_schemas` say, applied in log order.

`RegistryState.apply(key, value)` is the only way it changes, so the state of a registry that
read a log equals that of any other that read the same log (the rules: a later record of a key
wins; a SCHEMA tombstone removes that version for good; a soft delete keeps the version, marked
`deleted`; ids are global: one id names one schema text of one type with its references,
whatever subjects it is registered under; the next id is one past the largest seen).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import schema_records as R
from .schema_records import SchemaValue

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"


@dataclass(frozen=True, slots=True)
class StoredSchema:
    """What an id names."""

    schema: str
    schema_type: str
    references: tuple[R.Reference, ...]


class RegistryState:
    def __init__(self) -> None:
        self.subjects: dict[str, dict[int, SchemaValue]] = {}  # subject -> version -> value
        self.ids: dict[int, StoredSchema] = {}
        self.configs: dict[str | None, str] = {}  # subject (None: global) -> compatibility level
        self.modes: dict[str | None, str] = {}
        self.max_id = 0

    # ---- applying records ---------------------------------------------------------------
    def apply(self, raw_key: bytes | None, raw_value: bytes | None) -> bool:
        """Apply one record of the log; False if it was not a record this registry reads."""
        key = None if raw_key is None else R.decode_key(raw_key)
        if key is None:
            return False
        if isinstance(key, R.SchemaKey):
            return self._apply_schema(key, raw_value)
        if isinstance(key, R.ConfigKey):
            level = None if raw_value is None else R.decode_field(raw_value, "compatibilityLevel")
            self._set(self.configs, key.subject, level)
        elif isinstance(key, R.ModeKey):
            self._set(self.modes, key.subject, None if raw_value is None else R.decode_field(raw_value, "mode"))
        elif isinstance(key, R.DeleteSubjectKey) and raw_value is not None:
            upto = R.decode_delete_subject(raw_value)
            for version, value in list(self.subjects.get(key.subject, {}).items()):
                if upto is not None and version <= upto:
                    self.subjects[key.subject][version] = _deleted(value)
        return True

    @staticmethod
    def _set(table: dict[str | None, str], subject: str | None, value: str | None) -> None:
        if value is None:
            table.pop(subject, None)
        else:
            table[subject] = value

    def _apply_schema(self, key: R.SchemaKey, raw_value: bytes | None) -> bool:
        if raw_value is None:
            versions = self.subjects.get(key.subject, {})
            gone = versions.pop(key.version, None)
            if not versions:
                self.subjects.pop(key.subject, None)
            if gone is not None and not any(v.id == gone.id for vs in self.subjects.values() for v in vs.values()):
                self.ids.pop(gone.id, None)  # no version names the id any more
            return True
        value = R.decode_schema(raw_value)
        if value is None:
            return False
        self.subjects.setdefault(key.subject, {})[key.version] = value
        self.ids.setdefault(value.id, StoredSchema(value.schema, value.schema_type, value.references))
        self.max_id = max(self.max_id, value.id)
        return True

    # ---- questions ----------------------------------------------------------------------
    def versions(self, subject: str, deleted: bool = False) -> list[SchemaValue]:
        """The subject's versions in order; soft-deleted ones only with `deleted`."""
        found = self.subjects.get(subject, {})
        return [found[v] for v in sorted(found) if deleted or not found[v].deleted]

    def subject_names(self, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s, deleted))

    def compatibility(self, subject: str | None) -> str:
        """The level in force for `subject`: its own, else the global one, else BACKWARD."""
        if subject is not None and subject in self.configs:
            return self.configs[subject]
        return self.configs.get(None, DEFAULT_COMPATIBILITY)

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.modes:
            return self.modes[subject]
        return self.modes.get(None, DEFAULT_MODE)

    def subjects_of_id(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """(subject, version) pairs registered with this id."""
        return [
            (v.subject, v.version)
            for s in sorted(self.subjects)
            for v in self.versions(s, deleted)
            if v.id == schema_id
        ]

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of live schemas that reference this subject version."""
        ids = {
            v.id
            for s in self.subjects
            for v in self.versions(s)
            if any(r.subject == subject and r.version == version for r in v.references)
        }
        return sorted(ids)


def _deleted(value: SchemaValue) -> SchemaValue:
    return SchemaValue(value.subject, value.version, value.id, value.schema, value.schema_type, value.references, True)
