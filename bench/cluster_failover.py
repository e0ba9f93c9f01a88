"""Recovery times of a three-broker cluster: how long acks=all writes stop after a fault.

One etcd and three tidelog brokers on loopback (tests/cluster_process.py); one partition,
replication factor 3, min.insync.replicas 2; a confluent-kafka idempotent acks=all producer (client
defaults otherwise) sends one record every 10 ms. For each fault, repeated --runs times (default 5):

- leader-kill: SIGKILL of the partition's leader (restarted once acknowledgements resume);
- zombie: SIGSTOP of the leader, held until acknowledgements resume (past
  broker.session.timeout.ms), then SIGCONT;
- sigterm: SIGTERM of the leader (controlled shutdown), restarted once it exited;
- etcd-kill: SIGKILL of etcd, restarted at once on the same data directory and ports;

it measures the time until another broker is named leader (Metadata, polled), the recovery time
(from the fault to the first acknowledgement of a record produced after it) and the longest gap
between two acknowledgements from the fault until the cluster is whole again (every broker back,
full ISR), and prints the medians and maxima as a Markdown table (and writes
bench/results/failover-<stamp>.json). Each fault gets a fresh cluster; between runs it is healed
and the producer has had a second of steady acknowledgements. A run without an acknowledgement
within 3 x the session timeout + 120 s is counted as stuck, ends that fault's runs and keeps its
brokers' logs (path printed). Figures, never assertions: every process shares the same CPUs.

broker.session.timeout.ms is 9000 by default (tidelog's default, what a user has); --session-ms
9000,3000 also measures the test clusters' 3000.

    .venv/bin/python bench/cluster_failover.py [--runs 5] [--session-ms 9000] [--faults leader-kill,...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cluster_process import Cluster  # noqa: E402

from tidelog.cli.client import KafkaClient  # noqa: E402

FAULTS = ("leader-kill", "zombie", "sigterm", "etcd-kill")


def partition_state(c: Cluster, topic: str) -> dict | None:
    """Leader and ISR of partition 0 as the first live, answering broker tells it."""
    for i, b in c.brokers.items():
        if not b.running or i in c.paused:
            continue
        try:
            with KafkaClient(b.bootstrap, timeout=5) as client:
                md = client.request(3, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}, version=9)
        except Exception:  # noqa: BLE001 - a broker restarting: ask the next
            continue
        t = md.topics[0]
        if t.error_code.value == 0 and t.partitions:
            p = t.partitions[0]
            return {"leader": p.leader_id, "isr": list(p.isr_nodes), "replicas": list(p.replica_nodes)}
    return None


def views(c: Cluster, topic: str) -> dict[int, object]:
    """Every broker's own answer for partition 0 (leader, ISR), or why there is none."""
    out: dict[int, object] = {}
    for i, b in c.brokers.items():
        if not b.running or i in c.paused:
            out[i] = "down or paused"
            continue
        try:
            with KafkaClient(b.bootstrap, timeout=5) as client:
                md = client.request(3, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}, version=9)
            t = md.topics[0]
            out[i] = (
                f"error {t.error_code.value}"
                if t.error_code.value or not t.partitions
                else f"leader {t.partitions[0].leader_id} isr {list(t.partitions[0].isr_nodes)}"
            )
        except Exception as e:  # noqa: BLE001 - reported as the view
            out[i] = repr(e)
    return out


