"""Apache Kafka itself, as a KRaft single node on loopback: the reference tidelog is compared with.

The broker and its tools come from Maven Central through `java/kafka/pom.xml` (Kafka 4.3.1, pinned
there); `classpath()` resolves them once into ~/.m2 and caches the classpath in
`java/kafka/target/classpath.txt` (seconds on the second run). `KafkaProcess(data_dir).start()`
formats a fresh KRaft log directory (combined broker + controller, node 1, a random cluster id)
and starts `kafka.Kafka` on free loopback ports with a small heap; `stop()` sends SIGTERM and
waits for the controlled shutdown. Durability is Kafka's default, as tidelog's in the benchmark:
no fsync per batch (`log.flush.interval.messages` unset), the page cache holds acknowledged data.

    python tests/kafka_process.py [--port 9092] [--data-dir DIR]   # `make kafka`: runs until Ctrl-C
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POM_DIR = ROOT / "java" / "kafka"
CLASSPATH_FILE = POM_DIR / "target" / "classpath.txt"
LOG4J2 = """status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = WARN
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def classpath() -> str:
    """Kafka's runtime classpath, resolved with Maven on first use (needs `mvn` and Java 17)."""
    pom = POM_DIR / "pom.xml"
    if not CLASSPATH_FILE.exists() or CLASSPATH_FILE.stat().st_mtime < pom.stat().st_mtime:
        subprocess.run(
            ["mvn", "-B", "-q", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={CLASSPATH_FILE}"],
            check=True,
        )
    return CLASSPATH_FILE.read_text().strip()


class KafkaProcess:
    """One Apache Kafka broker (KRaft, combined roles) on free loopback ports."""

    def __init__(
        self,
        data_dir: Path | None = None,
        port: int | None = None,
        overrides: dict[str, str] | None = None,
        heap: str = "512m",
        controller_port: int | None = None,
        cluster_id: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="kafka-ref-"))
        self.port = port or free_port()
        self.controller_port = controller_port or free_port()
        self.cluster_id = cluster_id  # the nodes of one cluster are formatted with the same id
        self.overrides = dict(overrides or {})
        self.heap = heap
        self.client_config: dict[str, str] = {}  # what a client needs to talk to it (SASL settings)
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir / "kafka.out"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir / "logs"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
        }
        props.update(self.overrides)
        return props

    def _java(self, main: str, *args: str) -> list[str]:
        return [
            "java",
            f"-Xmx{self.heap}",
            f"-Xms{self.heap}",
            "-XX:+UseG1GC",
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            "-cp",
            classpath(),
            main,
            *args,
        ]

    def start(self, timeout: float = 90.0, wait: bool = True) -> KafkaProcess:
        """Format (once) and start; with `wait`, until it listens and lists itself in Metadata (a
        node of a cluster becomes ready only with a quorum of its voters: start them all first)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "log4j2.properties").write_text(LOG4J2)
        config = self.data_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        if not (self.data_dir / "logs" / "meta.properties").exists():
            cluster_id = self.cluster_id or _kafka_uuid()
            fmt = subprocess.run(
                self._java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config)),
                capture_output=True,
                text=True,
                timeout=120,
            )
            if fmt.returncode != 0:
                raise RuntimeError(
                    f"kafka-storage format failed ({fmt.returncode}): {fmt.stdout[-2000:]}{fmt.stderr[-2000:]}"
                )
        out = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self._java("kafka.Kafka", str(config)), stdout=out, stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 90.0) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kafka exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError(f"kafka did not listen within {timeout}s:\n{self.log()}")
        self._wait_metadata(deadline)

    def _wait_metadata(self, deadline: float) -> None:
        """The port opens before the broker has registered with its controller: wait for a
        Metadata answer that lists this broker."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, **self.client_config})
        while time.monotonic() < deadline:
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except Exception:  # noqa: BLE001 - not ready yet: ask again
                time.sleep(0.3)
        raise RuntimeError(f"kafka never answered Metadata:\n{self.log()}")

    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def cleanup(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""


def kraft_cluster_overrides(node_id: int, controller_ports: list[int]) -> dict[str, str]:
    """What node `node_id` (1..n) of an n-node KRaft cluster on loopback sets over `properties()`:
    every node is broker and controller (combined mode), the quorum is static
    (`controller.quorum.voters`, `id@127.0.0.1:port` of all n), so `kafka-storage format` needs
    only the cluster id the nodes share (a dynamic quorum, `controller.quorum.bootstrap.servers`,
    would need `--initial-controllers` at format time too). Topics default to replication factor
    min(3, n) with `min.insync.replicas` one fewer (at least 1), the internal topics too."""
    n = len(controller_ports)
    rf = min(3, n)
    isr = str(max(1, rf - 1))
    return {
        "node.id": str(node_id),
        "controller.quorum.voters": ",".join(f"{i}@127.0.0.1:{p}" for i, p in enumerate(controller_ports, 1)),
        "default.replication.factor": str(rf),
        "min.insync.replicas": isr,
        "offsets.topic.replication.factor": str(rf),
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": isr,
        "share.coordinator.state.topic.replication.factor": str(rf),
        "share.coordinator.state.topic.min.isr": isr,
    }


class KafkaCluster:
    """n Apache Kafka nodes (KRaft, combined roles, one static quorum of all n) on loopback, each
    with its own ports and data directory under `base`, formatted with one cluster id."""

    def __init__(self, base: Path, n: int = 3, heap: str = "512m", overrides: dict[str, str] | None = None) -> None:
        self.base = Path(base)
        controller_ports = [free_port() for _ in range(n)]
        cluster_id = _kafka_uuid()
        self.nodes = [
            KafkaProcess(
                self.base / f"kafka-{i}",
                overrides={**kraft_cluster_overrides(i, controller_ports), **(overrides or {})},
                heap=heap,
                controller_port=controller_ports[i - 1],
                cluster_id=cluster_id,
            )
            for i in range(1, n + 1)
        ]

    @property
    def bootstrap(self) -> str:
        return ",".join(k.bootstrap for k in self.nodes)

    def pids(self) -> list[int]:
        return [k.proc.pid for k in self.nodes if k.proc is not None]

    def start(self, timeout: float = 120.0) -> KafkaCluster:
        """Starts every node, then waits until each listens and Metadata lists all of them."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        for k in self.nodes:
            k.start(wait=False)
        for k in self.nodes:
            k.wait_ready(max(1.0, deadline - time.monotonic()))
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        while time.monotonic() < deadline:
            try:
                if len(admin.list_topics(timeout=2).brokers) == len(self.nodes):
                    return self
            except Exception:  # noqa: BLE001 - not every node registered yet: ask again
                pass
            time.sleep(0.2)
        raise RuntimeError("kafka cluster: not every node in Metadata:\n" + "\n".join(k.log() for k in self.nodes))

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to every node at once (one by one, the last ones would wait for a quorum that is
        gone), then SIGKILL to any still running after `timeout`."""
        running = [k.proc for k in self.nodes if k.proc is not None and k.proc.poll() is None]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in running:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def _kafka_uuid() -> str:
    """A random cluster id in Kafka's form (URL-safe base64 of 16 bytes, no padding)."""
    import base64

    while True:  # as Kafka's Uuid.randomUuid: never one that starts with '-' (read as an option)
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def main() -> int:
    p = argparse.ArgumentParser(description="Run Apache Kafka (KRaft single node) on loopback until Ctrl-C")
    p.add_argument("--port", type=int, default=9092)
    p.add_argument("--data-dir", type=Path, default=None)
    args = p.parse_args()
    k = KafkaProcess(args.data_dir, args.port)
    k.start()
    print(f"Apache Kafka listening on {k.bootstrap} (data in {k.data_dir}); Ctrl-C stops it", flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        k.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
