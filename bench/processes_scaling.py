"""How `tidelog serve --processes N` scales with N (issue 30): records/s and per-process efficiency.

For each N in --processes (default 1, 2, 4, ... up to the core count, and the core count), a fresh
`tidelog serve --processes N` on loopback (N = 1: today's single broker, no etcd), a topic of
--partitions partitions (default 500, replication factor 1), then --producers producer processes
(confluent-kafka, acks=1, linger.ms=1, --size-byte values, random 8-byte keys) producing as fast as
they can for --warmup + --duration seconds. Only records acknowledged inside the --duration window
count. It prints, per N: records/s; the efficiency throughput(N) / (N x throughput(1)) (against the
smallest N when 1 is not measured); and the brokers' CPU seconds per record (user + system of
every broker process, from /proc, over the same window). Producers share the cores with the
brokers: on a machine with C cores, N + producers > C measures contention too. A figure, never an
assertion.

Needs Linux, the repository (run from its root, or anywhere: it finds src/ itself), a python with
tidelog's dependencies and confluent-kafka, and an etcd binary for N > 1:

    PYTHONPATH=src .venv/bin/python bench/processes_scaling.py [--processes 1,2,4,8,16] \\
        [--producers 8] [--duration 20] [--etcd /usr/bin/etcd] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def default_counts() -> list[int]:
    cores = os.cpu_count() or 1
    counts, n = [1], 2
    while n < cores:
        counts.append(n)
        n *= 2
    return sorted(set(counts + [cores]))


def free_base(n: int) -> int:
    """A port with the n ports from it free on loopback."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        try:
            for p in range(base, base + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise RuntimeError("no free port range")


# ---- one producer process (this script with `produce`) ------------------------------------
def produce(args: argparse.Namespace) -> None:
    import resource

    from confluent_kafka import KafkaException, Producer

    stats: dict[str, Any] = {}
    p = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "acks": "1",
            "linger.ms": args.linger_ms,
            # librdkafka's default queue (100k records): a deeper one only delays the acks
            "queue.buffering.max.messages": 100_000,
            "statistics.interval.ms": 1000,
            "stats_cb": lambda text: stats.update(last=text),
        }
    )
    value = random.randbytes(args.size)
    start = time.monotonic()
    window = (start + args.warmup, start + args.warmup + args.duration)
    counts = {"acked": 0, "errors": 0}

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            counts["errors"] += 1
        elif window[0] <= time.monotonic() < window[1]:
            counts["acked"] += 1

    randbytes, topic, n = random.randbytes, args.topic, 0
    while time.monotonic() < window[1]:
        try:
            p.produce(topic, value, key=randbytes(8), on_delivery=delivered)
        except BufferError:
            p.poll(0.005)
            continue
        except KafkaException:
            counts["errors"] += 1
        n += 1
        if n % 200 == 0:
            p.poll(0)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    counts["cpu_s"] = usage.ru_utime + usage.ru_stime  # every thread of this producer, warm-up included
    if "last" in stats:
        counts.update(librdkafka_summary(json.loads(stats["last"]), topic))
    p.flush(30)
    print(json.dumps(counts), flush=True)


def librdkafka_summary(st: dict, topic: str) -> dict:
    """From a producer's last librdkafka statistics: its mean records per batch, the brokers'
    median round trip (ms, the worst broker's) and the most requests awaiting a response on one
    connection; a high round trip with many requests in flight means the requests queue in
    socket buffers instead of pushing back on the producer (which would make its batches grow)."""
    brokers = [b for b in st.get("brokers", {}).values() if b.get("nodeid", -1) >= 0]
    t = st.get("topics", {}).get(topic, {})
    return {
        "batch_records": t.get("batchcnt", {}).get("avg", 0),
        "rtt_p50_ms": max((b["rtt"]["p50"] / 1000 for b in brokers), default=0.0),
        "in_flight_max": max((b.get("waitresp_cnt", 0) for b in brokers), default=0),
    }


