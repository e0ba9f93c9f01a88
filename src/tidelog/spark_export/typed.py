"""Typed columns: record values (and keys) in Confluent's framing decoded into Arrow columns.

Confluent's serializers frame a value as magic byte 0, the 4-byte big-endian id of the writer's
schema in the registry, then the body: Avro binary, UTF-8 JSON (JSON Schema), or the message
indexes then the Protobuf message (`proto_arrow`). `Formats` (picklable: built on the driver by
`registry_schemas.formats`, used in the Python workers) replaces the `value` (`key`) column of
the batches `segments.read_task` yields with the decoded values, in the column type `Field.type`
(the union of every registered version of the column's subjects, `arrow_types.merge`), and adds:

- `value_raw` (`key_raw`): the record's bytes, only where they did not decode whole (null elsewhere);
- `_error`: why not (`value: unknown schema id 7`, `value: not in Confluent's framing`, `value:
  Avro decode failure (schema id 3): ...`, `key: ...; value: ...` for both); null for a row that
  decoded.

Avro and Protobuf values either decode whole or not at all (the typed column null). A JSON
value is fitted to the column type field by field (`json_arrow.conformer`): a field whose value
does not fit its type is null, the rest of the value kept, and the row is flagged as above.

A null value (a tombstone) stays null with no error. A record that does not decode never fails
the task: its typed column is null and the two columns above say what happened. Parsed schemas
(fastavro's, Protobuf descriptor pools, JSON conformers) are cached per worker process, per
schema id and column type.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import avro_arrow

ERROR_COLUMN = "_error"
FORMATS = ("raw", "registry", "json")


@dataclass(frozen=True)
class Writer:
    """A registered schema a record may name by id."""

    schema_type: str  # AVRO, JSON, PROTOBUF
    text: str
    refs: tuple[tuple[str, str], ...] = ()  # (reference name, schema text), those they reference first
    messages: frozenset[str] = frozenset()  # PROTOBUF: full names of the messages the column holds


@dataclass(frozen=True)
class Field:
    """How one column (`value` or `key`) is decoded."""

    column: str
    subject: str
    type: Any  # pyarrow.DataType
    writers: dict[int, Writer] = field(default_factory=dict)  # the subject's versions' ids
    other_ids: frozenset[int] = frozenset()  # ids of other subjects' schemas
    # "registry": Confluent's framing, the schemas' union; "json": plain JSON, an inferred type
    # (`json_infer`), whose members the type lacks are reported (`take_new_types`)
    kind: str = "registry"
    known: bool = True  # json: False while nothing is known of the type (`type` is then string)

    @property
    def raw_column(self) -> str:
        return self.column + "_raw"


@dataclass(frozen=True)
class Formats:
    fields: tuple[Field, ...]

    def __bool__(self) -> bool:
        return bool(self.fields)

    @property
    def infers(self) -> bool:
        """Whether a column's type is inferred from the values (`--value-format json`)."""
        return any(f.kind == "json" for f in self.fields)

    def with_new_types(self, new: dict[str, Any]) -> Formats:
        """These formats with the members the workers reported (`take_new_types`: column -> the
        type of what the column's type lacked) added to the inferred columns' types."""
        from dataclasses import replace

        from .json_arrow import extend

        return Formats(
            tuple(
                replace(f, type=extend(f.type if f.known else None, new[f.column]), known=True)
                if f.kind == "json" and new.get(f.column) is not None
                else f
                for f in self.fields
            )
        )

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
            decode = decode_json_column if f.kind == "json" else decode_column
            typed, raw, errs = decode(batch.column(f.column), f)
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
    texts = tuple(text for _name, text in writer.refs)
    parsed, _named = avro_arrow.parse(writer.text, texts)
    return parsed, avro_arrow.fixup(writer.text, texts)


@functools.lru_cache(maxsize=64)
def _conformer(type_):
    from . import json_arrow

    return json_arrow.conformer(type_)


