"""The nemesis's faults (tests/cluster/test_nemesis.py) and what it reads of the cluster: each
fault kind injected into real processes (SIGKILL, SIGSTOP, SIGTERM, a deleted data directory,
etcd killed or paused), the cluster waited for until whole again, and the fault history that a
failed check is placed in."""

import collections
import random
import threading
import time
from dataclasses import dataclass, field

from cluster_process import Cluster
from history import History
from nemesis_clients import PARTITIONS
from test_replication import wait_for

from tidelog.cli.client import KafkaClient

KINDS = ("leader-kill", "zombie", "two-kill", "sigterm", "disk-loss", "etcd-kill", "etcd-pause")
HEAL_S = 90.0  # how long the cluster may take to lead every partition again (ISR >= 2) after a fault


# -- the cluster's state as the brokers tell it ------------------------------------------------------


def live(c: Cluster) -> list[int]:
    return [i for i, b in c.brokers.items() if b.running and i not in c.paused]


def metadata(c: Cluster, node: int, topics: list[str] | None) -> dict[str, list[dict]]:
    """One broker's Metadata: topic -> partitions (leader, replicas, isr); None topics: all of them."""
    with KafkaClient(c.brokers[node].bootstrap, timeout=5) as client:
        md = client.request(
            3,
            {"topics": None if topics is None else [{"name": t} for t in topics], "allow_auto_topic_creation": False},
            version=9,
        )
    out = {}
    for t in md.topics:
        if t.error_code.value == 0:
            out[t.name] = [
                {
                    "partition": p.partition_index,
                    "leader": p.leader_id,
                    "replicas": list(p.replica_nodes),
                    "isr": list(p.isr_nodes),
                }
                for p in sorted(t.partitions, key=lambda p: p.partition_index)
            ]
    return out


def every_broker_sees(c: Cluster, topics: list[str], ok, all_topics: bool = False) -> bool:
    """Every broker is live, its Metadata names each of `topics` and `ok(partition)` holds for each
    of their partitions (with `all_topics`, for each partition of every topic it lists, internal
    ones included): a broker still loading its state after a restart answers with no topic or
    leader -1, which must not pass for a healthy cluster."""
    nodes = live(c)
    if len(nodes) < len(c.brokers):
        return False
    for node in nodes:
        md = metadata(c, node, None if all_topics else topics)
        if any(t not in md or not md[t] for t in topics):
            return False
        if not all(ok(p) for parts in md.values() for p in parts):
            return False
    return True


def retrying(fn, timeout: float = 30.0):
    """fn() once it stops raising (a leader moving, a broker restarting), else its last error."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:  # retried until the deadline, then raised
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def led(p: dict) -> bool:
    return p["leader"] > 0 and len(p["isr"]) >= 2


def full(p: dict) -> bool:
    return p["leader"] > 0 and len(p["isr"]) == len(p["replicas"])


def leader(c: Cluster, topic: str, part: int) -> int:
    """The partition's leader as the first live broker that knows the topic says (-1: none)."""
    for node in live(c):
        try:
            parts = metadata(c, node, [topic]).get(topic)
        except Exception:  # noqa: BLE001 - a broker restarting: ask the next
            continue
        if parts:
            return parts[part]["leader"]
    return -1


def list_offsets(c: Cluster, topic: str, part: int, isolation: int) -> int:
    """The end offset from the partition's leader: the HW (isolation 0) or the LSO (1)."""
    node = leader(c, topic, part)
    with KafkaClient(c.brokers[node].bootstrap, timeout=10) as client:
        r = client.request(
            2,
            {
                "replica_id": -1,
                "isolation_level": isolation,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [{"partition_index": part, "current_leader_epoch": -1, "timestamp": -1}],
                    }
                ],
            },
            version=5,
        )
    pr = r.topics[0].partitions[0]
    assert pr.error_code.value == 0, pr
    return int(pr.offset)


@dataclass
class Fault:
    n: int
    kind: str
    start: float  # seconds since the run began
    wall: str  # local time of the start, as in the brokers' logs
    end: float = 0.0
    victims: list[int] = field(default_factory=list)
    partition: int | None = None
    note: str = ""

    def __str__(self) -> str:
        where = f" leader of p{self.partition}" if self.partition is not None and self.victims else ""
        who = f" broker {','.join(map(str, self.victims))}{where}" if self.victims else ""
        return f"#{self.n} {self.kind}{who} at {self.start:.1f}-{self.end:.1f} s ({self.wall})" + (
            f": {self.note}" if self.note else ""
        )


