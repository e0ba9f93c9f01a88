"""`--value-format json` / `--key-format json`: plain JSON values (no registry, no framing) in a
typed column whose type is inferred from the values and evolves across runs.

The type (`json_arrow.infer`): an object is a struct of its members in the order first seen, an
array a list of its items' type, a string, boolean, integer (int64; one beyond int64 a double)
or other number (double) the like; members only ever null, `[]` or `{}` are left out until a
value shows their type. Values of one field with different types widen while nothing is
recorded yet (`json_arrow.widen`): int64 and double to double, anything else to a string holding
each value's JSON text.

Across runs the type only grows (`json_arrow.extend`): the manifest records it (`{"format":
"json", "arrow": ..., "type": ...}`, like a registry column's union), a later run adds the
fields it meets that the recorded type lacks (new nullable struct fields), and never changes a
recorded field's type. A value whose field conflicts with the recorded type (a string where
`int64` was recorded, even a double where `int64` was) is NOT widened: that field is null in the
row, the rest of the value kept, the row keeps `value_raw` and `_error` says which field
(`json_arrow.conformer`). Widening a recorded int64 to double would leave earlier files holding
int64 under a double column, which readers do not all convert.

Within one run, without a second pass over the data:

1. on the driver, the type is the recorded one extended with that of a sample: the first
   `SAMPLE_RECORDS` records of each partition from where the run starts (`sample`);
2. the Spark tasks decode and write with that type; a task that meets members the type lacks
   (a field first seen after the sample) flags those rows and reports the members' type
   (`typed.take_new_types`);
3. if any task reported, the driver extends the type with every report and rewrites only the
   task groups that reported, with the extended type (`direct.write_inferring`); the first
   files of those groups are discarded, the other groups' files stay (their narrower structs
   read under the extended type with the new fields null). The extended type is the one
   recorded.

So a field first seen in a later batch of a run is neither dropped nor left flagged: it is in
the table's type, and in that row, after the run. A second rewrite is never needed (the
rewritten groups meet exactly the members they reported); should one report anyway, its rows
stay flagged, with their bytes in `value_raw`.

The `tidelog` data source (`valueFormat` json) samples the same way when the read is planned
and has no third step: rows with members outside the sampled type keep them in `value_raw` and
say so in `_error` (`not in the column type yet: ...`).

Edge: a column of a run whose values are all null, or objects with only null members, has no
known type: it is written, and recorded, as a string (JSON text), which later runs keep.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import arrow_types, json_arrow
from . import segments as seg
from .typed import Field, Formats

SAMPLE_RECORDS = 1000


def sample(
    log_dirs: Sequence[str | Path], topic: str, column: str, starts: dict[int, int], limit: int = SAMPLE_RECORDS
) -> Any:
    """The inferred type of the first `limit` JSON values of `column` in each partition of
    `topic`, from offset `starts[partition]` (0 when absent); None when none has a known type."""
    out = None
    for partition, pdir in seg.partition_dirs(log_dirs, topic).items():
        plan = seg.plan_partition(topic, partition, pdir, starts.get(partition, 0))
        seen = 0
        for task in plan.tasks:
            for batch in seg.read_task(task, rows_per_batch=limit):
                for raw in batch.column(column).to_pylist()[: limit - seen]:
                    out = json_arrow.widen(out, _infer(raw))
                seen += batch.num_rows
                if seen >= limit:
                    break
            if seen >= limit:
                break
    return out


def _infer(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json_arrow.infer(json.loads(raw))
    except ValueError:  # not JSON: that row will say so
        return None


def field_format(
    log_dirs: Sequence[str | Path], topic: str, column: str, recorded: dict | None, starts: dict[int, int] | None
) -> tuple[Field, dict]:
    """The `Field` of an inferred column (the recorded type extended with that of a sample from
    `starts`; with `starts` None, the recorded type alone) and its manifest entry."""
    recorded_type = arrow_types.from_json(recorded["arrow"]) if recorded and "arrow" in recorded else None
    found = sample(log_dirs, topic, column, starts) if starts is not None else None
    t = json_arrow.extend(recorded_type, found)
    f = Field(column, "", t, kind="json") if t is not None else _unknown(column)
    return f, entry(f)


def _unknown(column: str) -> Field:
    import pyarrow as pa

    return Field(column, "", pa.string(), kind="json", known=False)


def entry(f: Field) -> dict:
    """The manifest entry of an inferred column."""
    from .tables import spark_type

    return {"format": "json", "arrow": arrow_types.to_json(f.type), "type": spark_type(f.type)}


def entries(old: dict[str, dict], formats: Formats) -> dict[str, dict]:
    """`old` (a topic's manifest entries) with those of the inferred columns of `formats`."""
    return {**old, **{f.column: entry(f) for f in formats.fields if f.kind == "json"}}
