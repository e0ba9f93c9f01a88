"""tidelog vs Apache Kafka 4.3.1 vs tansu 0.6.0, side by side, with the shared `produce_consume.py`.

    .venv/bin/python bench/compare.py                  # 4 cases x 5 runs each, alternating, + paced latency
    .venv/bin/python bench/compare.py --quick          # 1/5 of the messages, 2 runs each
    .venv/bin/python bench/compare.py --brokers tidelog,tansu   # without Kafka (no Java needed)
    make bench                                         # the full run

For each case (1M x 100 B and 200k x 1 KiB, compression none and lz4) every broker is started
fresh (tidelog with a new data directory and default flush settings, so every batch is written to
its segment file; Apache Kafka as a KRaft single node with its default durability, also writing
every batch to its segment files without fsync; tansu with its memory storage), then
`produce_consume.py` runs against tidelog, kafka, tansu, tidelog, ... (`--runs` each), each run on
a fresh topic. Ratios are medians of tidelog over medians of the other broker.

Paced latency: after the unpaced runs of a case, every broker is driven at the same paced rate,
50% of the lowest median produce rate (so none is saturated), `--paced-runs` times each,
alternating, produce only; the table gives the median of the runs' ack p99, and the ratio
other/tidelog (>= 1.0: tidelog no worse).

CPU and RSS: each broker's CPU seconds per run (user + system, all threads) and its resident size
after start (idle) and peak (VmHWM) over the case.

Writes `bench/results/compare-<UTC stamp>.md` and `.json`, copies them to `latest.md/json`,
and draws `latest.png` (matplotlib) when available. Prints the markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import BENCH, PRODUCE_CONSUME, Kafka, Tansu, Tidelog

BROKERS = {"tidelog": Tidelog, "kafka": Kafka, "tansu": Tansu}

CASES = [(1_000_000, 100, "none"), (1_000_000, 100, "lz4"), (200_000, 1024, "none"), (200_000, 1024, "lz4")]


def run_pc(
    bootstrap: str,
    messages: int,
    size: int,
    compression: str,
    *,
    rate: float = 0,
    consume: bool = True,
    label: str = "",
) -> dict:
    cmd = [
        sys.executable,
        str(PRODUCE_CONSUME),
        "--bootstrap",
        bootstrap,
        "--messages",
        str(messages),
        "--size",
        str(size),
        "--compression",
        compression,
        "--timeout",
        "180",
        "--label",
        label,
    ]
    if rate:
        cmd += ["--rate", str(int(rate))]
    if not consume:
        cmd.append("--no-consume")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"produce_consume failed against {bootstrap}: {p.stderr[-2000:]}")
    return json.loads(lines[-1])


def med(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def ratio(a, b):
    return round(a / b, 2) if a and b else None


def fmt_rate(v) -> str:
    if v is None:
        return "-"
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k"


def run_case(
    messages: int, size: int, compression: str, runs: int, paced_runs: int, workdir: Path, names: list[str]
) -> dict:
    brokers = {name: BROKERS[name]() for name in names}
    for b in brokers.values():
        b.start(workdir)
    time.sleep(2.0)  # let every broker finish its start-up work before the idle RSS reading
    rss_idle = {name: b.rss_kb() for name, b in brokers.items()}
    rows: dict[str, list[dict]] = {name: [] for name in names}
    paced: dict[str, list[dict]] = {name: [] for name in names}
    case = f"{messages // 1000}k x {size} B, {compression}"
    rate = 0.0
    try:
        for i in range(runs):
            for name, b in brokers.items():
                cpu0 = b.cpu_s()
                r = run_pc(b.bootstrap, messages, size, compression, label=name)
                r["broker_cpu_s"] = round(b.cpu_s() - cpu0, 2)
                rows[name].append(r)
                print(
                    f"  [{case}] run {i + 1} {name}: produce {fmt_rate(r.get('produce_msgs_per_s'))}/s "
                    f"p99 {r.get('ack_p99_ms')} ms, consume {fmt_rate(r.get('consume_msgs_per_s'))}/s "
                    f"({r.get('consumed_msgs')}/{r.get('produced_ok')}), broker CPU {r['broker_cpu_s']} s",
                    file=sys.stderr,
                    flush=True,
                )
        max_rate = min(med(rows[name], "produce_msgs_per_s") or 0 for name in names)
        rate = 0.5 * max_rate
        n_paced = max(1000, min(messages // 2, int(rate * 3)))  # about 3 s of paced load
        for i in range(paced_runs if rate else 0):
            for name, b in brokers.items():
                r = run_pc(b.bootstrap, n_paced, size, compression, rate=rate, consume=False, label=name)
                paced[name].append(r)
                print(
                    f"  [{case}] paced {int(rate)}/s run {i + 1} {name}: p50 {r.get('ack_p50_ms')} ms "
                    f"p99 {r.get('ack_p99_ms')} ms",
                    file=sys.stderr,
                    flush=True,
                )
        rss_peak = {name: b.peak_rss_kb() for name, b in brokers.items()}
    finally:
        for b in brokers.values():
            b.stop()
            b.cleanup()
    out = {
        "case": case,
        "messages": messages,
        "size": size,
        "compression": compression,
        "runs": rows,
        "paced_runs": paced,
        "paced_rate": rate,
        "brokers": names,
    }
    for name in names:
        out[f"{name}_produce"] = med(rows[name], "produce_msgs_per_s")
        out[f"{name}_consume"] = med(rows[name], "consume_msgs_per_s")
        out[f"{name}_paced_p99_ms"] = med(paced[name], "ack_p99_ms")
        out[f"{name}_cpu_s"] = med(rows[name], "broker_cpu_s")
        out[f"{name}_rss_idle_kb"] = rss_idle[name]
        out[f"{name}_rss_peak_kb"] = rss_peak[name]
    for other in names[1:]:
        out[f"produce_ratio_{other}"] = ratio(out["tidelog_produce"], out[f"{other}_produce"])
        out[f"consume_ratio_{other}"] = ratio(out["tidelog_consume"], out[f"{other}_consume"])
        # Latency: lower is better, so the ratio is other / tidelog (>= 1.0 means tidelog is no worse).
        out[f"paced_p99_ratio_{other}"] = ratio(out[f"{other}_paced_p99_ms"], out["tidelog_paced_p99_ms"])
    return out


def _mb(kb) -> str:
    return f"{kb / 1024:.0f}" if kb else "-"


def table(results: list[dict], meta: dict) -> str:
    names = results[0]["brokers"] if results else ["tidelog"]
    others = names[1:]
    lines = [
        f"{' vs '.join(names)}, {meta['date']}, `{meta['command']}`, {meta['runs']} runs each alternating "
        f"(medians), host {meta['host']} ({meta['cpus']} CPUs, load average at start {meta['load']}).",
        "",
        "Ratios are tidelog / other for throughput (higher is better for tidelog) and other / tidelog for "
        "the paced ack p99 (>= 1.0: tidelog no worse).",
        "",
        "| case | "
        + " | ".join(f"{n} produce/s" for n in names)
        + " | "
        + " | ".join(f"produce vs {o}" for o in others)
        + " | "
        + " | ".join(f"{n} consume/s" for n in names)
        + " | "
        + " | ".join(f"consume vs {o}" for o in others)
        + " | paced rate/s | "
        + " | ".join(f"{n} p99 ms" for n in names)
        + " | "
        + " | ".join(f"p99 vs {o}" for o in others)
        + " | CPU s per run "
        + " / ".join(names)
        + " | RSS idle/peak MB "
        + " / ".join(names)
        + " |",
    ]
    ncols = lines[-1].count("|") - 1
    lines.append("|" + "---|" * ncols)
    for r in results:
        lines.append(
            f"| {r['case']} | "
            + " | ".join(fmt_rate(r[f"{n}_produce"]) for n in names)
            + " | "
            + " | ".join(f"**{r[f'produce_ratio_{o}']}**" for o in others)
            + " | "
            + " | ".join(fmt_rate(r[f"{n}_consume"]) for n in names)
            + " | "
            + " | ".join(f"**{r[f'consume_ratio_{o}']}**" for o in others)
            + f" | {fmt_rate(r['paced_rate'])} | "
            + " | ".join(str(r[f"{n}_paced_p99_ms"]) for n in names)
            + " | "
            + " | ".join(f"**{r[f'paced_p99_ratio_{o}']}**" for o in others)
            + " | "
            + " / ".join(str(r[f"{n}_cpu_s"]) for n in names)
            + " | "
            + " / ".join(f"{_mb(r[f'{n}_rss_idle_kb'])}/{_mb(r[f'{n}_rss_peak_kb'])}" for n in names)
            + " |"
        )
    spreads = []
    for r in results:
        for name in names:
            vals = [x["produce_msgs_per_s"] for x in r["runs"][name] if x.get("produce_msgs_per_s")]
            if len(vals) > 1:
                spreads.append(f"{r['case']} {name} produce {fmt_rate(min(vals))}-{fmt_rate(max(vals))}")
    lines += ["", "Spread (min-max) of the produce runs: " + "; ".join(spreads) + "."]
    return "\n".join(lines) + "\n"


def chart(results: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no chart", file=sys.stderr)
        return
    names = results[0]["brokers"]
    labels = [r["case"] for r in results]
    keys = [
        (f"{k}_{o}", f"{lab} vs {o}")
        for o in names[1:]
        for k, lab in (("produce_ratio", "produce"), ("consume_ratio", "consume"), ("paced_p99_ratio", "paced p99"))
    ]
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / max(1, len(keys))
    for i, (k, lab) in enumerate(keys):
        xs = [j + (i - (len(keys) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [r[k] or 0 for r in results], width, label=lab)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel("tidelog vs other (higher is better)")
    ax.set_title(" vs ".join(names) + ", medians of alternating runs")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1/5 of the messages, 2 runs each, 1 paced run")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--paced-runs", type=int, default=None)
    ap.add_argument("--cases", default=None, help="comma-separated indexes into the matrix (0-3)")
    ap.add_argument("--out", default=str(BENCH / "results"))
    ap.add_argument(
        "--brokers",
        default="tidelog,kafka,tansu",
        help="comma-separated, tidelog first (kafka needs Java 17 and `make kafka-jars`)",
    )
    args = ap.parse_args()
    names = [n.strip() for n in args.brokers.split(",") if n.strip()]
    if not names or names[0] != "tidelog" or any(n not in BROKERS for n in names):
        ap.error(f"--brokers: tidelog first, then any of {', '.join(BROKERS)}")
    runs = args.runs or (2 if args.quick else 5)
    paced_runs = args.paced_runs if args.paced_runs is not None else (1 if args.quick else 3)
    cases = CASES if args.cases is None else [CASES[int(i)] for i in args.cases.split(",")]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python bench/compare.py " + " ".join(sys.argv[1:]),
        "runs": runs,
        "host": platform.node(),
        "cpus": __import__("os").cpu_count(),
        "load": " ".join(f"{x:.1f}" for x in __import__("os").getloadavg()),
    }
    results = []
    with tempfile.TemporaryDirectory(prefix="tidelog-compare-") as tmp:
        for messages, size, comp in cases:
            if args.quick:
                messages //= 5
            results.append(run_case(messages, size, comp, runs, paced_runs, Path(tmp), names))
    md = table(results, meta)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for name in (f"compare-{stamp}", "latest"):
        (out_dir / f"{name}.md").write_text(md)
        (out_dir / f"{name}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    chart(results, out_dir / "latest.png")
    print(md)


if __name__ == "__main__":
    main()
