"""Export of closed segments to Spark tables, and a PySpark data source that reads segments.

- `segments`: read-only planning and decoding of segment files into Arrow (no Spark);
- `datasource`: the `tidelog` PySpark data source (`register(spark)`); `reader`: its batch reader;
- `stream`: its streaming reader (`spark.readStream.format("tidelog")`);
- `session`: the tuned SparkSession and the catalog (`build_session`, `attach_tables`); `tables`:
  the tables' names, locations and columns;
- `manifest`: what was exported, and the in-flight run (exactly-once protocol);
- `job`: the export/compaction job (`compaction`: the newest row per key of `_latest`);
  `follow`: `--follow`, a run per closed segment, and lag metrics; `progress`: bars and the
  summary; `cli`: `tidelog export`;
- `direct`: the Spark tasks' pyarrow write of every format; `delta`: the Delta tables (Spark side,
  the run's Delta steps); `deltalog`: the Delta commit of those files with delta-rs (`deltalake`);
- `iceberg`, `iceberg_job`, `iceberg_source`: Iceberg tables (pyiceberg), their run path, and
  Spark's reads of them (the `tidelog_iceberg` data source).

Nothing here is imported by the broker; pyspark is needed only by `datasource`, `reader`, `stream`,
`session`, `job`, `compaction`, `delta`, `iceberg_job` and `iceberg_source`; deltalake only by
`deltalog`; pyiceberg only by `iceberg` and `iceberg_source`.
"""
