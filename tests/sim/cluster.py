"""A simulated tidelog cluster: one etcd model and N real `Broker`s (the whole broker: handlers,
partition logs on disk, replica manager, fetchers, controller, coordinators, marker sender), each
incarnation a simulated process on the simulation's network, plus the faults a test or a seed
can inject and a monitor that checks invariants as the run goes.

Faults: `pause`/`resume` (SIGSTOP/SIGCONT), `crash` (SIGKILL: files stay as written; `wipe`
deletes the broker's data directory too, a lost disk), `restart` (a new incarnation on the same
directory), `shutdown` (SIGTERM: controlled shutdown), network cuts (`isolate`, `sever`, etcd
unreachable from one broker), etcd down, lost etcd outcomes, lagging watches.

Monitor (every `check_every` seconds of virtual time, and on demand):
- no two incarnations act as leader of a partition at the same leader epoch;
- a broker incarnation's high watermark of a partition never moves back;
- any two replicas hold the same batches below the smaller of their high watermarks.
"""

from __future__ import annotations

import asyncio
import logging
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tidelog.core.config import load_config
from tidelog.log.records import iter_batches
from tidelog.server.broker import Broker
from tidelog.server.connection import KafkaConnection

from .etcd import EtcdServer
from .loop import PAUSED, Process, SimLoop
from .network import Network

LISTENER = "PLAINTEXT"
PORT = 9092

BROKER_DEFAULTS = {
    "broker.session.timeout.ms": "6000",
    "etcd.connection.timeout.ms": "2000",
    "replica.lag.time.max.ms": "4000",
    "replica.fetch.wait.max.ms": "250",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.num.partitions": "2",
    "transaction.state.log.num.partitions": "2",
    "share.coordinator.state.topic.num.partitions": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "2000",
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "5",
    "auto.create.topics.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
    "log.segment.bytes": "65536",
}


class Violation(AssertionError):
    pass


class SimBroker:
    def __init__(self, sim: SimCluster, node_id: int) -> None:
        self.sim = sim
        self.node_id = node_id
        self.host = f"broker{node_id}"
        self.dir = sim.base / f"broker-{node_id}"
        self.incarnation = 0
        self.proc: Process | None = None
        self.broker: Broker | None = None
        self.start_task: asyncio.Task[Any] | None = None
        self.overrides: dict[str, str] = {}

    @property
    def name(self) -> str:
        return self.proc.name if self.proc is not None else f"b{self.node_id}"

    @property
    def up(self) -> bool:
        """Alive (running or paused)."""
        return self.proc is not None and self.proc.alive

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.state == "running"

    def config(self) -> Any:
        conf = {
            **BROKER_DEFAULTS,
            **self.sim.overrides,
            **self.overrides,
            "node.id": str(self.node_id),
            "listeners": f"{LISTENER}://{self.host}:{PORT}",
            "log.dirs": str(self.dir),
            "etcd.connect": "etcd:2379/sim",
        }
        return load_config(None, [f"{k}={v}" for k, v in conf.items()])

    def start(self) -> None:
        assert not self.up
        self.incarnation += 1
        proc = self.proc = Process(f"b{self.node_id}.{self.incarnation}")
        sim = self.sim
        store = sim.etcd.client(proc, timeout_s=2.0)
        connect = sim.net.connector(proc)
        broker = self.broker = proc.run(lambda: Broker(self.config(), store=store, connect=connect))

        async def start() -> None:
            try:
                await broker.start(listen=False)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a broker that cannot start is a finding
                sim.violate(f"{proc.name} failed to start: {e!r}")
                logging.getLogger("sim").exception("%s failed to start", proc.name)
                return
            # connections are taken once the broker serves (after it joined the cluster)
            sim.net.listen(self.host, PORT, proc, lambda: KafkaConnection(broker, LISTENER))

        self.start_task = proc.spawn(start())
        sim.event(f"start {proc.name}")

    def pause(self) -> None:
        if self.running:
            assert self.proc is not None
            self.sim.loop.pause(self.proc)
            self.sim.event(f"pause {self.name}")

    def resume(self) -> None:
        if self.proc is not None and self.proc.state == PAUSED:
            self.sim.event(f"resume {self.name}")
            self.sim.loop.resume(self.proc)

    def crash(self, wipe: bool = False) -> None:
        if self.proc is not None and self.proc.alive:
            self.sim.event(f"crash {self.name}{' and lose its disk' if wipe else ''}")
            self.sim.loop.kill(self.proc)
            self.sim.net.process_died(self.proc)
        if wipe:
            shutil.rmtree(self.dir, ignore_errors=True)

    async def shutdown(self) -> None:
        """SIGTERM: the broker's own clean stop (controlled shutdown), then the process exits."""
        if not self.running:
            return
        assert self.proc is not None and self.broker is not None
        self.sim.event(f"shutdown {self.name}")
        task = self.proc.spawn(self.broker.stop())
        try:
            await asyncio.wait_for(asyncio.shield(task), 30)
        except TimeoutError:
            self.sim.event(f"{self.name} did not stop in 30 s")
        if self.proc.alive:
            self.sim.loop.kill(self.proc)
            self.sim.net.process_died(self.proc)

    # ---- views for the checks ------------------------------------------------------------------
    def replica_manager(self) -> Any:
        b = self.broker
        if b is None or not self.up:
            return None
        return getattr(b.cluster, "replicas", None)

    def plog(self, topic: str, partition: int) -> Any:
        b = self.broker
        if b is None or not self.up:
            return None
        return b.partitions.manager.get(topic, partition)


