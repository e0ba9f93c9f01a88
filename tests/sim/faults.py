"""The nemesis of a simulation run: faults chosen by the seed, each lasting a random while, several
at once (never two on the same broker at the same time).

A lost disk is injected only while every partition the victim holds has another in-sync replica (per
etcd) and every other replica has the partition's whole committed log (its log end at or past the
highest high watermark of any replica), the other brokers being up: the loss of one copy, which
acks=all with min.insync.replicas=2 must survive. (A partition whose only in-sync replica loses its
disk stays offline, rightly, until an unclean election.) Crashes that keep the disk need no such
care: a process that dies keeps what it wrote (the page cache survives), so no number of them may
lose an acknowledged record.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

from .cluster import SimCluster

SESSION_S = 6.0

WEIGHTS = {
    "pause": 14,
    "crash": 12,
    "crash-wipe": 6,
    "double-crash": 4,
    "shutdown": 6,
    "isolate": 8,
    "etcd-cut": 6,
    "sever": 6,
    "client-cut": 4,
    "etcd-down": 4,
    "lost-outcomes": 5,
    "watch-lag": 6,
    "slow": 3,
    "disk-stall": 5,
}


class Nemesis:
    def __init__(self, sim: SimCluster) -> None:
        self.sim = sim
        self.rng = random.Random(sim.seed * 7 + 3)
        self.counts: Counter[str] = Counter()
        self.busy: set[Any] = set()
        self.tasks: list[asyncio.Task[None]] = []

    async def run(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        kinds = list(WEIGHTS)
        weights = [WEIGHTS[k] for k in kinds]
        while loop.time() < end:
            await asyncio.sleep(self.rng.uniform(0.3, 2.5))
            kind = self.rng.choices(kinds, weights)[0]
            self.tasks.append(asyncio.ensure_future(self._fault(kind)))
        await asyncio.wait(self.tasks, timeout=60)
        for t in self.tasks:
            if not t.done():
                t.cancel()
            elif t.exception() is not None:
                self.sim.violate(f"nemesis fault failed: {t.exception()!r}")

    def _pick(self, leaders_first: bool = True) -> int | None:
        free = [n for n, b in self.sim.brokers.items() if n not in self.busy and b.up]
        if not free:
            return None
        if leaders_first and self.rng.random() < 0.6:
            leading = [n for n in free if _leads_something(self.sim.brokers[n])]
            if leading:
                return self.rng.choice(leading)
        return self.rng.choice(free)

    async def _fault(self, kind: str) -> None:
        sim, rng = self.sim, self.rng
        if kind in ("etcd-down", "lost-outcomes"):
            if kind in self.busy:
                return
            self.busy.add(kind)
            self.counts[kind] += 1
            try:
                if kind == "etcd-down":
                    sim.etcd_down()
                    await asyncio.sleep(rng.uniform(0.3, 10))
                    sim.etcd_up()
                else:
                    sim.etcd.lost_outcomes = rng.uniform(0.1, 0.6)
                    sim.event(f"etcd loses {sim.etcd.lost_outcomes:.0%} of write outcomes")
                    await asyncio.sleep(rng.uniform(2, 10))
                    sim.etcd.lost_outcomes = 0.0
                    sim.event("etcd outcomes whole again")
            finally:
                self.busy.discard(kind)
            return
        if kind == "double-crash":
            a = self._pick()
            if a is None:
                return
            self.busy.add(a)
            b = self._pick(leaders_first=False)
            if b is None:
                self.busy.discard(a)
                return
            self.busy.add(b)
            self.counts[kind] += 1
            try:
                sim.brokers[a].crash()
                sim.brokers[b].crash()
                await asyncio.sleep(rng.uniform(0.2, 8))
                for n in (a, b):
                    if not sim.brokers[n].up:
                        sim.brokers[n].start()
            finally:
                self.busy -= {a, b}
            return
        node = self._pick()
        if node is None:
            return
        b = sim.brokers[node]
        self.busy.add(node)
        try:
            if kind == "pause":
                self.counts[kind] += 1
                b.pause()
                await asyncio.sleep(
                    rng.choice([rng.uniform(0.1, SESSION_S * 0.8), rng.uniform(SESSION_S, 2.5 * SESSION_S)])
                )
                b.resume()
            elif kind in ("crash", "crash-wipe"):
                wipe = kind == "crash-wipe" and safe_to_wipe(sim, node)
                self.counts["crash-wipe" if wipe else "crash"] += 1
                b.crash(wipe=wipe)
                await asyncio.sleep(
                    rng.choice([rng.uniform(0.05, SESSION_S * 0.8), rng.uniform(SESSION_S, 2 * SESSION_S)])
                )
                b.start()
            elif kind == "shutdown":
                if not b.running:
                    return
                self.counts[kind] += 1
                await b.shutdown()
                await asyncio.sleep(rng.uniform(0.2, 5))
                if not b.up:
                    b.start()
            elif kind == "isolate":
                self.counts[kind] += 1
                name = b.name
                sim.event(f"isolate {name}")
                sim.net.isolate(name)
                sim.etcd.set_reachable(name, False)
                await asyncio.sleep(rng.uniform(0.3, 2.5 * SESSION_S))
                sim.event(f"reconnect {name}")
                sim.net.unisolate(name)
                sim.etcd.set_reachable(name, True)
            elif kind == "etcd-cut":
                self.counts[kind] += 1
                name = b.name
                sim.event(f"{name} cannot reach etcd")
                sim.etcd.set_reachable(name, False)
                await asyncio.sleep(rng.uniform(0.3, 2.5 * SESSION_S))
                sim.event(f"{name} reaches etcd again")
                sim.etcd.set_reachable(name, True)
            elif kind == "sever":
                other = self._pick(leaders_first=False)
                if other is None:
                    return
                self.busy.add(other)
                try:
                    self.counts[kind] += 1
                    x, y = b.name, sim.brokers[other].name
                    sim.event(f"cut {x} from {y}")
                    sim.net.sever(x, y)
                    await asyncio.sleep(rng.uniform(0.3, 2 * SESSION_S))
                    sim.event(f"mend {x} and {y}")
                    sim.net.mend(x, y)
                finally:
                    self.busy.discard(other)
            elif kind == "client-cut":
                procs = sim.client_procs
                if not procs:
                    return
                self.counts[kind] += 1
                c = rng.choice(procs).name
                x = b.name
                sim.event(f"cut client {c} from {x}")
                sim.net.sever(c, x)
                await asyncio.sleep(rng.uniform(0.3, 15))
                sim.event(f"mend client {c} and {x}")
                sim.net.mend(c, x)
            elif kind == "watch-lag":
                await self._for_a_while(
                    kind,
                    sim.etcd.watch_lag,
                    b.name,
                    rng.uniform(0.05, 1.5),
                    "etcd watch lags {:.2f} s per event",
                    "watch keeps up again",
                )
            elif kind == "disk-stall":
                await self._for_a_while(
                    kind,
                    sim.loop.fsync_delay,
                    b.name,
                    rng.uniform(0.005, 0.5),
                    "fsyncs slow (+{:.3f} s)",
                    "fsyncs fast again",
                )
            elif kind == "slow":
                await self._for_a_while(
                    kind,
                    sim.net.slow,
                    b.name,
                    rng.uniform(0.005, 0.3),
                    "network slow (+{:.3f} s)",
                    "network fast again",
                )
        finally:
            self.busy.discard(node)

    async def _for_a_while(
        self, kind: str, table: dict[str, float], name: str, value: float, on: str, off: str
    ) -> None:
        """`table[name] = value` (a broker's extra delay) for 1-10 s, each end an event."""
        self.counts[kind] += 1
        table[name] = value
        self.sim.event(f"{name}'s " + on.format(value))
        await asyncio.sleep(self.rng.uniform(1, 10))
        table.pop(name, None)
        self.sim.event(f"{name}'s {off}")


def _states(sim: SimCluster) -> dict[tuple[str, int], Any]:
    """Every partition's state as etcd holds it now."""
    from tidelog.cluster.model import PartitionState

    out = {}
    for key, kv in sim.etcd.kv.items():
        head, sep, tail = key.rpartition("/p/")
        if sep and tail.isdigit() and "/topics/" in head:
            out[(head.rsplit("/topics/", 1)[1], int(tail))] = PartitionState.decode(kv.value, kv.mod_revision)
    return out


def _leads_something(b: Any) -> bool:
    rm = b.replica_manager()
    return rm is not None and any(r.role == "leader" for r in rm.replicas.values())


def safe_to_wipe(sim: SimCluster, node: int) -> bool:
    """Every partition on `node` has another in-sync replica, and every other replica holds the
    partition's committed log."""
    victim = sim.brokers[node]
    if victim.broker is None or any(not b.up for n, b in sim.brokers.items() if n != node):
        return False
    states = _states(sim)
    for plog in list(victim.broker.partitions.manager.logs()):
        t, p = plog.topic, plog.partition
        st = states.get((t, p))
        if st is None or not [b for b in st.isr if b != node]:
            return False
        others = []
        for n, b in sim.brokers.items():
            if n == node or b.broker is None:
                continue
            o = b.broker.partitions.manager.get(t, p)
            if o is None:
                return False
            others.append(o)
        top = max([plog.high_watermark] + [o.high_watermark for o in others])
        if any(o.log_end_offset < top for o in others):
            return False
    return True
