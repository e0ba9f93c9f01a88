"""Typed columns: record values (and keys) in Confluent's framing decoded into Arrow columns.

Confluent's serializers frame a value as magic byte 0, the 4-byte big-endian id of the writer's
schema in the registry, then the Avro binary body. `Formats` (picklable: built on the driver by
`registry_schemas.formats`, used in the Python workers) replaces the `value` (`key`) column of
the batches `segments.read_task` yields with the decoded values, in the column type `Field.type`
(the union of every registered version of the subject, `avro_arrow`), and adds:

- `value_raw` (`key_raw`): the record's bytes, only where they did not decode (null elsewhere);
- `_error`: why not (`value: unknown schema id 7`, `value: not in Confluent's framing`, `value:
  Avro decode failure (schema id 3): ...`, `key: ...; value: ...` for both); null for a row that
  decoded.

A null value (a tombstone) stays null with no error. A record that does not decode never fails
the task: its typed column is null and the two columns above say what happened.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import avro_arrow

ERROR_COLUMN = "_error"
FORMATS = ("raw", "registry")


@dataclass(frozen=True)
class Writer:
    """A registered schema a record may name by id."""

    schema_type: str  # AVRO, JSON, PROTOBUF
    text: str
    refs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Field:
    """How one column (`value` or `key`) is decoded."""

    column: str
    subject: str
    type: Any  # pyarrow.DataType
    writers: dict[int, Writer] = field(default_factory=dict)  # the subject's versions' ids
    other_ids: frozenset[int] = frozenset()  # ids of other subjects' schemas

    @property
    def raw_column(self) -> str:
        return self.column + "_raw"


@dataclass(frozen=True)
class Formats:
    fields: tuple[Field, ...]

    def __bool__(self) -> bool:
        return bool(self.fields)

    def extra_columns(self) -> tuple[str, ...]:
        return tuple(f.raw_column for f in self.fields) + (ERROR_COLUMN,)

    def schema(self, base: Any) -> Any:
        """`base` (the read schema) with the typed columns, then the extra ones."""
        import pyarrow as pa

        types = {f.column: f.type for f in self.fields}
        out = [pa.field(f.name, types.get(f.name, f.type)) for f in base]
        out += [pa.field(f.raw_column, pa.binary()) for f in self.fields]
        return pa.schema(out + [pa.field(ERROR_COLUMN, pa.string())])

    def apply(self, batch: Any, schema: Any) -> Any:
        """`batch` (in the read schema) decoded into `schema` (`self.schema(...)`)."""
        import pyarrow as pa

        cols = {name: batch.column(name) for name in batch.schema.names}
        errors: list[str | None] = [None] * batch.num_rows
        for f in self.fields:
            typed, raw, errs = decode_column(batch.column(f.column), f)
            cols[f.column], cols[f.raw_column] = typed, raw
            for i, e in enumerate(errs):
                if e is not None:
                    errors[i] = f"{f.column}: {e}" if errors[i] is None else f"{errors[i]}; {f.column}: {e}"
        cols[ERROR_COLUMN] = pa.array(errors, pa.string())
        return pa.RecordBatch.from_arrays([cols[n] for n in schema.names], schema=schema)


def read_task(task, formats: Formats, rows_per_batch: int = 65536) -> Iterator:
    """`segments.read_task` with the columns of `formats` decoded."""
    from . import segments as seg

    schema = formats.schema(seg.arrow_schema())
    for batch in seg.read_task(task, rows_per_batch):
        yield formats.apply(batch, schema)


@functools.lru_cache(maxsize=256)
def _reader(writer: Writer):
    """fastavro's parsed writer schema and the fix its values need (per worker process)."""
    parsed, _named = avro_arrow.parse(writer.text, writer.refs)
    return parsed, avro_arrow.fixup(writer.text, writer.refs)


def decode_one(raw: bytes, f: Field) -> Any:
    """The decoded value of framed `raw`; ValueError saying why not."""
    from fastavro import schemaless_reader

    if len(raw) < 5 or raw[0] != 0:
        raise ValueError("not in Confluent's framing (magic byte 0, 4-byte schema id)")
    sid = int.from_bytes(raw[1:5], "big")
    writer = f.writers.get(sid)
    if writer is None:
        if sid in f.other_ids:
            raise ValueError(f"schema id {sid} is not a version of subject {f.subject}")
        raise ValueError(f"unknown schema id {sid}")
    if writer.schema_type != "AVRO":
        raise ValueError(f"schema id {sid} is {writer.schema_type}, not AVRO")
    parsed, fix = _reader(writer)
    body = io.BytesIO(raw)
    body.seek(5)
    try:
        value = schemaless_reader(body, parsed, None)
    except Exception as e:  # noqa: BLE001 - fastavro raises EOFError, ValueError, UnicodeDecodeError, ...
        raise ValueError(f"Avro decode failure (schema id {sid}): {type(e).__name__}: {e}") from None
    if body.tell() != len(raw):
        raise ValueError(f"Avro decode failure (schema id {sid}): {len(raw) - body.tell()} bytes left over")
    return fix(value) if fix is not None else value


def decode_column(raw_column, f: Field):
    """(typed array, raw bytes of the rows that failed, per-row error or None)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values: list[Any] = []
    errors: list[str | None] = []
    for raw in raw_column.to_pylist():
        value, error = None, None
        if raw is not None:
            try:
                value = decode_one(raw, f)
            except ValueError as e:
                error = str(e)
        values.append(value)
        errors.append(error)
    try:
        typed = pa.array(values, f.type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        typed = _array_row_by_row(values, errors, f.type)
    failed = pa.array([e is not None for e in errors], pa.bool_())
    raw = pc.if_else(failed, raw_column, pa.scalar(None, pa.binary()))
    return typed, raw, errors


def _array_row_by_row(values: list, errors: list[str | None], type_):
    """A value that does not fit the column type (a schema outside the union) becomes an error."""
    import pyarrow as pa

    for i, v in enumerate(values):
        if v is None:
            continue
        try:
            pa.array([v], type_)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            values[i] = None
            errors[i] = f"does not fit the column type: {type(e).__name__}: {e}"
    return pa.array(values, type_)
