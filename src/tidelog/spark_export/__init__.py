"""Export of closed segments to Spark tables, and a PySpark data source that reads segments.

- `segments`: read-only planning and decoding of segment files into Arrow (no Spark);
- `datasource`: the `tidelog` PySpark data source (`register(spark)`);
- `session`: the tuned SparkSession and the catalog (`build_session`, `attach_tables`);
- `manifest`: what was exported, and the in-flight run (exactly-once protocol);
- `job`: the export/compaction job; `progress`: bars and the summary; `cli`: `tidelog export`.
- `delta`: Delta Lake tables; `iceberg`, `iceberg_job`, `iceberg_source`: Iceberg tables (pyiceberg),
  their run path, and Spark's reads of them (the `tidelog_iceberg` data source).

Nothing here is imported by the broker; pyspark is needed only by `datasource`, `session` and `job`.
"""
