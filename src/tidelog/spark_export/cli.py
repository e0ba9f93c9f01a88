"""`tidelog export` (also `python -m tidelog.spark_export`): run the export/compaction job once.

    tidelog export --log-dirs DIR[,DIR] --warehouse DIR [--topics T [T ...]] [--master URL]
                   [--driver-memory 1g] [--shuffle-partitions 4] [--jvm-flags "..."] [--hive]
                   [--compact-topics T ...] [--conf key=value ...] [--max-partition-bytes N]
                   [--rewrite-min-files N] [--table-format parquet|delta|iceberg]
                   [--iceberg-catalog-uri URL] [--follow [--poll-interval S] [--metrics-port N]]
                   [--value-format raw|registry|json] [--key-format raw|registry|json] [--schema-registry-url URL]
                   [--value-subject-strategy topic|record|topic-record] [--value-subject S ...]
                   [--key-subject-strategy ...] [--key-subject S ...]

pyspark is imported only when the command runs, so the broker never needs it.
"""

from __future__ import annotations

import argparse
import logging
import sys


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="export closed segments to Spark tables (needs tidelog[spark])")
    configure(p)
    p.set_defaults(func=cmd_export)


def configure(p: argparse.ArgumentParser) -> None:
    from .session import SparkSettings

    d = SparkSettings()
    p.add_argument("--log-dirs", required=True, help="the broker's log.dirs (comma-separated)")
    p.add_argument("--warehouse", required=True, help="directory of the Spark tables and the manifest")
    p.add_argument("--topics", nargs="+", help="topics to export (default: every topic on disk)")
    p.add_argument(
        "--compact-topics",
        nargs="+",
        default=[],
        help="also build <topic>_latest for these (besides cleanup.policy=compact topics)",
    )
    p.add_argument("--master", default=d.master, help=f"Spark master URL (default {d.master})")
    p.add_argument("--driver-memory", default=d.driver_memory, help=f"default {d.driver_memory}")
    p.add_argument(
        "--shuffle-partitions",
        type=int,
        default=d.shuffle_partitions,
        help=f"spark.sql.shuffle.partitions (default {d.shuffle_partitions})",
    )
    p.add_argument("--jvm-flags", default=d.jvm_flags, help=f"driver/executor JVM options (default {d.jvm_flags!r})")
    p.add_argument("--hive", action="store_true", help="use the Hive catalog (embedded Derby in the warehouse)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="any other Spark setting")
    p.add_argument(
        "--max-partition-bytes",
        type=int,
        default=128 << 20,
        help="read consecutive small segments in one Spark task up to this many bytes (default 128 MiB)",
    )
    p.add_argument(
        "--table-format",
        choices=("parquet", "delta", "iceberg"),
        help="parquet (the default for a new warehouse: needs no download), delta (Delta Lake: "
        "one commit per run, readers never see part of a run; its jars come from Maven "
        "Central) or iceberg (Apache Iceberg with pyiceberg: one snapshot per run and table, in "
        "a SQLite catalog inside the warehouse). A warehouse keeps the format of its first run",
    )
    p.add_argument(
        "--iceberg-catalog-uri",
        help="with --table-format iceberg: a REST catalog's URL instead of the embedded SQLite "
        "catalog (<warehouse>/_tidelog/iceberg.db); a warehouse keeps the catalog of its first run",
    )
    p.add_argument(
        "--rewrite-min-files",
        type=int,
        default=8,
        help="rewrite a table partition once it holds this many small files (default 8)",
    )
    _configure_follow(p)
    _configure_formats(p)


def _configure_formats(p: argparse.ArgumentParser) -> None:
    for column in ("value", "key"):
        p.add_argument(
            f"--{column}-format",
            choices=("raw", "registry", "json"),
            help=f"raw: the record's {column} as bytes (the default for a new table); registry: "
            f"decoded with the schema registry's Avro, JSON Schema or Protobuf schemas (Confluent's framing) "
            f"into a typed column, {column}_raw and _error keeping what does not decode; json: plain "
            f"JSON {column}s in a struct whose type is inferred from the data and only grows across "
            "runs (a field whose value conflicts with the recorded type is null and the row flagged "
            "in _error). A table keeps the format of its first run",
        )
    for column in ("value", "key"):
        p.add_argument(
            f"--{column}-subject-strategy",
            choices=("topic", "record", "topic-record"),
            help=f"with --{column}-format registry: the producers' subject.name.strategy: topic "
            f"(<topic>-{column}, the default), record (the record's full name: name the subjects with "
            f"--{column}-subject) or topic-record (<topic>-<record name>, found by prefix). The "
            f"{column} column is the union of every version of every subject: several record "
            "types give one struct with all their fields. A later run uses the table's",
        )
        p.add_argument(
            f"--{column}-subject",
            action="append",
            default=[],
            metavar="SUBJECT",
            help=f"with --{column}-format registry: a subject of the {column}s' schemas (repeatable; "
            "instead of those the strategy names)",
        )
    p.add_argument(
        "--schema-registry-url",
        help="with a registry format: the registry's REST URL (default: read the schemas from the "
        "_schemas topic in --log-dirs, no broker or registry needed)",
    )


def _configure_follow(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--follow",
        action="store_true",
        help="keep running: export each segment as it closes (one Spark session; SIGTERM stops after "
        "the run in progress); see the README's 'Continuous export'",
    )
    p.add_argument(
        "--poll-interval", type=float, default=1.0, help="--follow: seconds between looks for closed segments"
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        help="--follow: serve Prometheus metrics (lag in records and seconds per topic) on "
        "127.0.0.1:PORT/metrics (default 0: off)",
    )


def _follow(spark, options, args) -> None:
    import threading

    from .follow import Follower, FollowMetrics, stop_on_signals
    from .progress import Progress

    stop = threading.Event()
    stop_on_signals(stop)
    metrics = FollowMetrics()
    server = metrics.serve(args.metrics_port) if args.metrics_port else None
    try:
        Follower(spark, options, Progress(), metrics, stop, args.poll_interval).run()
    finally:
        if server is not None:
            server.shutdown()


def _table_format(args) -> str | None:
    """The run's table format, checked before a JVM starts: None (the error printed) when refused."""
    from .manifest import Manifest, TableFormatError

    try:
        table_format = Manifest.load(args.warehouse).resolve_format(args.table_format)
        if table_format == "iceberg":
            from .iceberg import catalog_config

            catalog_config(args.warehouse, args.iceberg_catalog_uri)
        elif args.iceberg_catalog_uri:
            raise TableFormatError(f"--iceberg-catalog-uri needs --table-format iceberg (the run's is {table_format})")
    except (TableFormatError, ValueError) as e:
        print(f"tidelog export: {e}", file=sys.stderr)
        return None
    if table_format == "iceberg":
        try:
            import pyiceberg  # noqa: F401
        except ImportError:
            print(
                "tidelog export: --table-format iceberg needs pyiceberg: pip install 'tidelog[spark]'", file=sys.stderr
            )
            return None
    return table_format


def cmd_export(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("tidelog export needs pyspark: pip install 'tidelog[spark]'", file=sys.stderr)
        return 2
    from pathlib import Path

    from .avro_arrow import SchemaConflict
    from .delta import DeltaUnavailable
    from .job import ExportJob, ExportOptions
    from .manifest import TableFormatError
    from .progress import Progress
    from .registry_schemas import NoSchema
    from .session import SparkSettings, build_session
    from .subjects import NoSubjects

    table_format = _table_format(args)
    if table_format is None:
        return 2
    extra = dict(kv.split("=", 1) for kv in args.conf)
    settings = SparkSettings(
        master=args.master,
        driver_memory=args.driver_memory,
        shuffle_partitions=args.shuffle_partitions,
        jvm_flags=args.jvm_flags,
        hive=args.hive,
        table_format=table_format,
        extra=extra,
    )
    try:
        spark = build_session(args.warehouse, settings)
    except DeltaUnavailable as e:
        print(f"tidelog export: {e}", file=sys.stderr)
        return 2
    try:
        options = ExportOptions(
            log_dirs=[Path(d) for d in args.log_dirs.split(",") if d],
            warehouse=Path(args.warehouse),
            topics=args.topics,
            compact_topics=args.compact_topics,
            rewrite_min_files=args.rewrite_min_files,
            max_partition_bytes=args.max_partition_bytes,
            table_format=args.table_format,
            iceberg_catalog_uri=args.iceberg_catalog_uri,
            value_format=args.value_format,
            key_format=args.key_format,
            schema_registry_url=args.schema_registry_url,
            value_subject_strategy=args.value_subject_strategy,
            value_subjects=args.value_subject,
            key_subject_strategy=args.key_subject_strategy,
            key_subjects=args.key_subject,
        )
        try:
            if args.follow:
                _follow(spark, options, args)
            else:
                ExportJob(spark, options, Progress()).run()
        except (TableFormatError, SchemaConflict, NoSchema, NoSubjects) as e:
            print(f"tidelog export: {e}", file=sys.stderr)
            return 2
    finally:
        spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tidelog.spark_export", description=__doc__.splitlines()[0])
    configure(parser)
    return cmd_export(parser.parse_args(argv))
