"""`tidelog serve --processes N` (or `process.count=N`; `auto` = one per core): shard-per-core as
N broker processes on one host, coordinated by tidelog's cluster mode on etcd.

Contract. The command is a supervisor, not a broker: it starts etcd (unless `etcd.connect` names
one), waits until etcd answers, then starts N children, each a plain `tidelog serve` that is
cluster node i (1..N) of that etcd. Every child is a full broker advertising its own listeners, so
a client bootstrapped from any of them learns all N from Metadata and talks to the process that
leads a partition or coordinates a group directly: nothing is forwarded between processes. The
cluster's own partition assignment and coordinator placement spread the partitions and the group,
transaction and share coordinators over the N processes. The children read the same
configuration as the command (`--config`, `--env-prefix`, `--override`), then these per-node
overrides (the later wins):

- `node.id=i`; `log.dirs`: each configured directory's `node-i` subdirectory;
- every listener (and advertised listener, `metrics.listener`, `schema.registry.listeners`) port
  shifted by (i-1) x stride, stride = the span of the configured listener ports (1 for one
  listener): node 1 keeps the configured ports, node 2 the next ones; a port 0 stays 0 (an
  ephemeral port, advertised bound);
- `etcd.connect` of the supervisor's etcd (`127.0.0.1:<client port>/tidelog`);
- unless configured: replication factor 1 and min ISR 1 for the internal topics and the schema
  registry's (new topics already default to `default.replication.factor=1`,
  `min.insync.replicas=1`): processes on one disk are shards, not replicas; a copy on another
  process would double the writes to the same disk and protect against nothing but a process
  crash, which a restart repairs.

Directory layout (the first of `log.dirs`, D):

    D/node-<i>/        broker i's data (every other directory of log.dirs gets its node-<i> too)
    D/etcd/data/       etcd's data directory; D/etcd/etcd.log its output
    D/etcd/ports       the etcd client and peer ports, chosen free at the first start, kept after
    D/run/supervisor.lock, D/run/supervisor.pid, D/run/node-<i>.pid, D/run/etcd.pid

A second start over the same directory reuses it all: node ids, data, etcd's keys and ports; the
lock refuses a second supervisor over a directory in use.

Crash behaviour. A child that exits while the supervisor is not stopping is restarted, etcd
included, after a backoff (0.5 s, doubling to 30 s; reset once a child has run a minute), each
restart logged at WARNING. A broker that exits with status 2 (invalid configuration) stops the
whole command with status 2, since a restart would fail the same way. SIGTERM or SIGINT: every
broker is sent SIGTERM (its controlled shutdown; SIGKILL after 30 s), then etcd; the command
exits 0. If etcd cannot start, the command exits 1. Children run in their own sessions (a
terminal's Ctrl-C reaches the supervisor only, which stops them in order) and, on Linux, are sent
SIGTERM should the supervisor itself die. A broker's log lines are copied to the supervisor's
stderr prefixed `[node i]` (as they are with log.format=json: one JSON object a line, no prefix).
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..core.config import BrokerConfig, Listener, parse_listeners

log = logging.getLogger("tidelog.processes")

ETCD_CLUSTER = "tidelog"  # the cluster name in etcd.connect (the root of the keys)
BACKOFF_FIRST_S, BACKOFF_MAX_S, BACKOFF_RESET_S = 0.5, 30.0, 60.0
BROKER_STOP_S, ETCD_STOP_S, ETCD_START_S = 30.0, 10.0, 30.0
# the internal topics' replication, 1 on one host unless configured (see the module docstring)
SHARD_DEFAULTS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "schema.registry.topic.replication.factor": "1",
}
_stderr_lock = threading.Lock()


# ---- each node's configuration ------------------------------------------------------------
def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def port_stride(config: BrokerConfig) -> int:
    """How far apart two nodes' ports are: the span of the configured listener ports."""
    ports = [lst.port for lst in config.listeners if lst.port]
    return max(ports) - min(ports) + 1 if ports else 1