# ---- one N -----------------------------------------------------------------------------------
class Serve:
    def __init__(self, n: int, args: argparse.Namespace) -> None:
        self.n, self.args = n, args
        self.dir = Path(tempfile.mkdtemp(prefix=f"tidelog-scaling-{n}-", dir=args.dir))
        self.port = free_base(n)
        self.proc: subprocess.Popen[bytes] | None = None
        self.admin: Any = None

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.port + i}" for i in range(self.n))

    def start(self) -> None:
        argv = [self.args.python, "-m", "tidelog", "serve", "--processes", str(self.n)]
        for kv in (
            f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
            f"log.dirs={self.dir / 'data'}",
            "log.level=WARNING",
            *([f"process.etcd.path={self.args.etcd}"] if self.args.etcd else []),
            *self.args.override,
        ):
            argv += ["--override", kv]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
        with open(self.dir / "serve.log", "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        self._until(self._ready, 120, f"{self.n} brokers and a controller")

    def _until(self, cond, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            assert self.proc is not None
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.dir / "serve.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"N={self.n}: no {what} (serve status {self.proc.poll()})\n{tail}")
            time.sleep(0.2)

    def _ready(self) -> bool:
        from confluent_kafka.admin import AdminClient

        if self.admin is None:  # one client for the whole wait, its refused connections not logged
            self.admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        try:
            md = self.admin.list_topics(timeout=2)
        except Exception:  # noqa: BLE001 - not listening yet
            return False
        return len(md.brokers) == self.n and md.controller_id >= 0

    def create_topic(self, partitions: int) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        name = f"scaling-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(120)

        def led() -> bool:
            t = admin.list_topics(name, timeout=10).topics.get(name)
            return (
                t is not None and len(t.partitions) == partitions and all(p.leader >= 0 for p in t.partitions.values())
            )

        self._until(led, 120, f"leaders for the {partitions} partitions of {name}")
        return name

    def broker_pids(self) -> list[int]:
        assert self.proc is not None
        if self.n == 1:
            return [self.proc.pid]  # the command is the broker
        run = self.dir / "data" / "run"
        return [int((run / f"node-{i}.pid").read_text()) for i in range(1, self.n + 1)]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of the processes (all their threads), from /proc/<pid>/stat."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / tick


def measure(n: int, args: argparse.Namespace) -> dict:
    serve = Serve(n, args)
    try:
        serve.start()
        topic = serve.create_topic(args.partitions)
        cmd = [args.python, __file__, "produce", "--bootstrap", serve.bootstrap, "--topic", topic]
        cmd += ["--size", str(args.size), "--warmup", str(args.warmup), "--duration", str(args.duration)]
        cmd += ["--linger-ms", str(args.linger_ms)]
        producers = [subprocess.Popen(cmd, stdout=subprocess.PIPE) for _ in range(args.producers)]
        time.sleep(args.warmup)  # the producers' own warm-up: the window starts with theirs
        pids = serve.broker_pids()
        cpu0 = cpu_seconds(pids)
        time.sleep(args.duration)
        cpu = cpu_seconds(pids) - cpu0
        results = [json.loads(p.communicate(timeout=120)[0].decode().strip().splitlines()[-1]) for p in producers]
        batches, records = batch_sizes(serve.dir / "data", topic)
    finally:
        serve.stop()
    acked = sum(r["acked"] for r in results)
    k = len(results)
    return {
        "producer_cpu_s": sum(r.get("cpu_s", 0.0) for r in results),
        "producer_batch_records": sum(r.get("batch_records", 0) for r in results) / k,
        "rtt_p50_ms": max(r.get("rtt_p50_ms", 0.0) for r in results),
        "in_flight_max": max(r.get("in_flight_max", 0) for r in results),
        "processes": n,
        "records_per_s": acked / args.duration,
        "errors": sum(r["errors"] for r in results),
        "broker_cpu_s": cpu,
        "cpu_us_per_record": cpu / acked * 1e6 if acked else None,
        "records_per_batch": records / batches if batches else None,
    }


def batch_sizes(data: Path, topic: str) -> tuple[int, int]:
    """(batches, records) in the topic's segments: the producers' batching, which sets the
    brokers' cost per record (each batch is a write and an index check)."""
    sys.path.insert(0, str(SRC))
    from tidelog.log import records as rb

    batches = records = 0
    for seg in data.glob(f"**/{topic}-*/*.log"):
        for _pos, h in rb.iter_batches(seg.read_bytes()):
            batches += 1
            records += h.last_offset_delta + 1
    return batches, records


def table(rows: list[dict], args: argparse.Namespace) -> str:
    base = min(rows, key=lambda r: r["processes"])
    per_process = base["records_per_s"] / base["processes"]
    lines = [
        f"tidelog serve --processes N: {args.partitions} partitions RF 1, {args.producers} producers "
        f"(acks=1, linger.ms={args.linger_ms:g}, {args.size}-byte values), {args.duration:g} s each, "
        f"{os.cpu_count()} cores",
        "",
        "| N | records/s | efficiency | broker CPU s | CPU us/record | records/batch | rtt p50 ms | in flight "
        "| errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        eff = r["records_per_s"] / (r["processes"] * per_process) if per_process else 0.0
        us = f"{r['cpu_us_per_record']:.1f}" if r["cpu_us_per_record"] is not None else "-"
        rate, cpu = f"{r['records_per_s']:,.0f}", f"{r['broker_cpu_s']:.1f}"
        per_batch = f"{r['records_per_batch']:.1f}" if r.get("records_per_batch") else "-"
        rtt, inflight = f"{r['rtt_p50_ms']:.0f}", r["in_flight_max"]
        cells = [r["processes"], rate, f"{eff:.2f}", cpu, us, per_batch, rtt, inflight, r["errors"]]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode")
    pp = sub.add_parser("produce", help="(internal) one producer process")
    pp.add_argument("--bootstrap", required=True)
    pp.add_argument("--topic", required=True)
    for a in (ap, pp):
        a.add_argument("--size", type=int, default=200, help="value bytes")
        a.add_argument("--warmup", type=float, default=3.0, help="seconds before the window")
        a.add_argument("--duration", type=float, default=20.0, help="seconds of the measured window")
        a.add_argument("--linger-ms", type=float, default=1.0, help="the producers' linger.ms")
    ap.add_argument("--processes", default=",".join(map(str, default_counts())), help="the Ns, comma separated")
    ap.add_argument("--producers", type=int, default=max(2, (os.cpu_count() or 2) // 2))
    ap.add_argument("--partitions", type=int, default=500)
    ap.add_argument("--etcd", help="the etcd binary (default: etcd on PATH, else /usr/bin/etcd)")
    ap.add_argument("--python", default=sys.executable, help="the python that runs tidelog and the producers")
    ap.add_argument("--dir", help="where the data directories go (default: the system's temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep each N's data directory and serve.log")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="a broker setting")
    args = ap.parse_args()
    if args.mode == "produce":
        produce(args)
        return
    counts = [int(n) for n in args.processes.split(",") if n.strip()]
    if any(n > 1 for n in counts) and not (args.etcd or shutil.which("etcd") or os.path.exists("/usr/bin/etcd")):
        raise SystemExit("no etcd: pass --etcd PATH (N > 1 runs its own etcd)")
    rows = []
    for n in counts:
        rows.append(measure(n, args))
        print(f"N={n}: {rows[-1]['records_per_s']:,.0f} records/s", file=sys.stderr, flush=True)
    print(table(rows, args))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
