"""The Delta log side of the Delta export, with delta-rs (the `deltalake` package): the Parquet
files the Spark tasks wrote with pyarrow (`direct`) become one Delta commit.

- `describe` runs in the Spark task that wrote a file, right after it closed it: the file's size,
  modification time and Delta statistics (`numRecords`; `nullCount` per top-level column;
  `minValues`/`maxValues` of `topic`, `offset`, `timestamp`, `timestamp_type`, `producer_id`,
  the columns Spark's Delta writer would give bounds to, binary, boolean and nested ones excepted)
  read from the Parquet footer pyarrow wrote: no row is read again.
- `commit` writes one commit of `add` actions (paths relative to the table, partition values
  from the `date=.../partition=...` directories) with the idempotent-write pair as a `txn`
  action (app id `tidelog-export`, version = the run's serial) and the run id as the commit's
  `userMetadata`, in one atomic log entry: a reader sees all of the run's files or none.
- `commit` of files whose schema widens the table's (a typed column, `typed`, gained fields since
  the table's last commit) puts the widened schema in the same commit, as a `metaData` action:
  delta-rs writes one only in an overwrite, so that commit is an overwrite of no partition
  (`NO_PARTITION`): no `remove` action, the run's `add`s, the schema and the `txn`, one log entry.
- `create` makes the append table (version 0), as Spark's `CREATE TABLE` would.
- `committed` reads the table's txn version back: whether a run's commit is in the table.
- `remove_uncommitted` deletes the files named with a run id that the table does not reference
  (a crashed run's), `remove_strays` those beside a commit's files (a failed Spark task
  attempt's): a Delta reader never reads them, this only frees the space.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

APP_ID = "tidelog-export"
BOUNDED = ("topic", "offset", "timestamp", "timestamp_type", "producer_id")


def describe(path: str, rows: int) -> tuple[str, int, int, int, str]:
    """(path, rows, size, modification time in ms, Delta stats JSON) of a Parquet file just
    written. Runs in the Spark task that wrote it."""
    import pyarrow.parquet as pq

    st = os.stat(path)
    stats = footer_stats(pq.read_metadata(path))
    assert stats["numRecords"] == rows, (path, stats["numRecords"], rows)
    return path, rows, st.st_size, int(st.st_mtime * 1000), json.dumps(stats, separators=(",", ":"))


def footer_stats(md) -> dict:
    """Delta file statistics from a Parquet footer (the row groups' column statistics combined)."""
    mins, maxs, nulls = {}, {}, {}
    for i in range(md.num_columns):
        name = md.schema.column(i).path
        if "." in name:  # a nested column (headers): no statistics, as with Spark's Delta writer
            continue
        bounds = _column_bounds(md, i) if name in BOUNDED else None
        count = _null_count(md, i)
        if count is not None:
            nulls[name] = count
        if bounds is not None:
            mins[name], maxs[name] = _json_value(bounds[0], "min"), _json_value(bounds[1], "max")
    return {"numRecords": md.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def _null_count(md, i: int) -> int | None:
    total = 0
    for rg in range(md.num_row_groups):
        s = md.row_group(rg).column(i).statistics
        if s is None or not s.has_null_count:
            return None
        total += s.null_count
    return total


def _column_bounds(md, i: int) -> tuple | None:
    """(min, max) over the row groups, None when a row group with a value has no bounds (then the
    column gets none: a missing bound only costs data skipping, a wrong one would lose rows)."""
    lo = hi = None
    for rg in range(md.num_row_groups):
        group = md.row_group(rg)
        s = group.column(i).statistics
        if s is not None and s.has_min_max:
            lo = s.min if lo is None else min(lo, s.min)
            hi = s.max if hi is None else max(hi, s.max)
        elif s is None or not s.has_null_count or s.null_count != group.num_rows:
            return None
    return None if lo is None else (lo, hi)


def _json_value(v, side: str):
    """A bound as Delta's stats hold it: timestamps in ISO 8601 at millisecond precision (rounded
    outwards, so a bound stays a bound), other values as JSON has them."""
    if isinstance(v, dt.datetime):
        v = v.astimezone(dt.UTC)
        sub = v.microsecond % 1000
        if sub and side == "max":
            v += dt.timedelta(microseconds=1000 - sub)
        elif sub:
            v -= dt.timedelta(microseconds=sub)
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    return v


def partition_values(rel: str) -> dict[str, str | None]:
    """{"date": ..., "partition": ...} from a path relative to the table (Hive-style directories)."""
    values: dict[str, str | None] = {}
    for part in rel.split("/")[:-1]:
        k, _, v = part.partition("=")
        values[k] = v
    return values


def table_schema(formats=None):
    """The Arrow schema of `tidelog.<topic>` (`session.TABLE_COLUMNS`, `tables.typed_columns` with
    typed columns): the columns the tasks write (`direct.files_schema`; `formats`: a
    `typed.Formats`), then the partition columns."""
    import pyarrow as pa

    from . import direct

    fields = list(direct.files_schema(direct.FILE_COLUMNS, formats))
    return pa.schema(fields + [pa.field("date", pa.date32()), pa.field("partition", pa.int32())])


def create(location: Path, schema=None) -> None:
    """The append table at `location` (version 0, `CREATE TABLE`; `schema`: `table_schema()`'s by
    default), unless the location holds one."""
    if (Path(location) / "_delta_log").exists():
        return
    from deltalake import DeltaTable

    Path(location).parent.mkdir(parents=True, exist_ok=True)
    DeltaTable.create(
        str(location),
        schema if schema is not None else table_schema(),
        mode="ignore",
        partition_by=["date", "partition"],
    )


def committed(location: Path, serial: int) -> bool:
    """Whether the table at `location` holds the commit of the run numbered `serial`."""
    from deltalake import DeltaTable

    version = DeltaTable(str(location)).transaction_version(APP_ID)
    return version is not None and version >= serial


class SchemaChange(ValueError):
    """A run's files would change a column of the table other than by adding fields."""


def widened(table, schema):
    """`schema` (Arrow) as a Delta schema when it widens the table's, None when it is the table's.
    Widening adds columns or struct fields (in structs, list items and map values) and changes
    nothing else; anything else is a `SchemaChange` (Delta needs its type-widening feature for a
    change of type, which the export does not enable)."""
    from deltalake import Schema as DeltaSchema

    new = DeltaSchema.from_arrow(schema)
    old_doc, new_doc = json.loads(table.schema().to_json()), json.loads(new.to_json())
    if old_doc == new_doc:
        return None
    _check_widens(old_doc, new_doc, "")
    return new


def _check_widens(old, new, path: str) -> None:
    """That Delta type `new` (a schema's JSON) holds every field of `old` with a type it widens."""
    if isinstance(old, dict) and isinstance(new, dict) and old.get("type") == new.get("type"):
        kind = old["type"]
        if kind == "struct":
            fields = {f["name"]: f for f in new["fields"]}
            for f in old["fields"]:
                if f["name"] not in fields:
                    raise SchemaChange(f"{path + f['name']}: the table has it, the run's files do not")
                _check_widens(f["type"], fields[f["name"]]["type"], f"{path}{f['name']}.")
            return
        if kind == "array":
            return _check_widens(old["elementType"], new["elementType"], path + "[].")
        if kind == "map":
            _check_widens(old["keyType"], new["keyType"], path + "{key}.")
            return _check_widens(old["valueType"], new["valueType"], path + "{}.")
    if old != new:
        raise SchemaChange(f"{path.rstrip('.') or 'the table'}: {json.dumps(old)} would become {json.dumps(new)}")


# delta-rs writes a metaData action (a new schema) only in an overwrite; an overwrite of the
# partitions matching this filter, which hold no file (Kafka partitions are >= 0), adds the run's
# files and changes the schema in one commit, as an append would add them.
NO_PARTITION = [("partition", "=", "-1")]


def commit(location: Path, files: list[tuple[str, int, int, int, str]], run_id: str, serial: int, schema=None) -> int:
    """One commit adding `files` (`describe`'s tuples) to the table at `location`, with the run's
    txn action and its id as `userMetadata`: the commit's table version. `schema` (Arrow: that of
    the files, `table_schema`) widening the table's (`widened`: a typed column gained fields) puts
    the widened schema in the same commit (a metaData action), so a reader sees the run's rows
    and the columns they have together, and a crash leaves both or neither."""
    from deltalake import CommitProperties, DeltaTable, Transaction
    from deltalake.transaction import AddAction, RemoveAction

    table = DeltaTable(str(location))
    root = Path(location).resolve()
    actions: list[AddAction | RemoveAction] = []
    for path, _rows, size, mtime, stats in files:
        rel = Path(path).resolve().relative_to(root).as_posix()
        actions.append(AddAction(rel, size, partition_values(rel), mtime, True, stats))
    new_schema = widened(table, schema) if schema is not None else None
    table.create_write_transaction(
        actions,
        mode="append" if new_schema is None else "overwrite",
        schema=table.schema() if new_schema is None else new_schema,
        partition_by=table.metadata().partition_columns,
        partition_filters=None if new_schema is None else NO_PARTITION,
        commit_properties=CommitProperties(
            custom_metadata={"userMetadata": run_id},
            app_transactions=[Transaction(app_id=APP_ID, version=serial)],
        ),
    )
    table.update_incremental()
    return table.version()


def run_rows(location: Path, run_id: str) -> int:
    """Rows of the table's files named with `run_id` (from their `numRecords` statistics)."""
    from deltalake import DeltaTable

    return sum(n or 0 for _p, n in _run_files(DeltaTable(str(location)), run_id))


def remove_uncommitted(location: Path, run_id: str) -> int:
    """Delete the files named with `run_id` under `location` that the table does not reference
    (a crashed run's): the number deleted."""
    from deltalake import DeltaTable

    root = Path(location).resolve()
    found = list(root.rglob(f"part-{run_id}-*"))
    if not found:
        return 0
    return _remove(found, {p.rsplit("/", 1)[-1] for p, _n in _run_files(DeltaTable(str(root)), run_id)})


def remove_strays(files: list[tuple], run_id: str) -> int:
    """After the commit of `files` (`describe`'s tuples): delete the other files named with
    `run_id` in their directories (a failed Spark task attempt's, beside its retry's)."""
    dirs = {Path(f[0]).parent for f in files}
    return _remove([f for d in dirs for f in d.glob(f"part-{run_id}-*")], {Path(f[0]).name for f in files})


def _remove(found: list[Path], keep: set[str]) -> int:
    removed = 0
    for f in found:
        if f.name not in keep:
            f.unlink(missing_ok=True)
            removed += 1
    return removed


def _run_files(table, run_id: str) -> list[tuple[str, int | None]]:
    """(path, numRecords) of the table's files named with `run_id`."""
    import pyarrow as pa

    adds = pa.table(table.get_add_actions())
    prefix = f"part-{run_id}-"
    return [
        (p, n)
        for p, n in zip(adds.column("path").to_pylist(), adds.column("num_records").to_pylist())
        if p.rsplit("/", 1)[-1].startswith(prefix)
    ]
