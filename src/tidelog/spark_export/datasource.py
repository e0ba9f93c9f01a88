"""The `tidelog` PySpark data source: segment files read directly, one Spark partition per segment.

    register(spark)
    df = (spark.read.format("tidelog")
          .option("topic", "orders")                  # required
          .option("partitions", "0,2")                # default: every partition on disk
          .option("startingOffset", 100)              # inclusive; "endingOffset" exclusive
          .option("startingTimestamp", 1700000000000) # ms, inclusive; "endingTimestamp" exclusive
          .option("isolationLevel", "read_committed") # default; or read_uncommitted
          .option("includeActiveSegment", "false")    # default: closed segments only
          .option("maxPartitionBytes", 0)             # default 0: one Spark partition per segment
          .option("minPartitions", 2)                 # with maxPartitionBytes: pack into at least this many
          .option("valueFormat", "raw")               # registry: typed (Avro, JSON Schema, Protobuf); json
          .option("keyFormat", "raw")                 # the same for keys
          .option("schemaRegistryUrl", URL)           # default: `_schemas` read from the log dirs
          .option("valueSubjectStrategy", "topic")    # or record, topic-record (`subjects`); keySubjectStrategy
          .option("valueSubjects", "a.B,a.C")         # the subjects, instead of the strategy's; keySubjects
          .load("/var/lib/tidelog"))                  # the broker's log.dirs, comma-separated

Columns: topic, partition, offset, timestamp (UTC, millisecond precision), timestamp_type
(0 CreateTime, 1 LogAppendTime), key, value, headers array<struct<key, value>>, producer_id,
is_transactional; with `valueFormat`/`keyFormat` registry, `value`/`key` are typed (the union of
the subject's versions, `typed`), with json a struct inferred from the first records
(`json_infer`), and `value_raw`/`key_raw` and `_error` follow. Filters on
partition, offset and timestamp are pushed down and applied exactly (the time index skips whole
segments and positions inside one). Records are decoded on executors into Arrow record batches.
Filter pushdown needs `spark.sql.python.filterPushdown.enabled`, which `register` sets.

pyspark 4.3 keeps the partitions planned for the last query with pushed-down filters on the
DataFrame `load()` returned, and a later query on that same DataFrame *without* such filters
reuses them (the read info lives on the shared `PythonDataSourceV2`; fixed upstream by scoping it
to the scan). So call `load()` once per differently filtered query, or set option
`pushFilters=false` on a DataFrame you reuse (Spark then filters after a full read).

`maxPartitionBytes` > 0 packs consecutive small segments into one Spark partition up to that
many bytes (each Python task costs a fraction of a second however little it reads); the export
job uses 128 MiB, which leaves segments of Kafka's default 1 GiB one per partition.

The reader (planning, pushdown, decoding) is `reader.TidelogReader`, shared with the streaming
reader (`stream`).

Internal options used by the export job: `offsets` (JSON {"<partition>": [start, end]}) and
`scanFrom` (JSON {"<partition>": offset}, where the last-stable-offset scan may start; see
`segments`).
"""

from __future__ import annotations

import json
import os
import sys

from pyspark.sql.datasource import DataSource

from .reader import TidelogReader

NAME = "tidelog"
SCHEMA = (
    "topic string, partition int, offset long, timestamp timestamp, timestamp_type int, key binary, "
    "value binary, headers array<struct<key: string, value: binary>>, producer_id long, "
    "is_transactional boolean"
)


def export_options(
    topic: str,
    offsets: dict[int, tuple[int, int]],
    scan_from: dict[int, int],
    max_partition_bytes: int,
    min_partitions: int,
) -> dict[str, str]:
    """The options the export job reads a topic's range with (the internal `offsets`, `scanFrom`)."""
    return {
        "topic": topic,
        "offsets": json.dumps({str(k): list(v) for k, v in offsets.items()}),
        "scanFrom": json.dumps({str(k): v for k, v in scan_from.items()}),
        "maxPartitionBytes": str(max_partition_bytes),
        "minPartitions": str(min_partitions),
    }


def register(spark) -> None:
    """Make `spark.read.format("tidelog")` and `spark.readStream.format("tidelog")` available
    in this session.

    The data source runs in Python workers, which must import tidelog: when PYSPARK_PYTHON is
    not set, the session's workers would start `python3` from PATH (outside a virtualenv that is
    not activated), so they are pointed at this interpreter instead."""
    if not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
        sc = getattr(spark, "sparkContext", None)
        if sc is not None and getattr(sc, "pythonExec", sys.executable) != sys.executable:
            sc.pythonExec = sys.executable
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(TidelogDataSource)


class TidelogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self):
        o = {k.lower(): v for k, v in self.options.items()}
        if (o.get("valueformat") or "raw").lower() == "raw" and (o.get("keyformat") or "raw").lower() == "raw":
            return SCHEMA
        from pyspark.sql.pandas.types import from_arrow_schema

        from . import segments as seg

        reader = TidelogReader(dict(self.options))
        assert reader.formats is not None
        return from_arrow_schema(reader.formats.schema(seg.arrow_schema()))

    def reader(self, schema) -> TidelogReader:
        return TidelogReader(dict(self.options))

    def streamReader(self, schema):
        """`spark.readStream.format("tidelog")`: see `stream`."""
        from .stream import TidelogStreamReader

        return TidelogStreamReader(dict(self.options))