class SimCluster:
    def __init__(
        self,
        loop: SimLoop,
        seed: int,
        base: Path,
        brokers: int = 3,
        overrides: dict[str, str] | None = None,
        check_every: float = 0.25,
    ) -> None:
        self.loop = loop
        self.seed = seed
        self.rng = random.Random(seed)
        self.base = base
        self.overrides = dict(overrides or {})
        self.etcd = EtcdServer(loop, random.Random(seed * 7 + 1))
        self.net = Network(loop, random.Random(seed * 7 + 2))
        self.brokers = {i: SimBroker(self, i) for i in range(1, brokers + 1)}
        self.events: list[str] = []
        self.violations: list[str] = []
        self._seen: set[str] = set()
        self.check_every = check_every
        self._leaders: dict[tuple[str, int, int], str] = {}  # (topic, p, epoch) -> incarnation that led
        self._hw: dict[tuple[str, str, int], int] = {}  # (incarnation, topic, p) -> highest HW seen
        self._monitor: asyncio.Task[None] | None = None
        self._restore_hook: Callable[[], None] | None = None
        self.client_procs: list[Process] = []

    # ---- lifecycle ------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> list[tuple[str, int]]:
        return [(b.host, PORT) for b in self.brokers.values()]

    def event(self, what: str) -> None:
        self.events.append(f"{self.loop.time():9.3f} {what}")
        logging.getLogger("sim").info("%s", what)

    def start(self) -> None:
        self._observe_leadership()
        for b in self.brokers.values():
            b.start()
        self._monitor = asyncio.ensure_future(self._watch())

    def _observe_leadership(self) -> None:
        """Every `set_leader_epoch` (a broker starting to lead a partition at an epoch) is seen as
        it happens: the same epoch taken by two incarnations is a violation however briefly."""
        from tidelog.log.replication import ReplicaLogMixin

        from .loop import PROCESS

        original = ReplicaLogMixin.set_leader_epoch
        self._restore_hook = lambda: setattr(ReplicaLogMixin, "set_leader_epoch", original)
        sim = self

        def set_leader_epoch(plog: Any, epoch: int) -> None:
            proc = PROCESS.get()
            if proc is not None:
                key = (plog.topic, plog.partition, epoch)
                who = sim._leaders.setdefault(key, proc.name)
                if who != proc.name:
                    sim.violate(f"{plog.topic}-{plog.partition}: {proc.name} leads at epoch {epoch}, which {who} led")
            original(plog, epoch)

        ReplicaLogMixin.set_leader_epoch = set_leader_epoch  # type: ignore[method-assign]

    async def until(self, cond: Callable[[], bool], timeout: float, what: str = "condition") -> bool:
        """Wait (virtual time) until `cond()`; False at the timeout."""
        deadline = self.loop.time() + timeout
        while not cond():
            if self.loop.time() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    async def stop(self) -> None:
        if self._restore_hook is not None:
            self._restore_hook()
            self._restore_hook = None
        if self._monitor is not None:
            self._monitor.cancel()
        for b in self.brokers.values():
            if b.proc is not None and b.proc.alive:
                self.loop.kill(b.proc)
        for p in self.client_procs:
            self.loop.kill(p)

    def client_process(self, name: str) -> Process:
        p = Process(name)
        self.client_procs.append(p)
        return p

    # ---- faults ---------------------------------------------------------------------------------
    def isolate(self, node: int) -> None:
        b = self.brokers[node]
        self.event(f"isolate broker {node} (network and etcd)")
        self.net.isolate(b.name)
        self.etcd.set_reachable(b.name, False)

    def heal_network(self) -> None:
        self.event("heal the network")
        self.net.heal()
        for name in list(self.etcd.unreachable):
            self.etcd.set_reachable(name, True)

    def etcd_down(self) -> None:
        self.event("etcd down")
        self.etcd.go_down()

    def etcd_up(self) -> None:
        self.event("etcd up")
        self.etcd.come_up()

    def heal_all(self) -> None:
        """Every fault ended: processes resumed or restarted, network and etcd whole."""
        self.heal_network()
        self.etcd_up()
        self.etcd.lost_outcomes = 0.0
        self.etcd.watch_lag.clear()
        self.net.slow.clear()
        self.loop.fsync_delay.clear()
        for b in self.brokers.values():
            b.resume()
            if not b.up:
                b.start()

    # ---- monitor ----------------------------------------------------------------------------------
    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.check_every)
            try:
                self.check_now()
            except Exception as e:  # noqa: BLE001 - a check that breaks is itself reported
                self.violate(f"monitor failed: {e!r}")

    def violate(self, what: str) -> None:
        """Record a broken invariant (once: the monitor sees a lasting one at every check)."""
        if what in self._seen:
            return
        self._seen.add(what)
        self.violations.append(f"t={self.loop.time():.3f} {what}")
        logging.getLogger("sim").error("VIOLATION %s", what)

    def check_now(self) -> None:
        replicas: dict[tuple[str, int], list[tuple[str, Any]]] = {}
        for b in self.brokers.values():
            rm = b.replica_manager()
            if rm is None:
                continue
            name = b.name
            for (topic, p), r in list(rm.replicas.items()):
                if r.role == "leader":
                    key = (topic, p, r.leader_epoch)
                    who = self._leaders.setdefault(key, name)
                    if who != name:
                        self.violate(f"{topic}-{p}: {name} leads at epoch {r.leader_epoch}, which {who} led")
                plog = b.plog(topic, p)
                if plog is None:
                    continue
                hw = plog.high_watermark
                hkey = (name, topic, p)
                if hw < self._hw.get(hkey, -1):
                    self.violate(f"{topic}-{p}: high watermark of {name} went back from {self._hw[hkey]} to {hw}")
                self._hw[hkey] = max(hw, self._hw.get(hkey, -1))
                replicas.setdefault((topic, p), []).append((name, plog))
        for (topic, p), logs in replicas.items():
            self._compare_committed(topic, p, logs)

    def _compare_committed(self, topic: str, p: int, logs: list[tuple[str, Any]]) -> None:
        views = []
        for name, plog in logs:
            hw = plog.high_watermark
            start = plog.log_start_offset
            if hw > start:
                views.append((name, hw, batches_below(plog, hw)))
        for i in range(len(views)):
            for j in range(i + 1, len(views)):
                (na, ha, ba), (nb, hb, bb) = views[i], views[j]
                upto = min(ha, hb)
                common_a = {k: v for k, v in ba.items() if v[0] < upto}
                common_b = {k: v for k, v in bb.items() if v[0] < upto}
                lo = max(min(common_a, default=0), min(common_b, default=0))
                a = {k: v for k, v in common_a.items() if k >= lo}
                b = {k: v for k, v in common_b.items() if k >= lo}
                if a != b:
                    diff = sorted(set(a.items()) ^ set(b.items()))[:4]
                    self.violate(f"{topic}-{p}: {na} (hw {ha}) and {nb} (hw {hb}) differ below {upto}: {diff}")


def batches_below(plog: Any, hw: int) -> dict[int, tuple[int, int, int]]:
    """base offset -> (base, last offset, CRC) of the partition's batches that start below `hw`."""
    out: dict[int, tuple[int, int, int]] = {}
    for seg in plog.segments:
        if seg.base_offset >= hw:
            break
        data = seg.log.pread(0, seg.log.size)
        for _pos, h in iter_batches(data):
            base = h.base_offset
            if base >= hw:
                break
            out[base] = (base, h.last_offset, h.crc)
    return out
