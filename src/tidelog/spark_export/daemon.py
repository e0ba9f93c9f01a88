"""Spark's Python worker daemon (`pyspark.daemon`) with the export's decoder loaded before it forks.

Spark starts one daemon per executor and forks a worker from it for each Python task slot. A
worker that imports pyarrow, numba and tidelog and loads the decoder's machine code itself spends
about 0.6 s on it, once per worker; loaded in the daemon, the forked workers inherit it. The
session uses it through `spark.python.daemon.module` (see `session.build_session`); a failure to
preload only costs that time back, never the workers.
"""

from __future__ import annotations

import logging


def preload() -> None:
    try:
        import pyarrow.compute
        import pyarrow.parquet  # noqa: F401

        from . import direct, fastdecode  # noqa: F401

        fastdecode.warm()
    except Exception:  # pragma: no cover - the workers then load what they need themselves
        logging.getLogger("tidelog.spark_export").warning("preloading the export decoder failed", exc_info=True)


if __name__ == "__main__":
    preload()
    from pyspark import daemon

    daemon.manager()
