"""The typed columns of an export run's topics (`--value-format`, `--key-format`): which columns
are typed, in which format, and their `typed.Formats`, with the union each column's manifest
entry records (`TopicState.formats`) extended as the run's plan needs.

`TypedPlan` is made once per run (the registry's schemas are read at most once per run, when a
topic needs them). `plan` gives a topic's formats for the run about to begin and records them in
its state; `recorded` gives those of a run a crash interrupted, from its pending state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .manifest import Manifest, TableFormatError, TopicState
from .typed import Formats

if TYPE_CHECKING:
    from .job import ExportOptions
    from .registry_schemas import SchemaSource


class TypedPlan:
    """The typed columns of one export run with `options` (an `ExportOptions`)."""

    def __init__(self, options: ExportOptions) -> None:
        self.o = options
        self._schemas: SchemaSource | None = None  # the registry's, read once per run when a topic needs it

    def plan(self, manifest: Manifest, topic: str, state: TopicState) -> Formats | None:
        """The topic's typed columns (`typed`), their schemas' union recorded in `state`; a table
        keeps the formats of its first run (`TableFormatError` otherwise)."""
        had = {c: e.get("format", "registry") for c, e in state.formats.items()}
        asked = {c: f for c, f in (("key", self.o.key_format), ("value", self.o.value_format)) if f is not None}
        if topic in manifest.topics and any(had.get(c, "raw") != f for c, f in asked.items()):
            raise TableFormatError(
                f"tidelog.{topic} has {'typed columns ' + ', '.join(sorted(had)) if had else 'raw key and value'}; "
                "a table keeps the --key-format/--value-format of its first run"
            )
        wanted = {**had, **asked}
        columns = {c: wanted[c] for c in ("key", "value") if wanted.get(c, "raw") != "raw"}
        if not columns:
            return None
        if state.compacted and "key" in columns:
            raise TableFormatError(
                f"{topic}: typed keys (--key-format registry, json) are for topics that are not compacted, for now"
            )
        starts = {n: s.next_offset for n, s in manifest.topic(topic).partitions.items()}
        return self._formats(topic, state, columns, starts)

    def recorded(self, topic: str, state: TopicState) -> Formats | None:
        """The `Formats` of the typed columns `state` records: those of a run a crash interrupted,
        which the next run completes (`delta`, `iceberg_job`). A registry column's union is
        extended in `state` by the versions registered since, as a run's plan extends it (a
        column only gains fields); an inferred JSON column's type is the recorded one as it is
        (no sample: the run recorded the type its files were written with before any table
        committed them, and writing again with it meets the same members)."""
        columns: dict[str, str] = {
            c: state.formats[c].get("format", "registry") for c in ("key", "value") if c in state.formats
        }
        return self._formats(topic, state, columns, None) if columns else None

    def _formats(
        self, topic: str, state: TopicState, columns: dict[str, str], starts: dict[int, int] | None
    ) -> Formats:
        """`columns`' `Formats` (column -> "registry" or "json"), their union recorded in `state`;
        `starts`: where the run starts per partition (json columns sample from there; None: they
        keep their recorded type)."""
        from .column_formats import topic_formats

        formats, state.formats = topic_formats(
            self._schema_source, self.o.log_dirs, topic, columns, state.formats, starts
        )
        return formats

    def _schema_source(self) -> SchemaSource:
        if self._schemas is None:
            from .registry_schemas import SchemaSource
            from .subjects import Naming

            o = self.o
            namings = {"value": Naming.of(o.value_subject_strategy, o.value_subjects)}
            namings["key"] = Naming.of(o.key_subject_strategy, o.key_subjects)
            self._schemas = SchemaSource(o.log_dirs, o.schema_registry_url, namings)
        return self._schemas
