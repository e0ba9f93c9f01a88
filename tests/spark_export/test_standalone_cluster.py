"""The export on a Spark standalone cluster (issue 17 §3's scale-out claim): a master and two
workers started from the installed pyspark on loopback, `tidelog export --master spark://...`
decodes the segments in the workers' executors (the `tidelog` data source's partitions), and the
table equals the one a local run writes and the model of the log."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_logdata import LogWriter

pytestmark = pytest.mark.timeout(600)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_NO_DAEMONIZE": "1",
    }


def wait_for_line(path: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not in {path} after {timeout}s:\n{path.read_text(errors='replace')[-3000:]}")


def rows(warehouse: Path, topic: str) -> list[tuple]:
    import pyarrow.dataset as ds

    table = ds.dataset(str(warehouse / "tidelog.db" / topic), format="parquet", partitioning="hive").to_table()
    d = table.to_pydict()
    return sorted(zip(d["partition"], d["offset"], d["key"], d["value"]))


def export(data: Path, warehouse: Path, master: str, log: Path) -> None:
    with open(log, "w") as out:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "tidelog.spark_export",
                "--log-dirs",
                str(data),
                "--warehouse",
                str(warehouse),
                "--master",
                master,
                "--shuffle-partitions",
                "2",
                "--max-partition-bytes",
                "16384",
                "--conf",
                "spark.executor.memory=512m",
                "--conf",
                "spark.cores.max=2",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env(),
            timeout=420,
        )
    assert r.returncode == 0, log.read_text()[-4000:]


def test_export_on_a_standalone_cluster_equals_the_local_run(tmp_path):
    data = tmp_path / "data"
    w = LogWriter(data, "orders", partitions=4, segment_bytes=8192, seed=5)
    w.fill(80)
    closed = w.roll()
    expected = sorted((r.partition, r.offset, r.key, r.value) for r in w.model.committed(closed))
    for lg in w.logs:
        lg.close()

    spark_class = str(spark_home() / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    procs: list[subprocess.Popen] = []
    logs = []
    try:
        mlog = tmp_path / "master.log"
        logs.append(mlog)
        procs.append(
            subprocess.Popen(
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui),
                ],
                stdout=open(mlog, "w"),
                stderr=subprocess.STDOUT,
                env=env(),
            )
        )
        wait_for_line(mlog, "I have been elected leader", 90)
        master = f"spark://127.0.0.1:{port}"
        work_dirs = []
        for i in range(2):
            wd = tmp_path / f"worker-{i}"
            wd.mkdir()
            work_dirs.append(wd)
            wlog = tmp_path / f"worker-{i}.log"
            logs.append(wlog)
            procs.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        master,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "1",
                        "--memory",
                        "768m",
                        "--webui-port",
                        str(free_port()),
                        "--work-dir",
                        str(wd),
                    ],
                    stdout=open(wlog, "w"),
                    stderr=subprocess.STDOUT,
                    env=env(),
                )
            )
        for wlog in logs[1:]:
            wait_for_line(wlog, "Successfully registered with master", 90)

        export(data, tmp_path / "wh-cluster", master, tmp_path / "export-cluster.log")
        export(data, tmp_path / "wh-local", "local[2]", tmp_path / "export-local.log")
        on_cluster, local = rows(tmp_path / "wh-cluster", "orders"), rows(tmp_path / "wh-local", "orders")
        assert on_cluster == local == expected
        # both workers ran executors that decoded segments (tasks of the tidelog source)
        for wd in work_dirs:
            stderr = "".join(p.read_text(errors="replace") for p in wd.rglob("stderr"))
            assert "Finished task" in stderr, f"{wd}: no task ran there"
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
