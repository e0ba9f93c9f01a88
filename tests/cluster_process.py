"""One etcd and N tidelog brokers on loopback, as real processes: the cluster tests' fixture and
`make cluster` (python tests/cluster_process.py --brokers 3, until Ctrl-C)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_process import BrokerProcess, free_port
from etcd_process import EtcdProcess


class Cluster:
    def __init__(
        self, base: Path, brokers: int = 3, overrides: dict[str, str] | None = None, name: str = "test", extra=None
    ) -> None:
        self.base = Path(base)
        self.etcd = EtcdProcess(self.base / "etcd")
        self.name = name
        self.overrides = dict(overrides or {})
        self.brokers: dict[int, BrokerProcess] = {}
        self.metrics_ports: dict[int, int] = {}
        self.paused: set[int] = set()
        self.n = brokers
        self.extra = extra  # (node id, PLAINTEXT port) -> more overrides (own listeners, security)

    def broker_overrides(self, node_id: int) -> dict[str, str]:
        mport = self.metrics_ports.setdefault(node_id, free_port())
        return {
            "node.id": str(node_id),
            "metrics.listener": f"127.0.0.1:{mport}",
            "etcd.connect": f"{self.etcd.endpoint_hostport}/{self.name}",
            "broker.session.timeout.ms": "3000",
            "replica.lag.time.max.ms": "5000",
            "group.initial.rebalance.delay.ms": "0",
            # leaders stay where failovers put them unless a test asks for the rebalance
            "auto.leader.rebalance.enable": "false",
            **self.overrides,
        }

    def start(self) -> Cluster:
        self.etcd.start()
        for i in range(1, self.n + 1):
            self.add_broker(i)
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until every broker lists all of them and names a controller: a listening port alone
        does not mean registered (an admin client that first sees controller -1 waits for it)."""
        import time

        from tidelog.cli.client import KafkaClient

        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                ready = True
                for b in self.brokers.values():
                    with KafkaClient(b.bootstrap) as client:
                        md = client.request(3, {"topics": [], "allow_auto_topic_creation": False}, version=9)
                    if len(md.brokers) < len(self.brokers) or md.controller_id < 0:
                        ready, last = False, (b.bootstrap, len(md.brokers), md.controller_id)
                        break
                if ready:
                    return
            except (OSError, ConnectionError) as e:
                last = e
            time.sleep(0.1)
        raise TimeoutError(f"cluster not ready after {timeout}s (last {last!r})\n{self.logs()}")

    def add_broker(self, node_id: int) -> BrokerProcess:
        port = free_port()
        overrides = self.broker_overrides(node_id)
        if self.extra is not None:
            overrides.update(self.extra(node_id, port))
        b = BrokerProcess(self.base / f"broker-{node_id}", overrides, port=port)
        self.brokers[node_id] = b
        b.start()
        return b

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def stop(self) -> None:
        for b in self.brokers.values():
            b.stop()
        self.etcd.stop()

    def metrics(self, node_id: int) -> dict[str, float]:
        """The broker's Prometheus samples, `name{labels}` -> value."""
        import urllib.request

        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_ports[node_id]}/metrics", timeout=10).read()
        out = {}
        for line in text.decode().splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def pause(self, node_id: int) -> None:
        proc = self.brokers[node_id].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGSTOP)
        self.paused.add(node_id)

    def resume(self, node_id: int) -> None:
        proc = self.brokers[node_id].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGCONT)
        self.paused.discard(node_id)

    def heal(self) -> list[int]:
        """Resume paused brokers and start stopped ones, then wait until all are registered: what a
        module-scoped cluster needs after a test that failed half-way through a fault, so the
        tests after it start whole. Returns the brokers it had to bring back."""
        back = sorted(self.paused)
        for i in back:
            self.resume(i)
        for i, b in self.brokers.items():
            if not b.running:
                b.start()
                back.append(i)
        if back:
            self.wait_ready()
        return back

    def logs(self, *needles: str) -> str:
        """The tail of every broker's log; with `needles`, its last 60 lines holding any of them."""
        if not needles:
            return "\n".join(f"==== broker {i}\n{b.log()[-3000:]}" for i, b in self.brokers.items())
        out = []
        for i, b in self.brokers.items():
            lines = [ln for ln in b.log().splitlines() if any(n in ln for n in needles)]
            out.append(f"==== broker {i} ({len(lines)} lines about {', '.join(needles)})\n" + "\n".join(lines[-60:]))
        return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--dir", default=None, help="data directory (default: a temporary one)")
    args = ap.parse_args()
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="tidelog-cluster-"))
    c = Cluster(base, args.brokers, name="dev").start()
    print(f"etcd {c.etcd.endpoint_hostport}; brokers {c.bootstrap}; data in {base}", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()


if __name__ == "__main__":
    main()
