"""A topic's typed columns, whatever their format: `registry` columns from the schema registry
(`registry_schemas`), `json` columns inferred from the values (`json_infer`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import json_infer
from .typed import Formats

if TYPE_CHECKING:
    from .registry_schemas import SchemaSource

ORDER = ("key", "value")


def topic_formats(
    schemas: Callable[[], SchemaSource],
    log_dirs: Sequence[str | Path],
    topic: str,
    columns: dict[str, str],
    recorded: dict[str, dict],
    starts: dict[int, int] | None,
) -> tuple[Formats, dict[str, dict]]:
    """The `Formats` of `columns` (column -> "registry" or "json") and the manifest's new entries
    of the topic (`recorded`: its current ones). `schemas` gives the registry's schemas (asked
    only when a column needs them); `starts`: where the run starts per partition (json columns
    sample from there), None for the recorded json types as they are (completing a crashed run)."""
    fields, entries = {}, dict(recorded)
    registry = [c for c in ORDER if columns.get(c) == "registry"]
    if registry:
        out, got = schemas().topic_formats(topic, registry, recorded)
        fields.update({f.column: f for f in out.fields})
        entries.update(got)
    for column in (c for c in ORDER if columns.get(c) == "json"):
        fields[column], entries[column] = json_infer.field_format(log_dirs, topic, column, recorded.get(column), starts)
    return Formats(tuple(fields[c] for c in ORDER if c in fields)), {c: entries[c] for c in ORDER if c in fields}
