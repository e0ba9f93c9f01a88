"""`tidelog` command line: `serve`, and client tools that talk to a running broker.

tidelog serve [--config server.properties] [--override key=value ...] [--processes N|auto]
tidelog topics create|list|describe|delete|alter-config [--bootstrap-server HOST:PORT] ...
tidelog produce|consume --topic T ...; tidelog dump-log FILE ...
tidelog schemas list|get|register|check|delete [--url http://HOST:PORT] ...
tidelog schemas acl add|list|remove [--url http://HOST:PORT] --user USER:PASSWORD ...
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _setup_logging(level: str = "INFO", fmt: str = "text") -> None:
    from ..server.logformat import formatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(fmt))
    logging.basicConfig(level=getattr(logging, level, logging.INFO), handlers=[handler])


def cmd_serve(args) -> int:
    from ..core.config import ConfigError, load_config

    if getattr(args, "processes", None):  # --processes N is process.count=N (a later --override wins)
        args.override = [f"process.count={args.processes}", *args.override]
    try:
        env = []
        if args.env_prefix:
            import os

            from ..core.envconfig import env_overrides

            env = env_overrides(os.environ, args.env_prefix)
        config = load_config(args.config, env + args.override)
    except (ConfigError, OSError) as e:
        _setup_logging()
        logging.getLogger("tidelog").error("invalid configuration: %s", e)
        print(f"tidelog: invalid configuration: {e}", file=sys.stderr)
        return 2
    _setup_logging(config["log.level"], config["log.format"])
    if config["process.count"] > 1:  # N broker processes and their etcd, supervised from here
        from .processes import run_processes

        return run_processes(config, args, config["process.count"])
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a dependency; the fallback keeps asyncio
        pass
    from ..core.admin import raise_open_file_limit
    from ..server.broker import Broker

    before, after = raise_open_file_limit()
    if after != before:
        logging.getLogger("tidelog").info("open-file limit raised from %d to %d", before, after)

    async def run() -> None:
        broker = Broker(config)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await broker.start()
        # Start-up leaves ~50k long-lived objects (schemas, handlers, logs); a full collection
        # walked them all (~50 ms pauses on the hot path). Frozen, collections skip them.
        gc.freeze()
        await stop.wait()
        logging.getLogger("tidelog").info("shutting down")
        await broker.stop()
        _exit_watchdog(5.0)

    asyncio.run(run())
    return 0


def _exit_watchdog(grace_s: float) -> None:
    """The broker stopped cleanly (logs flushed and closed): the process must now end. Should a
    leftover task or thread keep it alive, the stacks go to the log and the process exits anyway
    after `grace_s` (a supervisor's SIGTERM must never turn into its SIGKILL)."""
    import faulthandler
    import os
    import threading

    def expire() -> None:
        logging.getLogger("tidelog").error("still running %.0f s after a clean stop; stacks follow", grace_s)
        for h in logging.getLogger().handlers:
            h.flush()
        faulthandler.dump_traceback(all_threads=True)
        for task in asyncio.all_tasks(loop) if loop is not None and not loop.is_closed() else ():
            print(f"pending task: {task!r}", file=sys.stderr, flush=True)
        os._exit(0)

    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    timer = threading.Timer(grace_s, expire)
    timer.daemon = True
    timer.start()


def main(argv: list[str] | None = None) -> int:
    if argv is None and "hypothesis" not in sys.modules:
        # kio registers hypothesis strategies for its types whenever hypothesis is importable (a
        # test dependency); no command uses them, and that import was a quarter of start-up.
        sys.modules["hypothesis"] = None  # type: ignore[assignment]  # None in sys.modules blocks an import
    parser = argparse.ArgumentParser(prog="tidelog", description="A Kafka-compatible broker in Python.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="run the broker")
    p.add_argument("--config", help="server.properties file")
    p.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="override a property (repeatable)"
    )
    p.add_argument(
        "--env-prefix", metavar="PREFIX", help="read properties from PREFIX* variables (KAFKA_LOG_DIRS -> log.dirs)"
    )
    p.add_argument(
        "--processes",
        metavar="N",
        help="run N broker processes on this host, cluster nodes 1..N on a supervised etcd "
        "(auto: one per core; the process.count key); 1 (the default): one broker in this process",
    )
    p.set_defaults(func=cmd_serve)

    from . import topics as cli_topics

    cli_topics.add_parser(sub, DEFAULT_BOOTSTRAP)
    from . import groups as cli_groups

    cli_groups.add_parser(sub, DEFAULT_BOOTSTRAP)
    from . import consume as cli_consume
    from . import dump_log as cli_dump
    from . import produce as cli_produce

    cli_dump.add_parser(sub)
    cli_produce.add_parser(sub, DEFAULT_BOOTSTRAP)
    cli_consume.add_parser(sub, DEFAULT_BOOTSTRAP)
    from . import security as cli_security

    cli_security.add_parser(sub, DEFAULT_BOOTSTRAP)
    from . import cluster as cli_cluster

    cli_cluster.add_parser(sub, DEFAULT_BOOTSTRAP)
    from . import schema_acls as cli_schema_acls
    from . import schemas as cli_schemas

    cli_schema_acls.add_parser(cli_schemas.add_parser(sub))
    from ..spark_export import cli as cli_export  # pyspark is imported only when `export` runs

    cli_export.add_parser(sub)

    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
