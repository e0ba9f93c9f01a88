"""Where a produce run's time goes, from librdkafka's own statistics: tidelog vs tansu 0.6.0,
alternating, the same producer settings as `../shared/bench/produce_consume.py` (linger.ms=5,
acks=all, one partition, the same JSON-lines values).

    .venv/bin/python bench/producer_stats.py [--messages 1000000] [--size 100] [--compression lz4]
                                             [--rate 0] [--rounds 6] [--brokers tidelog,tansu]

Per run it prints the produce rate, how long the producer was blocked on a full queue
(`BufferError`: acks were not coming back fast enough; 0 means the client, not the broker, set
the pace), the ack latency p50/p99 (`Message.latency()`, produce() to delivery report), and from
`statistics.interval.ms` (medians over the run's snapshots): request round trip p50 / p99
(`rtt`), librdkafka's internal queue latency p99 (`int_latency`), the p99 of requests waiting to
be written to the socket (`outbuf_latency`), messages per batch, and the broker's CPU seconds.
`--rate` > 0 paces the producer (msgs/s) for `--messages` messages, as compare_tansu's paced phase.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import SHARED, Tansu, Tidelog

sys.path.insert(0, str(SHARED))
from produce_consume import jsonish, pct


def one_run(bootstrap: str, pool: list[bytes], n: int, compression: str, rate: float) -> dict:
    topic = "stats-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    snaps: list[dict] = []
    lat: list[float] = []
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "acks": "all",
            "compression.type": compression,
            "statistics.interval.ms": 200,
            "stats_cb": lambda s: snaps.append(json.loads(s)),
            "on_delivery": lambda err, msg: lat.append(msg.latency()) if err is None else None,
        }
    )
    p.list_topics(topic, timeout=10)
    npool, blocked, i = len(pool), 0.0, 0
    t0 = time.perf_counter()
    while i < n:
        if rate > 0:
            now = time.perf_counter()
            due = t0 + i / rate
            if due > now:
                p.poll(min(due - now, 0.01))
                continue
        try:
            p.produce(topic, pool[i % npool])
            i += 1
        except BufferError:
            b0 = time.perf_counter()
            p.poll(0.005)
            blocked += time.perf_counter() - b0
            continue
        if (i & 1023) == 0:
            p.poll(0)
    p.flush(60)
    elapsed = time.perf_counter() - t0
    cols: dict[str, list[float]] = {"rtt50": [], "rtt99": [], "int99": [], "outbuf99": [], "batch": []}
    for s in snaps:
        for b in s["brokers"].values():
            if b["nodeid"] >= 0 and b["rtt"]["cnt"]:
                cols["rtt50"].append(b["rtt"]["p50"] / 1000)
                cols["rtt99"].append(b["rtt"]["p99"] / 1000)
                cols["int99"].append(b["int_latency"]["p99"] / 1000)
                cols["outbuf99"].append(b["outbuf_latency"]["p99"] / 1000)
        for t in s["topics"].values():
            if t["batchcnt"]["cnt"]:
                cols["batch"].append(t["batchcnt"]["avg"])
    lat.sort()
    out = {
        "rate": n / elapsed,
        "blocked_s": blocked,
        "ack_p50_ms": pct(lat, 50) * 1e3,
        "ack_p99_ms": pct(lat, 99) * 1e3,
    }
    out.update({k: statistics.median(v) if v else float("nan") for k, v in cols.items()})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--compression", default="lz4")
    ap.add_argument("--rate", type=float, default=0)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--brokers", default="tidelog,tansu")
    args = ap.parse_args()
    stream = jsonish(max(4 << 20, args.size * 64))
    pool = [stream[i * args.size : (i + 1) * args.size] for i in range(len(stream) // args.size)]
    work = Path(tempfile.mkdtemp(prefix="producer-stats-"))
    started = [{"tidelog": Tidelog, "tansu": Tansu}[name]().start(work) for name in args.brokers.split(",")]
    rows: dict[str, list[dict]] = {b.name: [] for b in started}
    print(
        f"{args.messages} x {args.size} B {args.compression}, rate {args.rate or 'unpaced'}, "
        f"{args.rounds} rounds alternating"
    )
    head = "broker   msgs/s  blocked_s  ack p50/p99 ms  rtt p50/p99 ms  int_latency p99  outbuf p99  msgs/batch  cpu_s"
    print(head)
    try:
        time.sleep(1)
        for _ in range(args.rounds):
            for b in started:
                c0 = b.cpu_s()
                r = one_run(b.bootstrap, pool, args.messages, args.compression, args.rate)
                r["cpu_s"] = b.cpu_s() - c0
                rows[b.name].append(r)
                print(
                    f"{b.name:8} {r['rate']:7.0f}  {r['blocked_s']:9.2f}  "
                    f"{r['ack_p50_ms']:6.2f} / {r['ack_p99_ms']:6.2f}"
                    f"  {r['rtt50']:5.2f} / {r['rtt99']:6.2f}  {r['int99']:15.2f}  {r['outbuf99']:10.2f}"
                    f"  {r['batch']:10.0f}  {r['cpu_s']:5.2f}",
                    flush=True,
                )
    finally:
        for b in started:
            b.stop()
            b.cleanup()
    print("medians:")
    for name, rs in rows.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(
            f"{name:8} {med['rate']:7.0f}  {med['blocked_s']:9.2f}  {med['ack_p50_ms']:6.2f} / {med['ack_p99_ms']:6.2f}"
            f"  {med['rtt50']:5.2f} / {med['rtt99']:6.2f}  {med['int99']:15.2f}  {med['outbuf99']:10.2f}"
            f"  {med['batch']:10.0f}  {med['cpu_s']:5.2f}"
        )


if __name__ == "__main__":
    main()