def wait(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except Exception:  # noqa: BLE001 - retried until the deadline
            pass
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def whole(c: Cluster, topic: str) -> bool:
    st = partition_state(c, topic)
    return (
        st is not None
        and st["leader"] > 0
        and len(st["isr"]) == 3
        and all(b.running for b in c.brokers.values())
        and not c.paused
    )


class Load(threading.Thread):
    """One record every `interval` s; the send and acknowledgement time of each (time.monotonic())."""

    def __init__(self, bootstrap: str, topic: str, conf: dict[str, str], interval: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.interval, self.conf = bootstrap, topic, interval, conf
        self.sent: list[float] = []
        self.acks: list[tuple[float, int]] = []  # (ack time, record number), in acknowledgement order
        self.errors: list[tuple[float, str]] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "message.timeout.ms": 300000,
                **self.conf,
            }
        )

        def cb(err, msg, n):
            now = time.monotonic()
            with self.lock:
                if err:
                    self.errors.append((now, err.name()))
                else:
                    self.acks.append((now, n))

        n = 0
        next_at = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= next_at:
                self.sent.append(now)
                p.produce(self.topic, str(n).encode(), on_delivery=lambda err, msg, n=n: cb(err, msg, n))
                n += 1
                next_at += self.interval
                if next_at < now:  # fell behind (a blocked poll): no burst to catch up
                    next_at = now + self.interval
            p.poll(max(0.0, next_at - time.monotonic()))
        p.flush(60)

    def first_ack_after(self, t: float) -> float | None:
        """When the first record sent after `t` was acknowledged."""
        with self.lock:
            acks = list(self.acks)
        first = next((i for i, s in enumerate(self.sent) if s > t), None)
        if first is None:
            return None
        times = [a for a, n in acks if n >= first]
        return min(times) if times else None

    def longest_gap(self, t0: float, t1: float) -> float:
        """The longest time without an acknowledgement in [t0, t1]."""
        with self.lock:
            times = sorted(a for a, _n in self.acks if t0 <= a <= t1)
        points = [t0, *times, t1]
        return max(b - a for a, b in zip(points, points[1:]))


def steady(load: Load, seconds: float = 1.0) -> bool:
    """Acknowledgements came all along the last `seconds` (no gap over 0.25 s)."""
    now = time.monotonic()
    return bool(load.acks) and load.longest_gap(now - seconds, now) < 0.25


class Stuck(Exception):
    """No acknowledgement within the cap: the run is recorded as such, the cluster abandoned."""


def one(c: Cluster, topic: str, load: Load, fault: str, session_s: float, cap_s: float) -> dict:
    wait(lambda: whole(c, topic) and steady(load), 120, "a whole cluster and steady acknowledgements")
    st = partition_state(c, topic)
    assert st is not None
    leader = st["leader"]
    b = c.brokers[leader]
    errors_before = len(load.errors)
    elected: list[float] = []

    def recovered() -> bool:
        """Also notes when another broker is first named leader (polled meanwhile)."""
        if not elected and fault != "etcd-kill":
            now = partition_state(c, topic)
            if now is not None and now["leader"] not in (leader, -1):
                elected.append(time.monotonic())
        return load.first_ack_after(t) is not None

    def until_recovered(what: str) -> None:
        try:
            wait(recovered, cap_s, what)
        except TimeoutError:
            raise Stuck(
                f"{fault}: no acknowledgement within {cap_s:.0f} s of the fault (leader was {leader}; "
                f"another leader {'named after %.1f s' % (elected[0] - t) if elected else 'never named'})"
            ) from None

    t = time.monotonic()
    if fault == "leader-kill":
        b.kill()
        try:
            until_recovered("an acknowledgement after the kill")
        finally:
            b.start()
    elif fault == "zombie":
        c.pause(leader)
        try:
            until_recovered("an acknowledgement around the zombie")
        finally:
            c.resume(leader)
    elif fault == "sigterm":
        b.proc.send_signal(signal.SIGTERM)
        try:
            until_recovered("an acknowledgement after the controlled shutdown")
        finally:
            b.stop()  # waits for the exit (SIGKILL after 20 s)
            b.start()
    elif fault == "etcd-kill":
        c.etcd.kill()
        c.etcd.start(60)
        until_recovered("an acknowledgement after etcd's restart")
    else:
        raise ValueError(fault)
    first = load.first_ack_after(t)
    assert first is not None
    wait(lambda: whole(c, topic), 180, "the cluster whole again")
    healed = time.monotonic()
    wait(lambda: steady(load), 60, "steady acknowledgements")
    return {
        "fault": fault,
        "leader": leader,
        "recovery_s": first - t,
        "longest_gap_s": load.longest_gap(t, healed),
        "elected_s": elected[0] - t if elected else None,
        "heal_s": healed - t,
        "errors": [e for _t, e in load.errors[errors_before:]],
    }