def shift_listeners(listeners: list[Listener], offset: int) -> str:
    return ",".join(f"{lst.name}://{_host(lst.host)}:{lst.port + offset if lst.port else 0}" for lst in listeners)


def node_overrides(config: BrokerConfig, node_id: int, etcd_connect: str) -> list[str]:
    """The `key=value` overrides that make the command's configuration node `node_id`'s."""
    offset = (node_id - 1) * port_stride(config)
    out = [
        f"node.id={node_id}",
        "process.count=1",
        f"log.dirs={','.join(str(d / f'node-{node_id}') for d in config.log_dirs)}",
        f"listeners={shift_listeners(config.listeners, offset)}",
        f"etcd.connect={etcd_connect}",
    ]
    if config.raw.get("broker.id") is not None:
        out.append("broker.id=-1")  # node.id names the node
    if config["advertised.listeners"]:
        out.append(f"advertised.listeners={shift_listeners(parse_listeners(config['advertised.listeners']), offset)}")
    metrics = config["metrics.listener"]
    if metrics:
        host, _, port = metrics.rpartition(":")
        out.append(f"metrics.listener={host}:{int(port) + offset if int(port) else 0}")
    registry = config["schema.registry.listeners"]
    if registry:  # each node's registry listens on its own port; any of them serves the registry
        url, _, port = registry.rstrip("/").rpartition(":")
        out.append(f"schema.registry.listeners={url}:{int(port) + offset if int(port) else 0}")
    out += [f"{k}={v}" for k, v in SHARD_DEFAULTS.items() if k not in config.raw]
    return out


def serve_argv(args: argparse.Namespace) -> list[str]:
    """The child's command line up to its node overrides: the command's own configuration."""
    argv = [sys.executable, "-m", "tidelog", "serve"]
    if args.config:
        argv += ["--config", args.config]
    if args.env_prefix:
        argv += ["--env-prefix", args.env_prefix]
    for item in args.override:
        argv += ["--override", item]
    return argv


# ---- children -----------------------------------------------------------------------------
def _parent_death_signal() -> Callable[[], None] | None:
    """A preexec function that has the child sent SIGTERM when the supervisor dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the supervisor died before the prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _pump(stream: IO[bytes], prefix: bytes) -> None:
    """Copies a child's output to our stderr, a line at a time, each line `prefix`ed."""
    out = sys.stderr.buffer
    for line in iter(stream.readline, b""):
        with _stderr_lock:
            try:
                out.write(prefix + line)
                out.flush()
            except (OSError, ValueError):
                pass
    stream.close()


class Child:
    """One supervised process: how to start it, its pid file, its restarts."""

    def __init__(self, name: str, argv: list[str], pid_file: Path, prefix: bytes | None, out: Path | None) -> None:
        self.name, self.argv, self.pid_file, self.prefix, self.out = name, argv, pid_file, prefix, out
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.failures = 0  # exits since it last ran a minute
        self.due: float | None = None  # when a restart is due

    def start(self, preexec: Callable[[], None] | None) -> None:
        """Starts it: its output piped through `prefix`, or to the file `out`, or to our stderr."""
        out = open(self.out, "ab") if self.out is not None else None
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if self.prefix is not None else out,
            stderr=subprocess.STDOUT if self.prefix is not None or out is not None else None,
            start_new_session=True,  # a terminal's Ctrl-C reaches the supervisor only
            preexec_fn=preexec,  # a prctl only (PR_SET_PDEATHSIG)
        )
        if out is not None:
            out.close()
        if self.prefix is not None:
            assert self.proc.stdout is not None
            threading.Thread(target=_pump, args=(self.proc.stdout, self.prefix), daemon=True).start()
        self.started, self.due = time.monotonic(), None
        self.pid_file.write_text(f"{self.proc.pid}\n")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exited(self) -> int | None:
        """The exit status of a child that exited and is not yet due to restart, else None."""
        if self.proc is None or self.due is not None:
            return None
        return self.proc.poll()

    def schedule_restart(self, now: float) -> float:
        if now - self.started >= BACKOFF_RESET_S:
            self.failures = 0
        self.failures += 1
        delay = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self.failures - 1))
        self.due = now + delay
        return delay

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.proc is not None
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def wait(self, deadline: float) -> None:
        """Until it exits or `deadline`; SIGKILL after that."""
        if self.proc is None:
            return
        try:
            self.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.error("%s (pid %d) still running after SIGTERM: SIGKILL", self.name, self.proc.pid)
            self.proc.kill()
            self.proc.wait()
        self.pid_file.unlink(missing_ok=True)