def _writer(raw: bytes, f: Field) -> tuple[int, Writer]:
    if len(raw) < 5 or raw[0] != 0:
        raise ValueError("not in Confluent's framing (magic byte 0, 4-byte schema id)")
    sid = int.from_bytes(raw[1:5], "big")
    writer = f.writers.get(sid)
    if writer is None:
        if sid in f.other_ids:
            raise ValueError(f"schema id {sid} is not a version of subject {f.subject}")
        raise ValueError(f"unknown schema id {sid}")
    return sid, writer


def decode_one(raw: bytes, f: Field) -> Any:
    """The decoded value of framed `raw`; ValueError saying why not (a JSON value with fields
    that do not fit is returned with those fields null: `decode` says which)."""
    return decode(raw, f)[0]


def decode(raw: bytes, f: Field) -> tuple[Any, str | None]:
    """(value, None) or (value with the fields that did not fit null, why); ValueError when
    nothing decodes."""
    sid, writer = _writer(raw, f)
    if writer.schema_type == "AVRO":
        return _avro(raw, sid, writer), None
    if writer.schema_type == "JSON":
        return _json(raw[5:], sid, f.type)
    if writer.schema_type == "PROTOBUF":
        from . import proto_arrow

        return proto_arrow.decode(raw, sid, writer), None
    raise ValueError(f"schema id {sid} is of type {writer.schema_type}, which is not decoded")


def _avro(raw: bytes, sid: int, writer: Writer) -> Any:
    from fastavro import schemaless_reader

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


def _json(body: bytes, sid: int | None, type_) -> tuple[Any, str | None]:
    from .json_arrow import Outcome

    try:
        parsed = json.loads(body)
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        where = f" (schema id {sid})" if sid is not None else ""
        raise ValueError(f"JSON decode failure{where}: {e}") from None
    if parsed is None:
        return None, None
    outcome = Outcome()
    value = _conformer(type_)(parsed, outcome)
    return value, "; ".join(outcome.errors) or None


def decode_column(raw_column, f: Field):
    """(typed array, raw bytes of the rows that failed, per-row error or None)."""
    values: list[Any] = []
    errors: list[str | None] = []
    for raw in raw_column.to_pylist():
        value, error = None, None
        if raw is not None:
            try:
                value, error = decode(raw, f)
            except ValueError as e:
                error = str(e)
        values.append(value)
        errors.append(error)
    return _arrays(raw_column, values, errors, f)


# column -> the type of the members inferred columns lacked, since the last `take_new_types`
# (per worker process: a task's batches are decoded in one process, one task at a time)
_NEW_TYPES: dict[str, Any] = {}


def take_new_types() -> dict[str, Any]:
    """What the inferred (json) columns met that their types lack, since the last call."""
    out = dict(_NEW_TYPES)
    _NEW_TYPES.clear()
    return out


def decode_json_column(raw_column, f: Field):
    """`decode_column` for plain JSON (`kind` json): values fitted to the inferred type; a row
    with members the type lacks is flagged (`value_raw` kept) and the members' type is noted
    for `take_new_types`."""
    from .json_arrow import Outcome, new_members, widen

    fit = _conformer(f.type) if f.known else None
    values: list[Any] = []
    errors: list[str | None] = []
    for raw in raw_column.to_pylist():
        value, error = None, None
        if raw is not None:
            try:
                parsed = json.loads(raw)
            except ValueError as e:
                parsed, error = None, f"not JSON: {e}"
            if parsed is not None:
                outcome = Outcome(report_new=True)
                if fit is None:
                    value = json.dumps(parsed, ensure_ascii=False)
                    outcome.new.append((None, parsed))
                else:
                    value = fit(parsed, outcome)
                new, names = new_members(outcome.new) if outcome.new else (None, [])
                if new is not None:
                    _NEW_TYPES[f.column] = widen(_NEW_TYPES.get(f.column), new)
                    outcome.errors.append(f"not in the column type yet: {', '.join(names)}")
                error = "; ".join(outcome.errors) or None
        values.append(value)
        errors.append(error)
    return _arrays(raw_column, values, errors, f)


def _arrays(raw_column, values: list, errors: list[str | None], f: Field):
    import pyarrow as pa
    import pyarrow.compute as pc

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
