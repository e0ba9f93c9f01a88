"""acks=all throughput on a three-broker cluster: replication factor 3 (min ISR 2) vs 1.

One etcd and three tidelog brokers on loopback (tests/cluster_process.py); the shared benchmark
(`../shared/bench/produce_consume.py`, confluent-kafka, linger.ms=5, acks=all) runs against a
fresh topic of each kind, alternating RF1 RF3 RF1 RF3 ..., and the medians and their ratio are
printed (and written to bench/results/cluster-<stamp>.json). A figure, never an assertion; every
process shares the same CPUs, so RF 3 pays for the followers' work on the same machine too.

    .venv/bin/python bench/cluster_replication.py [--runs 3] [--messages 200000] [--size 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cluster_process import Cluster  # noqa: E402

SHARED = Path(os.environ.get("SHARED_BENCH", ROOT.parent / "shared" / "bench" / "produce_consume.py"))


def make_topic(c: Cluster, rf: int, partitions: int) -> str:
    name = f"rf{rf}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    cfg = {"min.insync.replicas": "2"} if rf >= 2 else {}
    admin.create_topics([NewTopic(name, partitions, rf, config=cfg)])[name].result(20)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=5).topics[name]
        if all(len(p.isrs) == rf and p.leader > 0 for p in md.partitions.values()):
            return name
        time.sleep(0.2)
    raise RuntimeError(f"{name} never fully in sync")


def run_once(c: Cluster, topic: str, args: argparse.Namespace) -> dict:
    cmd = [
        sys.executable,
        str(SHARED),
        "--bootstrap",
        c.bootstrap,
        "--topic",
        topic,
        "--messages",
        str(args.messages),
        "--size",
        str(args.size),
        "--acks",
        "all",
        "--compression",
        args.compression,
        "--timeout",
        "600",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--compression", default="none")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tidelog-bench-cluster-"))
    c = Cluster(base, 3, name="bench").start()
    results: dict[int, list[dict]] = {1: [], 3: []}
    try:
        for _ in range(args.runs):
            for rf in (1, 3):
                r = run_once(c, make_topic(c, rf, args.partitions), args)
                results[rf].append(r)
                print(
                    f"RF {rf}: produce {r.get('produce_msgs_per_s', 0):,.0f}/s consume "
                    f"{r.get('consume_msgs_per_s', 0):,.0f}/s",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        c.stop()
    med = {
        rf: {k: statistics.median(x.get(k, 0) for x in rs) for k in ("produce_msgs_per_s", "consume_msgs_per_s")}
        for rf, rs in results.items()
    }
    load = os.getloadavg()[0]
    summary = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_at_end": load,
        "args": vars(args),
        "median": med,
        "rf3_over_rf1": {k: med[3][k] / med[1][k] if med[1][k] else None for k in med[1]},
        "runs": results,
    }
    out = ROOT / "bench" / "results" / f"cluster-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(summary, indent=1))
    print(
        f"{args.messages} x {args.size} B acks=all, {args.partitions} partition(s), {args.runs} runs each, "
        f"alternating; load {load:.1f}"
    )
    for rf in (1, 3):
        print(
            f"  RF {rf}: produce {med[rf]['produce_msgs_per_s']:,.0f}/s, consume {med[rf]['consume_msgs_per_s']:,.0f}/s"
        )
    r = summary["rf3_over_rf1"]
    print(f"  RF3/RF1: produce {r['produce_msgs_per_s']:.2f}, consume {r['consume_msgs_per_s']:.2f}  ({out.name})")


if __name__ == "__main__":
    main()
