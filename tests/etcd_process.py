"""A real etcd process on free loopback ports for the cluster tests (Debian `etcd-server`;
`make test` installs it when missing)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from broker_process import free_port


class EtcdProcess:
    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.peer_port = free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.log"

    @property
    def endpoint_hostport(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        exe = shutil.which("etcd") or "/usr/bin/etcd"
        peer = f"http://127.0.0.1:{self.peer_port}"
        return [
            exe,
            "--name",
            "t",
            "--data-dir",
            str(self.data_dir),
            "--listen-client-urls",
            self.endpoint,
            "--advertise-client-urls",
            self.endpoint,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            f"t={peer}",
            "--log-level",
            "warn",
        ]

    def healthy(self) -> bool:
        try:
            req = urllib.request.Request(
                self.endpoint + "/v3/kv/range", data=json.dumps({"key": "AA=="}).encode(), method="POST"
            )
            with urllib.request.urlopen(req, timeout=0.5) as r:
                return r.status == 200
        except OSError:
            return False

    def start(self, timeout: float = 15.0) -> EtcdProcess:
        if self.proc is not None and self.proc.poll() is None:
            return self
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            self.command(),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ETCD_UNSUPPORTED_ARCH": os.environ.get("ETCD_UNSUPPORTED_ARCH", "")},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            if self.healthy():
                return self
            time.sleep(0.05)
        raise RuntimeError("etcd did not become healthy")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if sig == signal.SIGTERM:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.proc.send_signal(sig)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self, timeout: float = 30.0) -> EtcdProcess:
        """Stops etcd if it runs (SIGTERM) and starts it again on the same data directory and the
        same client and peer ports: brokers keep their endpoint, etcd its keys and leases."""
        self.stop()
        return self.start(timeout)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pause(self) -> None:
        """SIGSTOP etcd, returning once every one of its threads is stopped: the signal is
        delivered asynchronously, and a request sent at once could otherwise still be answered."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while not self._stopped():
            if time.monotonic() > deadline:
                raise AssertionError(f"etcd (pid {self.proc.pid}) not stopped 10 s after SIGSTOP")
            time.sleep(0.005)  # the poll interval of this wait

    def _stopped(self) -> bool:
        """Every thread of etcd in the stopped state (T) according to /proc."""
        assert self.proc is not None
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (FileNotFoundError, ProcessLookupError):
                continue  # a thread that just exited
            if state not in ("T", "t"):
                return False
        return True

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)
