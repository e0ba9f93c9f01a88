"""OpenMessaging-Benchmark-style workloads (issue 30): tidelog vs Apache Kafka 4.3.1 in one run.

A workload is topics x partitions, producers and consumers per topic, a message size, keys
(random 8-byte keys, or none) and a target rate (0 = as fast as the producers go). Producers and
consumers are separate processes (this script with `produce` / `consume`), librdkafka through
confluent-kafka, so the Python driver is never the bottleneck; each topic's consumers are one
consumer group. Producer settings default to OpenMessaging Benchmark's Kafka driver's (acks=all,
linger.ms=1, batch.size=1 MiB), with librdkafka's queue bounded at 32 MiB, the Java producer's
default `buffer.memory`.

Workloads (the issue's):
    a  1 topic x 100 partitions, 1 KiB, no keys, max rate
    b  the same at 50,000 msg/s in all
    c  1 topic x 500 partitions, 200 B, random keys, max rate
Topologies:
    single   tidelog's default single node vs Kafka KRaft single node (tests/kafka_process.py)
    cluster  3 tidelog brokers on one etcd (tests/cluster_process.py) vs a 3-node KRaft Kafka
             (combined broker + controller nodes, static quorum); topics RF 3, min.insync.replicas 2

Each run starts the broker(s) fresh, runs every workload on its own new topic, and stops them;
runs alternate tidelog, kafka, tidelog, kafka, ... Within a workload: the consumers join first
(until their assignments cover every partition), then the producers start together and produce
for --warmup + --duration seconds; only the --duration window is measured:
  * publish throughput: deliveries acknowledged inside the window / duration (msgs/s, MB/s of values);
  * publish latency: librdkafka's per-message latency (produce() call to the broker's acknowledgement,
    `Message.latency()`) of the deliveries acknowledged inside the window;
  * end-to-end latency: each value starts with the producer's send time (wall clock, microseconds,
    big-endian uint64); a consumer subtracts it from its own wall clock when `consume()` hands it
    the message (same host: same clock), for every message sent inside the window, until the
    consumers have read everything acknowledged (or --drain seconds after the window);
  * consume throughput: messages consumers received inside the window / duration;
  * broker CPU per record: user + system seconds over the window of every broker process (tidelog's
    cluster: its three brokers and etcd; Kafka's: its three JVMs, which hold the KRaft quorum too),
    from /proc/<pid>/stat, divided by the window's acknowledged records.
Latencies go into fixed-size histograms (bench/latency_hist.py: log-linear, < 1.6% error) in each
process, merged by the driver. The JSON keeps every run: its figures, the merged histograms, and
the acknowledgements and receipts of each second from the start, which show whether the window
began after a broker's ramp-up (a JVM's JIT compilation takes seconds on a loaded machine).
At the end of the window the producers drop what still waits in librdkafka's queue (counted as
`purged`) and wait only for the requests in flight. Medians of the runs are compared as ratios: tidelog / kafka for
throughput, kafka / tidelog for latency and CPU (>= 1.0: tidelog no worse); the run-to-run spread
(min-max) of publish throughput is given per broker.

    .venv/bin/python bench/workloads.py                        # a,b,c x single,cluster, 3 runs each
    .venv/bin/python bench/workloads.py --quick                # a few minutes: short windows, 1 run
    .venv/bin/python bench/workloads.py --workloads a --topology single --brokers tidelog --runs 1

Writes bench/results/workloads-<UTC stamp>.md and .json and prints the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import queue
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from latency_hist import LatencyHistogram  # noqa: E402
from processes_scaling import cpu_seconds  # noqa: E402

STAMP = struct.Struct(">Q")  # the send time (us since the epoch) at the start of every value


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    partitions: int
    size: int  # value bytes (at least 8: the send time)
    keys: str  # "random" (8 random bytes per message) or "none"
    rate: int  # messages/s over all producers of all topics; 0 = as fast as they go
    topics: int = 1
    description: str = ""


WORKLOADS = {
    "a": Workload("a", 100, 1024, "none", 0, description="1 topic x 100 partitions, 1 KiB, max rate"),
    "b": Workload("b", 100, 1024, "none", 50_000, description="1 topic x 100 partitions, 1 KiB, 50k msg/s"),
    "c": Workload("c", 500, 200, "random", 0, description="1 topic x 500 partitions, 200 B, random keys, max rate"),
}


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def rusage_cpu_s() -> float:
    import resource

    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


# ---- a producer process (`workloads.py produce SPEC`) -------------------------------------------
def produce_main(spec: dict) -> None:
    """Waits for `go T0 T1 T2` on stdin (wall-clock seconds: start, window start, window end),
    produces until T2 (at spec["rate"] msgs/s when set), flushes, prints its figures as JSON."""
    from confluent_kafka import KafkaError, Producer

    hist = LatencyHistogram()
    window = [float("inf"), float("inf")]
    st = {"acked_window": 0, "acked_total": 0, "errors": 0, "purged": 0}
    per_second = [0] * 3600  # acknowledgements in each second from the start (bounded)
    start = [float("inf")]
    clock = time.time
    purged = KafkaError._PURGE_QUEUE

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            st["purged" if err.code() == purged else "errors"] += 1
            return
        st["acked_total"] += 1
        now = clock()
        if now >= start[0]:
            per_second[min(3599, int(now - start[0]))] += 1
        if window[0] <= now < window[1]:
            st["acked_window"] += 1
            lat = msg.latency()
            if lat is not None:
                hist.record(int(lat * 1e6))

    p = Producer(
        {
            "bootstrap.servers": spec["bootstrap"],
            "acks": spec["acks"],
            "linger.ms": spec["linger_ms"],
            "batch.size": spec["batch_size"],
            "queue.buffering.max.kbytes": spec["queue_kbytes"],
            "on_delivery": delivered,
            "log_level": 3,
        }
    )
    topic = spec["topic"]
    p.list_topics(topic, timeout=30)  # metadata and connections before the start
    emit({"ready": True})
    go = sys.stdin.readline().split()
    t0, t1, t2 = (float(x) for x in go[1:4])
    start[0], window[0], window[1] = t0, t1, t2
    body = random.randbytes(spec["size"] - STAMP.size)
    pack, now_us, randbytes = STAMP.pack, time.time_ns, random.randbytes
    produce, poll = p.produce, p.poll
    keyed, rate, sent = spec["keys"] == "random", spec["rate"], 0
    while True:
        now = clock()
        if now >= t2:
            break
        if rate:
            n = min(1000, int((now - t0) * rate) - sent)
            if n <= 0:
                poll(0.0005)  # serves delivery reports while waiting for the next send time
                continue
        else:
            n = 1000
        for _ in range(n):
            value = pack(now_us() // 1000) + body
            try:
                if keyed:
                    produce(topic, value, randbytes(8))
                else:
                    produce(topic, value)
            except BufferError:  # librdkafka's queue is full: serve reports, then carry on
                poll(0.001)
                break
            sent += 1
        poll(0)
    # What still waits in librdkafka's queue is dropped, not sent (a run at max rate would otherwise
    # spend many seconds on a backlog nobody measures); requests in flight are waited for.
    p.purge(in_queue=True, in_flight=False)
    unflushed = p.flush(60)
    emit(
        {
            "final": True,
            "sent": sent,
            "unflushed": unflushed,
            "cpu_s": rusage_cpu_s(),
            "hist": hist.to_json(),
            "per_second": per_second[: int(clock() - t0) + 1],
            **st,
        }
    )


# ---- a consumer process (`workloads.py consume SPEC`) -------------------------------------------
def consume_main(spec: dict) -> None:
    """Joins the group, reports its assignment and progress as JSON lines; on `window T0 T1 T2`
    records the end-to-end latency of messages sent inside [T1, T2); on `stop` prints its figures."""
    from confluent_kafka import Consumer

    hist = LatencyHistogram()
    window = [2**63, 2**63]  # us
    start = [2**63]  # us
    per_second = [0] * 3600  # messages received in each second from the start (bounded)
    stop = threading.Event()

    def control() -> None:
        for line in sys.stdin:
            parts = line.split()
            if parts and parts[0] == "window":
                start[0], window[0], window[1] = (int(float(x) * 1e6) for x in parts[1:4])
            elif parts and parts[0] == "stop":
                break
        stop.set()

    threading.Thread(target=control, daemon=True).start()
    c = Consumer(
        {
            "bootstrap.servers": spec["bootstrap"],
            "group.id": spec["group"],
            "auto.offset.reset": "earliest",
            "log_level": 3,
        }
    )
    rebalances = [0]  # assignments once the producers started (the group was stable before)

    def on_assign(_c: Any, parts: list) -> None:
        if window[0] < 2**63:
            rebalances[0] += 1
        emit({"assigned": len(parts)})

    c.subscribe([spec["topic"]], on_assign=on_assign, on_revoke=lambda _c, _parts: emit({"assigned": 0}))
    consumed = window_consumed = 0
    unpack = STAMP.unpack_from
    next_report = time.monotonic()
    record = hist.record
    while not stop.is_set():
        msgs = c.consume(500, 0.1)
        if msgs:
            now = time.time_ns() // 1000
            lo, hi = window
            n = 0
            for m in msgs:
                if m.error() is not None:
                    continue
                n += 1
                ts = unpack(m.value())[0]
                if lo <= ts < hi:
                    record(now - ts if now > ts else 0)
            consumed += n
            if lo <= now < hi:
                window_consumed += n
            if now >= start[0]:
                per_second[min(3599, (now - start[0]) // 1_000_000)] += n
        if time.monotonic() >= next_report:
            emit({"consumed": consumed})
            next_report = time.monotonic() + 0.25
    emit(
        {
            "final": True,
            "consumed": consumed,
            "window_consumed": window_consumed,
            "rebalances": rebalances[0],
            "per_second": per_second[: max(0, (time.time_ns() // 1000 - start[0]) // 1_000_000 + 1)],
            "cpu_s": rusage_cpu_s(),
            "hist": hist.to_json(),
        }
    )
    c.close()


# ---- the driver's side of a child -----------------------------------------------------------------
class Child:
    """A producer or consumer process: JSON lines from its stdout merged into `state`."""

    def __init__(self, mode: str, spec: dict, log: Path) -> None:
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, mode, json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.state: dict[str, Any] = {}
        self.final: dict | None = None
        self.done = queue.Queue[bool]()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            self.state.update(d)
            if d.get("final"):
                self.final = d
        self.done.put(True)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def finish(self, timeout: float) -> dict | None:
        """Its final figures, waiting up to `timeout` s for it to exit (killed after that)."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            self.done.get(timeout=5)
        except queue.Empty:
            pass
        self.log.close()
        return self.final