# ---- etcd ---------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def etcd_binary(config: BrokerConfig) -> str | None:
    path = config["process.etcd.path"] or shutil.which("etcd") or "/usr/bin/etcd"
    return path if os.access(path, os.X_OK) else None


def etcd_ports(config: BrokerConfig, directory: Path) -> tuple[int, int]:
    """The client and peer ports: configured, else those of the last start, else free ones."""
    remembered = directory / "ports"
    client, peer = config["process.etcd.client.port"], config["process.etcd.peer.port"]
    if remembered.exists():
        old = [int(p) for p in remembered.read_text().split()]
        client, peer = client or old[0], peer or old[1]
    client, peer = client or free_port(), peer or free_port()
    remembered.write_text(f"{client} {peer}\n")
    return client, peer


def etcd_argv(binary: str, directory: Path, client: int, peer: int) -> list[str]:
    client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    return [
        binary,
        *("--name", "tidelog", "--data-dir", str(directory / "data")),
        *("--listen-client-urls", client_url, "--advertise-client-urls", client_url),
        *("--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url),
        *("--initial-cluster", f"tidelog={peer_url}", "--log-level", "warn"),
    ]


def etcd_healthy(client: int) -> bool:
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{client}/v3/kv/range", data=b'{"key": "AA=="}', method="POST")
    try:
        with urllib.request.urlopen(req, timeout=1.0) as r:
            return bool(r.status == 200)
    except OSError:
        return False


# ---- the supervisor -----------------------------------------------------------------------
class Supervisor:
    def __init__(self, config: BrokerConfig, args: argparse.Namespace, count: int) -> None:
        self.config, self.count = config, count
        self.base = config.log_dirs[0]
        self.run_dir = self.base / "run"
        self.etcd_dir = self.base / "etcd"
        self.own_etcd = not config["etcd.connect"]
        self.etcd: Child | None = None
        self.etcd_client = 0
        self.brokers: list[Child] = []
        self.argv = serve_argv(args)
        self.stop_signal: int | None = None
        self.wake = threading.Event()
        self.preexec = _parent_death_signal()
        self.json_logs = config["log.format"] == "json"

    def run(self) -> int:
        for d in [self.run_dir, *(d / f"node-{i}" for d in self.config.log_dirs for i in range(1, self.count + 1))]:
            d.mkdir(parents=True, exist_ok=True)
        lock = open(self.run_dir / "supervisor.lock", "a")  # held for the whole run
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            log.error("another tidelog serve --processes runs over %s", self.base)
            return 1
        (self.run_dir / "supervisor.pid").write_text(f"{os.getpid()}\n")
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        try:
            if self.own_etcd and not self._start_etcd():
                self._stop_all()
                return 0 if self.stop_signal is not None else 1  # a signal while etcd started
            self._start_brokers()
            return self._loop()
        finally:
            (self.run_dir / "supervisor.pid").unlink(missing_ok=True)
            lock.close()

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_signal = signum
        self.wake.set()

    def _start_etcd(self) -> bool:
        binary = etcd_binary(self.config)
        if binary is None:
            log.error("no etcd binary: set process.etcd.path, or install etcd (Debian: etcd-server)")
            return False
        self.etcd_dir.mkdir(parents=True, exist_ok=True)
        self.etcd_client, peer = etcd_ports(self.config, self.etcd_dir)
        argv = etcd_argv(binary, self.etcd_dir, self.etcd_client, peer)
        self.etcd = Child("etcd", argv, self.run_dir / "etcd.pid", None, self.etcd_dir / "etcd.log")
        return self._launch_etcd()

    def _launch_etcd(self) -> bool:
        """Starts etcd and waits until it answers; False (logged) if it exits or stays silent."""
        assert self.etcd is not None
        self.etcd.start(self.preexec)
        assert self.etcd.proc is not None
        deadline = time.monotonic() + ETCD_START_S
        while time.monotonic() < deadline and self.stop_signal is None:
            if self.etcd.proc.poll() is not None:
                tail = (self.etcd_dir / "etcd.log").read_text(errors="replace")[-2000:]
                log.error("etcd exited with %d at start:\n%s", self.etcd.proc.returncode, tail)
                return False
            if etcd_healthy(self.etcd_client):
                log.info("etcd (pid %d) serving on 127.0.0.1:%d", self.etcd.proc.pid, self.etcd_client)
                return True
            self.wake.wait(0.1)
        if self.stop_signal is not None:
            return False
        log.error("etcd did not answer on 127.0.0.1:%d within %.0f s", self.etcd_client, ETCD_START_S)
        return False

    def _start_brokers(self) -> None:
        connect = self.config["etcd.connect"] or f"127.0.0.1:{self.etcd_client}/{ETCD_CLUSTER}"
        for i in range(1, self.count + 1):
            argv = self.argv + [a for o in node_overrides(self.config, i, connect) for a in ("--override", o)]
            prefix = None if self.json_logs else f"[node {i}] ".encode()
            child = Child(f"node {i}", argv, self.run_dir / f"node-{i}.pid", prefix, None)
            self.brokers.append(child)
            self._start_broker(child)

    def _start_broker(self, child: Child) -> None:
        child.start(self.preexec)
        assert child.proc is not None
        listeners = [a for a in child.argv if a.startswith("listeners=")][-1].removeprefix("listeners=")
        log.info("%s started (pid %d, %s)", child.name, child.proc.pid, listeners)

    def _loop(self) -> int:
        """Watches the children until a signal; restarts those that exit. The exit status."""
        while self.stop_signal is None:
            now = time.monotonic()
            for child in [c for c in [self.etcd, *self.brokers] if c is not None]:
                code = child.exited()
                if code is not None:
                    if code == 2 and child is not self.etcd:
                        log.error("%s exited with status 2 (invalid configuration): stopping", child.name)
                        self._stop_all()
                        return 2
                    delay = child.schedule_restart(now)
                    log.warning(
                        "%s (pid %d) exited with status %d after %.1f s; restart %d in %.1f s",
                        *(child.name, child.proc.pid if child.proc else -1, code, now - child.started),
                        *(child.failures, delay),
                    )
                elif child.due is not None and now >= child.due:
                    log.warning("restarting %s (restart %d)", child.name, child.failures)
                    if child is self.etcd:
                        self._launch_etcd()
                    else:
                        self._start_broker(child)
            self.wake.wait(0.2)
        log.info("signal %d: stopping %d brokers, then etcd", self.stop_signal, len(self.brokers))
        self._stop_all()
        return 0

    def _stop_all(self) -> None:
        """SIGTERM to every broker (their controlled shutdowns run side by side), then etcd."""
        for child in self.brokers:
            child.signal(signal.SIGTERM)
        deadline = time.monotonic() + BROKER_STOP_S
        for child in self.brokers:
            child.wait(deadline)
        if self.etcd is not None:
            self.etcd.signal(signal.SIGTERM)
            self.etcd.wait(time.monotonic() + ETCD_STOP_S)
        log.info("stopped: %d brokers%s", len(self.brokers), " and etcd" if self.etcd is not None else "")


def run_processes(config: BrokerConfig, args: argparse.Namespace, count: int) -> int:
    """`tidelog serve` with process.count > 1: supervise `count` broker processes (and etcd)."""
    return Supervisor(config, args, count).run()
