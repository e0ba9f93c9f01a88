"""The schemas of `--value-format registry` / `--key-format registry`, on the driver.

They come from the broker's schema registry, in one of two ways:

- `state_from_log(log_dirs)`: the `_schemas` topic's segments in the log dirs, read like any
  topic's (`segments`; the active segment too: a schema is registered before the records that
  use it, and the newest ones are usually still in it), applied in offset order to the
  registry's own `RegistryState` (`tidelog.log.schema_state`). No broker or registry needed,
  like the rest of the export;
- `state_from_url(url)`: the registry's REST API (Confluent's, so any compatible registry).

`formats(state, topic, ...)` then gives the `typed.Formats` of a run: per decoded column, its
subjects (`subjects.Naming`: Confluent's default TopicNameStrategy's `<topic>-value`,
`<topic>-key`, or those of the record name strategies), the ids of their
versions (soft-deleted ones included: records written with them may still be in the log), and
the column type: the union (`arrow_types.merge`) of the type earlier runs recorded in the
manifest (`TopicState.formats`) and of every version registered now, whatever its schema type
(Avro: `avro_arrow`, JSON Schema: `json_arrow`, Protobuf: `proto_arrow`), so that the column
only ever gains fields and the tables' files of every run read under it. The manifest's entry
of a column: `{"format": "registry", "arrow": <the union, arrow_types.to_json>, "schemas":
[<the Avro versions' texts>], "type": <Spark DDL>}`, with `"strategy"` and `"subjects"` when the
naming is not TopicNameStrategy's (entries of older runs hold only the Avro texts: their union is
recomputed from them).
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from tidelog.log import schema_records as R
from tidelog.log.schema_state import RegistryState

from . import arrow_types, avro_arrow
from . import segments as seg
from .subjects import Naming
from .typed import Field, Formats, Writer

SCHEMAS_TOPIC = "_schemas"
log = logging.getLogger("tidelog.spark_export")


class NoSchema(ValueError):
    """No schema is registered under the subject a typed column needs."""


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


def state_from_url(url: str, subjects: Sequence[str], prefixes: Sequence[str] = ()) -> RegistryState:
    """The versions of `subjects` and of the subjects starting with one of `prefixes` (and of the
    subjects they reference), through the REST API."""
    state = RegistryState()
    base = url.rstrip("/")
    todo, seen = list(subjects), set()
    if prefixes:
        todo += [s for s in _get(f"{base}/subjects?deleted=true") if s.startswith(tuple(prefixes))]
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


def _refs(state: RegistryState, value: R.SchemaValue, depth: int = 0) -> tuple[tuple[str, str], ...]:
    """(name, text) of the schemas `value` references, those they reference first."""
    out: list[tuple[str, str]] = []
    for ref in value.references:
        target = state.subjects.get(ref.subject, {}).get(ref.version)
        if target is not None and depth < 16:
            out += [t for t in _refs(state, target, depth + 1) if t not in out]
            if (ref.name, target.schema) not in out:
                out.append((ref.name, target.schema))
    return tuple(out)


def _writer(state: RegistryState, v: R.SchemaValue, named: tuple[str, ...] = ()) -> Writer:
    """The `Writer` of version `v`; a Protobuf one holds the messages of `named` (record names)
    or its file's root messages (`proto_arrow.column_messages`), none when it does not build
    (its records then say why in `_error`)."""
    refs = _refs(state, v)
    if v.schema_type != "PROTOBUF":
        return Writer(v.schema_type, v.schema, refs)
    from . import proto_arrow

    try:
        messages = proto_arrow.column_messages(v.schema, refs, named)
    except ValueError as e:
        log.warning("schema id %d (subject %s) is not used for the column type: %s", v.id, v.subject, e)
        messages = frozenset()
    return Writer(v.schema_type, v.schema, refs, messages)


def version_type(writer: Writer):
    """The Arrow type of one registered version (`writer`)."""
    if writer.schema_type == "AVRO":
        return avro_arrow.arrow_type(writer.text, tuple(text for _name, text in writer.refs))
    if writer.schema_type == "JSON":
        from . import json_arrow

        return json_arrow.arrow_type(writer.text, writer.refs)
    if writer.schema_type == "PROTOBUF":
        from . import proto_arrow

        return proto_arrow.arrow_type(writer)
    raise NoSchema(f"schema type {writer.schema_type} is not decoded")


def recorded_type(entry: dict, refs_of: dict[str, tuple[str, ...]] | None = None):
    """The union an earlier run recorded for a column (`entry`: its manifest entry; an older
    run's holds only Avro texts, `refs_of` the texts each one's references)."""
    if "arrow" in entry:
        return arrow_types.from_json(entry["arrow"])
    refs_of = refs_of or {}
    return arrow_types.merge_all([avro_arrow.arrow_type(t, refs_of.get(t, ())) for t in entry.get("schemas", [])])


def field_format(
    state: RegistryState, topic: str, column: str, recorded: dict | None = None, naming: Naming | None = None
) -> tuple[Field, dict]:
    """The `Field` of `column` and its manifest entry: the union of `recorded` (the entry of
    earlier runs, whose fields come first) and of the versions of the subjects `naming` chooses
    (None: the naming `recorded` holds, TopicNameStrategy's by default)."""
    import pyarrow as pa

    recorded = recorded or {}
    naming = naming or Naming.recorded(recorded)
    subjects = naming.choose(topic, column, state.subject_names(deleted=True))
    writers: dict[int, Writer] = {}
    schemas = list(recorded.get("schemas", []))
    for subject in subjects:
        for v in state.versions(subject, deleted=True):
            w = _writer(state, v, Naming.record_names(topic, subject))
            if v.id in writers:  # one schema under two record subjects: the messages of both
                w = replace(w, messages=writers[v.id].messages | w.messages)
            writers[v.id] = w
            if v.schema_type == "AVRO" and v.schema not in schemas:
                schemas.append(v.schema)
    refs_of = {w.text: tuple(text for _name, text in w.refs) for w in writers.values()}
    column_type = recorded_type(recorded, refs_of)
    if not writers and pa.types.is_null(column_type):
        named = ", ".join(map(repr, subjects)) or f"{topic}-<record name> (TopicRecordNameStrategy)"
        raise NoSchema(f"no schema is registered under subject {named} (needed for the typed {column})")
    for w in writers.values():
        if w.schema_type != "PROTOBUF" or w.messages:  # else it does not build
            column_type = arrow_types.merge(column_type, version_type(w))
    other = frozenset(state.ids) - frozenset(writers)
    entry = {"format": "registry", "arrow": arrow_types.to_json(column_type), "schemas": schemas, **naming.to_entry()}
    return Field(column, ", ".join(subjects), column_type, writers, other), entry


def formats(
    state: RegistryState,
    topic: str,
    columns: Sequence[str],
    recorded: dict[str, dict] | None = None,
    namings: Mapping[str, Naming | None] | None = None,
) -> tuple[Formats, dict[str, dict]]:
    """`Formats` decoding `columns` ("key", "value") of `topic`, and their manifest entries
    (`recorded`: those of earlier runs, by column; `namings`: the subjects' naming by column,
    None or absent for the recorded one)."""
    fields, entries = [], {}
    for column in columns:
        f, entry = field_format(state, topic, column, (recorded or {}).get(column), (namings or {}).get(column))
        fields.append(f)
        entries[column] = entry
    return Formats(tuple(fields)), entries


class SchemaSource:
    """Where a run's schemas come from: `_schemas` in the log dirs (read once) or the REST API;
    `namings`: the subjects' naming the run's options ask for, by column (else the table's)."""

    def __init__(
        self, log_dirs: Sequence[str | Path], url: str | None = None, namings: dict[str, Naming | None] | None = None
    ) -> None:
        self.log_dirs, self.url = list(log_dirs), url
        self.namings = dict(namings or {})
        self._state: RegistryState | None = None

    def state(self, subjects: Sequence[str], prefixes: Sequence[str] = ()) -> RegistryState:
        """The registry's state: with the REST API, of `subjects` and of those starting with one
        of `prefixes` (the log holds them all)."""
        if self.url:
            return state_from_url(self.url, subjects, prefixes)
        if self._state is None:
            self._state = state_from_log(self.log_dirs)
        return self._state

    def topic_formats(
        self, topic: str, columns: Sequence[str], recorded: dict[str, dict]
    ) -> tuple[Formats, dict[str, dict]]:
        """The run's `Formats` of `columns` of `topic` and the manifest's new `TopicState.formats`
        (`recorded`: its current ones): per column the schemas of the union and its Spark type."""
        from .tables import spark_type

        namings = {c: self.namings.get(c) or Naming.recorded(recorded.get(c, {})) for c in columns}
        subjects = [s for c, n in namings.items() for s in n.known(topic, c)]
        out, entries = formats(
            self.state(subjects, [f"{topic}-" for n in namings.values() if n.lists_subjects]),
            topic,
            columns,
            recorded,
            namings,
        )
        for f in out.fields:
            entries[f.column]["type"] = spark_type(f.type)
        return out, entries