def wait_for(cond, timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout:.0f} s")
        time.sleep(poll)


# ---- the brokers under test ---------------------------------------------------------------------
def admin_client(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


class System:
    """One topology of one broker: started fresh, its bootstrap servers, the pids whose CPU counts."""

    rf = 1

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    bootstrap = ""

    def start(self) -> None:
        raise NotImplementedError

    def pids(self) -> list[int]:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class SingleTidelog(System):
    def start(self) -> None:
        from brokers import Tidelog

        self.b = Tidelog(self.workdir / "tidelog-data", overrides=["group.initial.rebalance.delay.ms=0"])
        self.b.start(self.workdir)
        self.bootstrap = self.b.bootstrap
        wait_for(lambda: _brokers_listed(self.bootstrap) >= 1, 60, "Metadata from tidelog")

    def pids(self) -> list[int]:
        return [self.b.proc.pid] if self.b.proc else []

    def stop(self) -> None:
        if hasattr(self, "b"):
            self.b.stop()
            self.b.cleanup()


class SingleKafka(System):
    def start(self) -> None:
        from brokers import Kafka

        self.b = Kafka()
        self.b.start(self.workdir)  # until Metadata lists it
        self.bootstrap = self.b.bootstrap

    def pids(self) -> list[int]:
        return [self.b.proc.pid] if self.b.proc else []

    def stop(self) -> None:
        if hasattr(self, "b"):
            self.b.stop()
            self.b.cleanup()


class ClusterTidelog(System):
    rf = 3

    def start(self) -> None:
        sys.path.insert(0, str(ROOT / "tests"))
        from cluster_process import Cluster

        self.c = Cluster(self.workdir / "tidelog-cluster", 3, name="workloads")
        self.c.start()  # until every broker lists all three and a controller
        self.bootstrap = self.c.bootstrap

    def pids(self) -> list[int]:
        procs = [b.proc for b in self.c.brokers.values()] + [self.c.etcd.proc]
        return [p.pid for p in procs if p is not None]

    def stop(self) -> None:
        if hasattr(self, "c"):
            self.c.stop()


class ClusterKafka(System):
    rf = 3

    def start(self) -> None:
        sys.path.insert(0, str(ROOT / "tests"))
        from kafka_process import KafkaCluster

        self.c = KafkaCluster(self.workdir / "kafka-cluster", 3, heap="1g")
        self.c.start()  # until Metadata lists all three
        self.bootstrap = self.c.bootstrap

    def pids(self) -> list[int]:
        return self.c.pids()

    def stop(self) -> None:
        if hasattr(self, "c"):
            self.c.stop()
            self.c.cleanup()


SYSTEMS = {
    ("single", "tidelog"): SingleTidelog,
    ("single", "kafka"): SingleKafka,
    ("cluster", "tidelog"): ClusterTidelog,
    ("cluster", "kafka"): ClusterKafka,
}


def _brokers_listed(bootstrap: str) -> int:
    try:
        return len(admin_client(bootstrap).list_topics(timeout=2).brokers)
    except Exception:  # noqa: BLE001 - not answering yet
        return 0


def create_topic(system: System, partitions: int) -> str:
    """A new topic, once every partition has a leader and (RF > 1) its full ISR."""
    from confluent_kafka.admin import NewTopic

    name = f"wl-{uuid.uuid4().hex[:8]}"
    admin = admin_client(system.bootstrap)
    config = {"min.insync.replicas": "2"} if system.rf >= 3 else {}
    admin.create_topics([NewTopic(name, partitions, system.rf, config=config)])[name].result(120)

    def ready() -> bool:
        try:
            t = admin.list_topics(name, timeout=10).topics.get(name)
        except Exception:  # noqa: BLE001 - a broker busy creating 500 partitions: ask again
            return False
        return (
            t is not None
            and t.error is None
            and len(t.partitions) == partitions
            and all(p.leader >= 0 and len(p.isrs) >= system.rf for p in t.partitions.values())
        )

    wait_for(ready, 180, f"leaders and full ISRs for the {partitions} partitions of {name}", poll=0.3)
    return name


def delete_topic(system: System, name: str) -> None:
    admin = admin_client(system.bootstrap)  # kept while the future is waited on
    try:
        admin.delete_topics([name])[name].result(60)
    except Exception as e:  # noqa: BLE001 - the broker stops after its last workload anyway
        print(f"    (could not delete {name}: {e})", file=sys.stderr)


# ---- one workload on one started system ---------------------------------------------------------
def run_workload(system: System, w: Workload, opts: argparse.Namespace, logdir: Path) -> dict:
    topics = [create_topic(system, w.partitions) for _ in range(w.topics)]
    n_prod = opts.producers * w.topics
    base = {
        "bootstrap": system.bootstrap,
        "acks": opts.acks,
        "linger_ms": opts.linger_ms,
        "batch_size": opts.batch_size,
        "queue_kbytes": opts.queue_kbytes,
        "size": w.size,
        "keys": w.keys,
        "rate": w.rate / n_prod if w.rate else 0,
    }
    consumers: list[Child] = []
    producers: list[Child] = []
    try:
        for t in topics:
            for i in range(opts.consumers):
                spec = {"bootstrap": system.bootstrap, "topic": t, "group": f"{t}-group"}
                consumers.append(Child("consume", spec, logdir / f"{t}-consumer-{i}.log"))

        def assigned() -> bool:
            for c in consumers:
                if not c.alive():
                    raise RuntimeError(f"a consumer exited ({c.proc.returncode}); see {logdir}")
            per_topic = opts.consumers
            for k, _t in enumerate(topics):
                group = consumers[k * per_topic : (k + 1) * per_topic]
                got = [c.state.get("assigned") for c in group]
                if any(g is None for g in got) or sum(got) != w.partitions:
                    return False
                if w.partitions >= per_topic and not all(got):
                    return False
            return True

        wait_for(assigned, 120, "consumer group assignment covering every partition")
        for t in topics:
            for i in range(opts.producers):
                producers.append(Child("produce", {**base, "topic": t}, logdir / f"{t}-producer-{i}.log"))

        def ready() -> bool:
            if any(not p.alive() for p in producers):
                raise RuntimeError(f"a producer exited; see {logdir}")
            return all(p.state.get("ready") for p in producers)

        wait_for(ready, 60, "producers ready")
        t0 = time.time()
        t1, t2 = t0 + opts.warmup, t0 + opts.warmup + opts.duration
        for p in producers:
            p.send(f"go {t0} {t1} {t2}")
        for c in consumers:
            c.send(f"window {t0} {t1} {t2}")
        pids = system.pids()
        time.sleep(max(0.0, t1 - time.time()))  # the window is scheduled, not awaited
        cpu0, load = cpu_seconds(pids), os.getloadavg()[0]
        time.sleep(max(0.0, t2 - time.time()))
        cpu = cpu_seconds(pids) - cpu0
        pfinal = [p.finish(120) for p in producers]
        if any(f is None for f in pfinal):
            raise RuntimeError(f"a producer gave no figures; see {logdir}")
        acked_total = sum(f["acked_total"] for f in pfinal if f)
        drain_deadline = time.monotonic() + opts.drain
        while sum(c.state.get("consumed", 0) for c in consumers) < acked_total:
            if time.monotonic() > drain_deadline or not all(c.alive() for c in consumers):
                break
            time.sleep(0.1)
        for c in consumers:
            c.send("stop")
        cfinal = [c.finish(60) for c in consumers]
    finally:
        for ch in consumers + producers:
            if ch.alive():
                ch.proc.kill()
                ch.finish(10)
    for t in topics:
        delete_topic(system, t)
    pub = LatencyHistogram()
    for f in pfinal:
        if f:
            pub.merge(LatencyHistogram.from_json(f["hist"]))
    e2e = LatencyHistogram()
    for f in cfinal:
        if f:
            e2e.merge(LatencyHistogram.from_json(f["hist"]))
    acked = sum(f["acked_window"] for f in pfinal if f)
    consumed = sum(f["consumed"] for f in cfinal if f)
    acks_per_second, consumed_per_second = _sum_series(pfinal), _sum_series(cfinal)
    return {
        "publish_msgs_s": acked / opts.duration,
        "publish_mb_s": acked * w.size / opts.duration / 1e6,
        "consume_msgs_s": sum(f["window_consumed"] for f in cfinal if f) / opts.duration,
        **latency_fields("pub", pub),
        **latency_fields("e2e", e2e),
        "acked_window": acked,
        "acked_total": acked_total,
        "consumed_total": consumed,
        "backlog_at_stop": max(0, acked_total - consumed),
        # more consumed than acknowledged: messages read twice (after a rebalance: offsets are
        # committed every 5 s) or written but not acknowledged in time
        "consumed_extra": max(0, consumed - acked_total),
        "rebalances": sum(f["rebalances"] for f in cfinal if f),
        "acks_per_second": acks_per_second,
        "consumed_per_second": consumed_per_second,
        "e2e_samples": e2e.count,
        "errors": sum(f["errors"] for f in pfinal if f),
        "purged": sum(f["purged"] for f in pfinal if f),
        "unflushed": sum(f["unflushed"] for f in pfinal if f),
        "broker_cpu_s": cpu,
        "cpu_us_per_record": cpu / acked * 1e6 if acked else None,
        "client_cpu_s": sum(f["cpu_s"] for f in pfinal + cfinal if f),
        # each client process's whole life (warm-up and drain included): on a small machine the
        # clients share the cores with the broker, and these show who had them
        "producer_cpu_s": sum(f["cpu_s"] for f in pfinal if f),
        "consumer_cpu_s": sum(f["cpu_s"] for f in cfinal if f),
        "load_at_window": load,
        "hist_pub": pub.to_json(),
        "hist_e2e": e2e.to_json(),
    }


def _sum_series(finals: list[dict | None]) -> list[int]:
    """The processes' per-second counts (from the start), added second by second."""
    series = [f["per_second"] for f in finals if f]
    return [sum(x[i] for x in series if i < len(x)) for i in range(max(map(len, series), default=0))]


def latency_fields(prefix: str, h: LatencyHistogram) -> dict:
    def ms(us: int | None) -> float | None:
        return None if us is None else round(us / 1000, 3)

    return {
        f"{prefix}_p50_ms": ms(h.percentile(50)),
        f"{prefix}_p99_ms": ms(h.percentile(99)),
        f"{prefix}_p999_ms": ms(h.percentile(99.9)),
        f"{prefix}_max_ms": ms(h.max if h.count else None),
    }


# ---- the report ---------------------------------------------------------------------------------
METRICS = [
    "publish_msgs_s",
    "publish_mb_s",
    "consume_msgs_s",
    "pub_p50_ms",
    "pub_p99_ms",
    "pub_p999_ms",
    "e2e_p50_ms",
    "e2e_p99_ms",
    "e2e_p999_ms",
    "cpu_us_per_record",
    "backlog_at_stop",
]


def summarize(runs: dict[str, list[dict]], names: list[str]) -> dict:
    """Medians per broker, the publish rate's min-max, and ratios: tidelog / kafka for throughput,
    kafka / tidelog for latency and CPU (>= 1.0: tidelog no worse)."""
    out: dict[str, Any] = {}
    for name in names:
        ok = [r for r in runs.get(name, []) if "error" not in r]
        med: dict[str, Any] = {}
        for k in METRICS:
            vals = [r[k] for r in ok if r.get(k) is not None]
            med[k] = statistics.median(vals) if vals else None
        rates = [r["publish_msgs_s"] for r in ok]
        med["publish_min"] = min(rates) if rates else None
        med["publish_max"] = max(rates) if rates else None
        med["spread"] = (max(rates) - min(rates)) / med["publish_msgs_s"] if len(rates) > 1 and rates[0] else None
        med["runs_ok"] = len(ok)
        med["runs_failed"] = len(runs.get(name, [])) - len(ok)
        out[name] = med
    if "tidelog" in out and "kafka" in out:
        t, k = out["tidelog"], out["kafka"]
        ratios: dict[str, float | None] = {}
        for key in ("publish_msgs_s", "publish_mb_s", "consume_msgs_s"):
            ratios[key] = _ratio(t[key], k[key])
        for key in METRICS[3:10]:
            ratios[key] = _ratio(k[key], t[key])
        out["ratio"] = ratios
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def _rate(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.1f}k"


def _num(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _bold(v: float | None) -> str:
    return "-" if v is None else f"**{v:.2f}**"


def table(results: list[dict], meta: dict) -> str:
    lines = [
        f"Workloads, {meta['date']}, `{meta['command']}`: {meta['runs']} run(s) per broker alternating "
        f"(medians), warm-up {meta['warmup']:g} s, window {meta['duration']:g} s, {meta['producers']} producer "
        f"and {meta['consumers']} consumer processes per topic (acks={meta['acks']}, linger.ms={meta['linger_ms']:g}, "
        f"batch.size={meta['batch_size']}); host {meta['host']} ({meta['cpus']} CPUs, load average at start "
        f"{meta['load']}).",
        "",
        "Ratios: tidelog / kafka for throughput, kafka / tidelog for latency and CPU per record "
        "(>= 1.0: tidelog no worse). Spread: the publish rate's min-max over the runs, and (max - min) / median.",
        "",
        "| topology | workload | target msg/s | tidelog msg/s | kafka msg/s | ratio | tidelog MB/s | kafka MB/s "
        "| consume msg/s tidelog / kafka | broker CPU us/record tidelog / kafka | CPU ratio | spread tidelog "
        "| spread kafka |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def spread(m: dict) -> str:
        if m.get("publish_min") is None:
            return "-"
        s = f"{_rate(m['publish_min'])}-{_rate(m['publish_max'])}"
        return s + (f" ({m['spread']:.0%})" if m.get("spread") is not None else "")

    empty: dict[str, Any] = {}
    for r in results:
        s = r["summary"]
        t, k, ratio = s.get("tidelog", empty), s.get("kafka", empty), s.get("ratio", empty)
        w = r["workload"]
        lines.append(
            f"| {r['topology']} | {w['name']}: {w['description']} | {_rate(w['rate']) if w['rate'] else 'max'} "
            f"| {_rate(t.get('publish_msgs_s'))} | {_rate(k.get('publish_msgs_s'))} "
            f"| {_bold(ratio.get('publish_msgs_s'))} "
            f"| {_num(t.get('publish_mb_s'))} | {_num(k.get('publish_mb_s'))} "
            f"| {_rate(t.get('consume_msgs_s'))} / {_rate(k.get('consume_msgs_s'))} "
            f"| {_num(t.get('cpu_us_per_record'))} / {_num(k.get('cpu_us_per_record'))} "
            f"| {_bold(ratio.get('cpu_us_per_record'))} | {spread(t)} | {spread(k)} |"
        )
    lines += [
        "",
        "Latency in ms, tidelog / kafka (ratio kafka / tidelog). Publish: produce() call to acknowledgement; "
        "end-to-end: the producer's send time to the consumer's receipt.",
        "",
        "| topology | workload | publish p50 | publish p99 | publish p99.9 | e2e p50 | e2e p99 | e2e p99.9 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s = r["summary"]
        t, k, ratio = s.get("tidelog", empty), s.get("kafka", empty), s.get("ratio", empty)
        cells = []
        for key in ("pub_p50_ms", "pub_p99_ms", "pub_p999_ms", "e2e_p50_ms", "e2e_p99_ms", "e2e_p999_ms"):
            cells.append(f"{_num(t.get(key), 2)} / {_num(k.get(key), 2)} ({_bold(ratio.get(key))})")
        lines.append(f"| {r['topology']} | {r['workload']['name']} | " + " | ".join(cells) + " |")
    failures = [
        f"{r['topology']} {r['workload']['name']} {name}: {x['error']}"
        for r in results
        for name, rs in r["runs"].items()
        for x in rs
        if "error" in x
    ]
    if failures:
        lines += ["", "Failed runs: " + "; ".join(failures)]
    return "\n".join(lines) + "\n"


# ---- main ---------------------------------------------------------------------------------------
def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] in ("produce", "consume"):
        (produce_main if sys.argv[1] == "produce" else consume_main)(json.loads(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="a,b,c", help=f"comma-separated, of {','.join(WORKLOADS)}")
    ap.add_argument("--brokers", default="tidelog,kafka", help="comma-separated: tidelog, kafka")
    ap.add_argument("--topology", default="single,cluster", help="comma-separated: single, cluster")
    ap.add_argument("--runs", type=int, default=None, help="runs per broker, alternating (default 3, quick 1)")
    ap.add_argument("--duration", type=float, default=None, help="measured window, s (default 20, quick 5)")
    ap.add_argument("--warmup", type=float, default=None, help="warm-up before the window, s (default 15, quick 8)")
    ap.add_argument("--drain", type=float, default=None, help="most s the consumers may trail (default 30, quick 10)")
    ap.add_argument("--producers", type=int, default=None, help="producer processes per topic (default 4, quick 2)")
    ap.add_argument("--consumers", type=int, default=None, help="consumer processes per topic (default 4, quick 2)")
    ap.add_argument("--acks", default="all")
    ap.add_argument("--linger-ms", type=float, default=1.0)
    ap.add_argument("--batch-size", type=int, default=1_048_576)
    ap.add_argument("--queue-kbytes", type=int, default=32_768, help="librdkafka's queue.buffering.max.kbytes")
    ap.add_argument("--quick", action="store_true", help="1 run, 8 s warm-up, 5 s window, 2+2 processes")
    ap.add_argument("--out", default=str(BENCH / "results"))
    opts = ap.parse_args()
    q = opts.quick
    for key, full, quick in (
        ("runs", 3, 1),
        ("duration", 20.0, 5.0),
        ("warmup", 15.0, 8.0),
        ("drain", 30.0, 10.0),
        ("producers", 4, 2),
        ("consumers", 4, 2),
    ):
        if getattr(opts, key) is None:
            setattr(opts, key, quick if q else full)
    workloads = [WORKLOADS[x.strip()] for x in opts.workloads.split(",") if x.strip()]
    names = [x.strip() for x in opts.brokers.split(",") if x.strip()]
    topologies = [x.strip() for x in opts.topology.split(",") if x.strip()]
    if any(n not in ("tidelog", "kafka") for n in names) or any(t not in ("single", "cluster") for t in topologies):
        ap.error("--brokers of tidelog,kafka; --topology of single,cluster")
    # brokers (and their tests/ helpers) run this checkout's tidelog
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    sys.path.insert(0, str(ROOT / "src"))
    meta = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python bench/workloads.py " + " ".join(sys.argv[1:]),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        **{k: getattr(opts, k) for k in ("runs", "duration", "warmup", "drain", "producers", "consumers")},
        **{k: getattr(opts, k) for k in ("acks", "linger_ms", "batch_size", "queue_kbytes")},
    }
    results = []
    with tempfile.TemporaryDirectory(prefix="tidelog-workloads-") as tmp:
        for topology in topologies:
            runs: dict[str, dict[str, list[dict]]] = {w.name: {n: [] for n in names} for w in workloads}
            for i in range(opts.runs):
                for name in names:
                    run_system(topology, name, i, workloads, opts, Path(tmp), runs)
            for w in workloads:
                results.append(
                    {
                        "topology": topology,
                        "workload": dataclasses.asdict(w),
                        "runs": runs[w.name],
                        "summary": summarize(runs[w.name], names),
                    }
                )
    md = table(results, meta)
    out = Path(opts.out) / f"workloads-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%SZ')}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(md)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(md)
    print(f"({out}.md, .json)", file=sys.stderr)


def run_system(
    topology: str,
    name: str,
    i: int,
    workloads: list[Workload],
    opts: argparse.Namespace,
    tmp: Path,
    runs: dict[str, dict[str, list[dict]]],
) -> None:
    """Run i of one broker: start it fresh, every workload in turn, stop it."""
    workdir = tmp / f"{topology}-{name}-{i}"
    workdir.mkdir()
    system = SYSTEMS[(topology, name)](workdir)
    t = time.monotonic()
    try:
        system.start()
    except Exception as e:  # noqa: BLE001 - recorded as a failed run of every workload, the bench goes on
        print(f"  [{topology}] run {i + 1} {name}: did not start: {e}", file=sys.stderr, flush=True)
        for w in workloads:
            runs[w.name][name].append({"error": f"start: {str(e)[:300]}"})
        system.stop()
        return
    print(f"  [{topology}] run {i + 1} {name}: started in {time.monotonic() - t:.0f} s", file=sys.stderr, flush=True)
    try:
        for w in workloads:
            logdir = workdir / f"logs-{w.name}"
            logdir.mkdir()
            try:
                r = run_workload(system, w, opts, logdir)
            except Exception as e:  # noqa: BLE001 - recorded as a failed run, the bench goes on
                r = {"error": str(e)[:300]}
            runs[w.name][name].append(r)
            print(f"  [{topology}] run {i + 1} {name} {w.name}: {progress(r)}", file=sys.stderr, flush=True)
    finally:
        system.stop()


def progress(r: dict) -> str:
    if "error" in r:
        return f"FAILED: {r['error']}"
    return (
        f"{_rate(r['publish_msgs_s'])} msg/s ({r['publish_mb_s']:.1f} MB/s), publish p50/p99/p99.9 "
        f"{r['pub_p50_ms']}/{r['pub_p99_ms']}/{r['pub_p999_ms']} ms, e2e {r['e2e_p50_ms']}/{r['e2e_p99_ms']}/"
        f"{r['e2e_p999_ms']} ms ({r['e2e_samples']} samples), consume {_rate(r['consume_msgs_s'])} msg/s, broker CPU "
        f"{_num(r['cpu_us_per_record'])} us/record, backlog {r['backlog_at_stop']}, read twice "
        f"{r['consumed_extra']}, rebalances {r['rebalances']}, errors {r['errors']}, purged {r['purged']}, "
        f"load {r['load_at_window']:.1f}, client CPU s producers/consumers {r.get('producer_cpu_s', 0):.1f}/"
        f"{r.get('consumer_cpu_s', 0):.1f}; acks/s {r['acks_per_second']}; consumed/s {r['consumed_per_second']}"
    )


if __name__ == "__main__":
    main()