def measure(session_ms: int, fault: str, runs: int, conf: dict[str, str]) -> list[dict]:
    """`runs` runs of one fault on a fresh cluster; a stuck run ends them (recorded, its data kept)."""
    base = Path(tempfile.mkdtemp(prefix=f"tidelog-bench-failover-{fault}-"))
    c = Cluster(base, 3, overrides={"broker.session.timeout.ms": str(session_ms)}, name="failover").start()
    out: list[dict] = []
    load: Load | None = None
    stuck = False
    try:
        topic = f"failover-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})])[topic].result(30)
        wait(lambda: whole(c, topic), 60, "the topic in full ISR")
        load = Load(c.bootstrap, topic, conf)
        load.start()
        for i in range(runs):
            try:
                r = one(c, topic, load, fault, session_ms / 1000, cap_s=3 * session_ms / 1000 + 120)
            except (Stuck, TimeoutError) as e:
                stuck = True
                e = f"{e}; each broker's view then: {views(c, topic)}"
                out.append({"fault": fault, "session_ms": session_ms, "stuck": e, "data": str(base)})
                print(
                    f"session {session_ms} ms, {fault} #{i + 1}: STUCK: {e}; the remaining runs of this fault "
                    f"are skipped; logs in {base}",
                    file=sys.stderr,
                    flush=True,
                )
                break
            r["session_ms"] = session_ms
            out.append(r)
            el = f"{r['elected_s'] * 1000:,.0f} ms" if r["elected_s"] is not None else "-"
            print(
                f"session {session_ms} ms, {fault} #{i + 1} (leader {r['leader']}): new leader named after {el}, "
                f"first ack after {r['recovery_s'] * 1000:,.0f} ms, longest gap {r['longest_gap_s'] * 1000:,.0f} ms, "
                f"whole after {r['heal_s']:.1f} s, errors {len(r['errors'])}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        if load is not None:
            load.stop.set()
            load.join(90)
        c.stop()
        if not stuck:
            shutil.rmtree(base, ignore_errors=True)
    return out


def ms(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values) * 1000:,.0f} / {max(values) * 1000:,.0f} ms"


def table(results: list[dict], faults: list[str], sessions: list[int]) -> str:
    rows = [
        "| fault | broker.session.timeout.ms | runs | new leader named (median / max) "
        "| first ack after the fault (median / max) | longest ack gap (median / max) | stuck | producer errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in sessions:
        for f in faults:
            rs = [r for r in results if r["fault"] == f and r["session_ms"] == s and "stuck" not in r]
            stuck = sum(1 for r in results if r["fault"] == f and r["session_ms"] == s and "stuck" in r)
            if not rs and not stuck:
                continue
            elected = [r["elected_s"] for r in rs if r["elected_s"] is not None]
            rows.append(
                f"| {f} | {s} | {len(rs)} | {ms(elected)} | {ms([r['recovery_s'] for r in rs])} "
                f"| {ms([r['longest_gap_s'] for r in rs])} | {stuck} | {sum(len(r['errors']) for r in rs)} |"
            )
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--session-ms", default="9000", help="comma-separated broker.session.timeout.ms values")
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument(
        "--producer",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a confluent-kafka producer setting over the defaults (repeatable)",
    )
    args = ap.parse_args()
    faults = [f for f in args.faults.split(",") if f]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        ap.error(f"unknown faults {sorted(unknown)}; known: {', '.join(FAULTS)}")
    sessions = [int(s) for s in args.session_ms.split(",") if s]
    conf = dict(kv.split("=", 1) for kv in args.producer)
    results: list[dict] = []
    for s in sessions:
        for f in faults:
            results += measure(s, f, args.runs, conf)
    load = os.getloadavg()[0]
    text = table(results, faults, sessions)
    out = ROOT / "bench" / "results" / f"failover-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "load_at_end": load,
                "args": vars(args),
                "results": results,
            },
            indent=1,
        )
    )
    print(
        f"acks=all recovery, one record every 10 ms (confluent-kafka, idempotent, "
        f"{'client defaults' if not conf else conf}), "
        f"1 partition RF 3 min ISR 2, {args.runs} runs per fault; load {load:.1f} ({out.name})\n"
    )
    print(text)
    for r in results:
        if "stuck" in r:
            print(f"\nstuck (session {r['session_ms']} ms): {r['stuck']}; brokers' logs in {r['data']}")


if __name__ == "__main__":
    main()
