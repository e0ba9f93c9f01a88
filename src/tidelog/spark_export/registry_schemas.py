"""The schemas of `--value-format registry` / `--key-format registry`, on the driver.

They come from the broker's schema registry, in one of two ways:

- `state_from_log(log_dirs)`: the `_schemas` topic's segments in the log dirs, read like any
  topic's (`segments`; the active segment too: a schema is registered before the records that
  use it, and the newest ones are usually still in it), applied in offset order to the
  registry's own `RegistryState` (`tidelog.log.schema_state`). No broker or registry needed,
  like the rest of the export;
- `state_from_url(url)`: the registry's REST API (Confluent's, so any compatible registry).

`formats(state, topic, ...)` then gives the `typed.Formats` of a run: per decoded column, the
subject of Confluent's default TopicNameStrategy (`<topic>-value`, `<topic>-key`), the ids of its
versions (soft-deleted ones included: records written with them may still be in the log), and
the column type: the union (`avro_arrow.merge`) of the Avro schemas earlier runs recorded in the
manifest (`TopicState.formats`) and every version registered now, so that the column only ever
gains fields and the tables' files of every run read under it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from tidelog.log import schema_records as R
from tidelog.log.schema_state import RegistryState

from . import avro_arrow
from . import segments as seg
from .typed import Field, Formats, Writer

SCHEMAS_TOPIC = "_schemas"


class NoSchema(ValueError):
    """No Avro schema is registered under the subject a typed column needs."""


def state_from_log(log_dirs: Sequence[str | Path], topic: str = SCHEMAS_TOPIC) -> RegistryState:
    state = RegistryState()
    for partition, pdir in seg.partition_dirs(log_dirs, topic).items():
        plan = seg.plan_partition(topic, partition, pdir, include_active=True, isolation=seg.READ_UNCOMMITTED)
        for task in plan.tasks:
            for batch in seg.read_task(task):
                for key, value in zip(batch.column("key").to_pylist(), batch.column("value").to_pylist()):
                    state.apply(key, value)
    return state


def _get(url: str, timeout: float = 30.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def state_from_url(url: str, subjects: Sequence[str]) -> RegistryState:
    """The versions of `subjects` (and the subjects they reference), through the REST API."""
    state = RegistryState()
    base = url.rstrip("/")
    todo, seen = list(subjects), set()
    while todo:
        subject = todo.pop()
        if subject in seen:
            continue
        seen.add(subject)
        quoted = urllib.parse.quote(subject, safe="")
        try:
            versions = _get(f"{base}/subjects/{quoted}/versions?deleted=true")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                continue
            raise
        for v in versions:
            doc = _get(f"{base}/subjects/{quoted}/versions/{v}?deleted=true")
            doc.setdefault("deleted", False)
            value = R.decode_schema(json.dumps(doc).encode())
            if value is not None:
                state.apply(R.encode_key(R.SchemaKey(subject, value.version)), R.encode_schema(value))
                todo += [r.subject for r in value.references]
    return state


def _refs(state: RegistryState, value: R.SchemaValue, depth: int = 0) -> tuple[str, ...]:
    """Texts of the schemas `value` references, those they reference first."""
    out: list[str] = []
    for ref in value.references:
        target = state.subjects.get(ref.subject, {}).get(ref.version)
        if target is not None and depth < 16:
            out += [t for t in _refs(state, target, depth + 1) if t not in out]
            if target.schema not in out:
                out.append(target.schema)
    return tuple(out)


def field_format(
    state: RegistryState, topic: str, column: str, recorded: Sequence[str] = ()
) -> tuple[Field, list[str]]:
    """The `Field` of `column` and the schemas its type is the union of (to record in the manifest:
    `recorded`, those of earlier runs, first)."""
    subject = f"{topic}-{column}"
    versions = state.versions(subject, deleted=True)
    writers = {v.id: Writer(v.schema_type, v.schema, _refs(state, v)) for v in versions}
    schemas = list(recorded)
    refs_of: dict[str, tuple[str, ...]] = {}
    for v in versions:
        if v.schema_type == "AVRO" and v.schema not in schemas:
            schemas.append(v.schema)
        refs_of[v.schema] = writers[v.id].refs
    if not schemas:
        raise NoSchema(f"no Avro schema is registered under subject {subject!r} (needed for the typed {column})")
    types = [avro_arrow.arrow_type(s, refs_of.get(s, ())) for s in schemas]
    column_type = avro_arrow.merge_all(types)
    other = frozenset(state.ids) - frozenset(writers)
    return Field(column, subject, column_type, writers, other), schemas


def formats(
    state: RegistryState, topic: str, columns: Sequence[str], recorded: dict[str, list[str]] | None = None
) -> tuple[Formats, dict[str, list[str]]]:
    """`Formats` decoding `columns` ("key", "value") of `topic`, and the schemas to record."""
    fields, schemas = [], {}
    for column in columns:
        f, texts = field_format(state, topic, column, (recorded or {}).get(column, ()))
        fields.append(f)
        schemas[column] = texts
    return Formats(tuple(fields)), schemas


class SchemaSource:
    """Where a run's schemas come from: `_schemas` in the log dirs (read once) or the REST API."""

    def __init__(self, log_dirs: Sequence[str | Path], url: str | None = None) -> None:
        self.log_dirs, self.url = list(log_dirs), url
        self._state: RegistryState | None = None

    def state(self, subjects: Sequence[str]) -> RegistryState:
        if self.url:
            return state_from_url(self.url, subjects)
        if self._state is None:
            self._state = state_from_log(self.log_dirs)
        return self._state

    def topic_formats(
        self, topic: str, columns: Sequence[str], recorded: dict[str, dict]
    ) -> tuple[Formats, dict[str, dict]]:
        """The run's `Formats` of `columns` of `topic` and the manifest's new `TopicState.formats`
        (`recorded`: its current ones): per column the schemas of the union and its Spark type."""
        from .tables import spark_type

        state = self.state([f"{topic}-{c}" for c in columns])
        out, schemas = formats(state, topic, columns, {c: recorded.get(c, {}).get("schemas", []) for c in columns})
        entries = {
            f.column: {"format": "registry", "schemas": schemas[f.column], "type": spark_type(f.type)}
            for f in out.fields
        }
        return out, entries
