"""Export of closed segments to Spark tables, and a PySpark data source that reads segments.

- `segments`: read-only planning and decoding of segment files into Arrow (no Spark);
- `datasource`: the `tidelog` PySpark data source (`register(spark)`);
- `stream`: its streaming reader (`spark.readStream.format("tidelog")`);
- `session`: the tuned SparkSession and the catalog (`build_session`, `attach_tables`);
- `manifest`: what was exported, and the in-flight run (exactly-once protocol);
- `job`: the export/compaction job; `follow`: `--follow`, a run per closed segment, and lag metrics;
  `progress`: bars and the summary; `cli`: `tidelog export`;
- `direct`: the Spark tasks' pyarrow write of both formats; `delta`: the Delta tables (Spark side,
  the run's Delta steps); `deltalog`: the Delta commit of those files with delta-rs (`deltalake`).

Nothing here is imported by the broker; pyspark is needed only by `datasource`, `stream`, `session`,
`job` and `delta`; deltalake only by `deltalog`.
"""