class Nemesis:
    def __init__(self, c: Cluster, topics: list[str], seed: int, kinds: tuple[str, ...], t0: float) -> None:
        self.c, self.topics, self.t0 = c, topics, t0
        self.rnd = random.Random(seed)
        self.kinds = kinds
        self.deck: list[str] = []
        self.faults: list[Fault] = []
        self.stalls: list[str] = []  # the cluster not back to health (liveness), with the fault before
        self.session_s = int(c.broker_overrides(1)["broker.session.timeout.ms"]) / 1000
        self.etcd_paused = False
        self._by_offset: dict[int, dict[tuple[int, int], list[float]]] = {}  # culprit(): History -> acks by offset

    def now(self) -> float:
        return time.monotonic() - self.t0

    def pick(self) -> str:
        if not self.deck:
            self.deck = list(self.kinds)
            self.rnd.shuffle(self.deck)
        return self.deck.pop()

    def wait_healthy(self, cond, timeout: float, what: str) -> bool:
        try:
            wait_for(lambda: every_broker_sees(self.c, self.topics, cond, all_topics=cond is full), timeout, what)
            return True
        except AssertionError:
            last = self.faults[-1] if self.faults else None
            self.stalls.append(f"at {self.now():.1f} s, not {what} within {timeout:.0f} s (after {last})")
            return False

    def run(self, seconds: float, every: float, stop: threading.Event) -> None:
        k = 0
        while not stop.is_set():
            at = 2.0 + k * every
            if at >= seconds or self.now() >= seconds:  # slow heals do not stretch the run
                break
            if stop.wait(max(0.0, at - self.now())):
                break
            self.wait_healthy(led, HEAL_S, "every partition led with ISR >= 2 on every broker")
            self.inject(self.pick())
            k += 1

    def inject(self, kind: str) -> None:
        c, rnd = self.c, self.rnd
        part = rnd.randrange(PARTITIONS)
        pause = rnd.uniform(0.3, 1.5)
        if kind == "disk-loss" and not self.wait_healthy(full, HEAL_S, "every partition of every topic in full ISR"):
            kind = "leader-kill"  # a second failure otherwise: a plain kill instead
        f = Fault(len(self.faults) + 1, kind, self.now(), time.strftime("%H:%M:%S"), partition=part)
        self.faults.append(f)
        victim = leader(c, self.topics[0], part)
        if victim <= 0:
            victim = rnd.choice(sorted(c.brokers))
            f.note = "no leader known: a random broker; "
        b = c.brokers[victim]
        if kind == "leader-kill":
            f.victims = [victim]
            b.kill()
            t = time.monotonic()
            try:
                wait_for(lambda: leader(c, self.topics[0], part) not in (victim, -1), 30, "a new leader")
                f.note += f"new leader after {time.monotonic() - t:.1f} s; "
            except AssertionError:
                f.note += "no new leader within 30 s; "
            time.sleep(pause)
            b.start()
        elif kind == "zombie":
            f.victims = [victim]
            c.pause(victim)
            t = time.monotonic()
            try:  # paused until the others elected a new leader: past its session
                wait_for(lambda: leader(c, self.topics[0], part) not in (victim, -1), 60, "a new leader")
                time.sleep(pause)
            except AssertionError:
                f.note += "no new leader within 60 s; "
            f.note += f"paused {time.monotonic() - t:.1f} s (session {self.session_s:.0f} s); "
            c.resume(victim)
        elif kind == "two-kill":
            pair = rnd.sample(sorted(c.brokers), 2)
            f.victims = pair
            f.partition = None
            for v in pair:
                c.brokers[v].kill()
            time.sleep(rnd.uniform(0.5, 3.0))
            for v in pair:
                c.brokers[v].start()
        elif kind == "sigterm":
            f.victims = [victim]
            t = time.monotonic()
            rc = b.stop()  # SIGTERM, SIGKILL after 20 s
            f.note += f"exit {rc} after {time.monotonic() - t:.1f} s; "
            time.sleep(pause)
            b.start()
        elif kind == "disk-loss":
            f.victims = [victim]
            b.kill()
            b.wipe()
            time.sleep(pause)
            b.start()
            f.note += f"restarted empty after {pause:.1f} s; "
        elif kind == "etcd-kill":
            f.victims, f.partition = [], None
            c.etcd.kill()
            time.sleep(rnd.uniform(0.5, 3.0))
            c.etcd.start(30)
        elif kind == "etcd-pause":
            f.victims, f.partition = [], None
            c.etcd.pause()
            self.etcd_paused = True
            time.sleep(self.session_s + rnd.uniform(0.5, 2.0))  # the fault is the pause: past every session
            c.etcd.resume()
            self.etcd_paused = False
        else:
            raise ValueError(kind)
        f.end = self.now()
        print(f"nemesis: {f}", flush=True)

    def heal(self) -> None:
        if self.etcd_paused:
            self.c.etcd.resume()
        if not self.c.etcd.running:
            self.c.etcd.start(30)
        for node in list(self.c.paused):
            self.c.resume(node)
        for b in self.c.brokers.values():
            if not b.running:
                b.start()

    def culprit(self, h: History, v: object) -> str:
        """The faults that may have undone the acknowledged write `v`: those under way between its
        acknowledgement and the first acknowledgement of another value at its offset (the
        overwrite), else every fault after its acknowledgement (its record vanished without being
        overwritten)."""
        if v not in h.acks or v not in h.ack_times:
            return "not acknowledged"
        if id(h) not in self._by_offset:
            index: dict[tuple[int, int], list[float]] = collections.defaultdict(list)
            for w, at in h.acks.items():
                index[at].append(h.ack_times[w])
            self._by_offset[id(h)] = index
        t = h.ack_times[v] - self.t0
        over = [u - self.t0 for u in self._by_offset[id(h)][h.acks[v]] if u - self.t0 > t]
        t_c = min(over) if over else float("inf")
        window = [f for f in self.faults if f.end >= t and f.start <= t_c]
        names = ", ".join(f"#{f.n} {f.kind}" for f in window) or "no fault"
        return f"{names} (overwritten)" if over else f"{names} (not overwritten)"

    def place(self, t: float | None) -> str:
        """Where a moment of the run lies among the faults."""
        if t is None:
            return "not acknowledged"
        t -= self.t0
        before = [f for f in self.faults if f.start <= t]
        if not before:
            return f"acked at {t:.1f} s, before any fault"
        f = before[-1]
        if t <= f.end:
            return f"acked at {t:.1f} s, during #{f.n} {f.kind}"
        return f"acked at {t:.1f} s, {t - f.end:.1f} s after #{f.n} {f.kind}"
