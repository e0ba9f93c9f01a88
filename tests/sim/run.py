"""Run the deterministic simulation: `python tests/sim/run.py --seeds 0:200 [--jobs 2]`, or one
seed with its trace: `python tests/sim/run.py --seed 17 -v`. `make simulate SEEDS=N` runs seeds
0..N-1. A failing seed prints its violations and the last events; the same seed replays the same
run exactly (the runner fixes PYTHONHASHSEED, re-executing itself when needed).

One seed: etcd and three brokers; a topic of 3 partitions, RF 3, min.insync.replicas 2; idempotent
acks=all producers, a plain acks=all producer that never retries, a transactional producer, and an
exactly-once copier (consume, produce, commit the offsets in the transaction) into a second topic;
`--seconds` of faults chosen by the seed (pauses past the session, crashes with quick restarts and
lost disks, double crashes, controlled shutdowns, network cuts, etcd outages, lost etcd outcomes,
lagging watches, slow networks and disks), each lasting a random while and overlapping; then every
fault heals, the clients stop, the cluster must converge, and the checks in checker.py run. The
monitor in cluster.py checks its invariants every quarter second of virtual time throughout, and an
ERROR logged by a broker is a violation too.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import logging
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.checker import converged, diagnose, diagnose_transactions, eos_check, final_check
from sim.clients import Client, EosCopier, History, Producer, TxnProducer
from sim.cluster import SimCluster
from sim.faults import Nemesis
from sim.loop import Determinism, SimLoop

TOPIC = "t"
COPY = "t-copy"  # the exactly-once copier's output
TOPICS = [TOPIC, COPY]
HASH_SEED = "0"


@dataclass
class Result:
    seed: int
    violations: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    acked: int = 0
    txns: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    virtual_s: float = 0.0
    wall_s: float = 0.0
    log_tail: str = ""
    fingerprint: str = ""  # a digest of the run (events, acknowledgements): equal for a replayed seed

    @property
    def ok(self) -> bool:
        return not self.violations


async def create_topic(client: Client, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
    from sim.clients import ClientError

    while True:
        try:
            resp = await client.any_broker(
                19,
                4,
                {
                    "topics": [
                        {
                            "name": name,
                            "num_partitions": partitions,
                            "replication_factor": rf,
                            "assignments": [],
                            "configs": [{"name": k, "value": v} for k, v in configs.items()],
                        }
                    ],
                    "timeout": 10000,
                    "validate_only": False,
                },
            )
            code = resp.topics[0].error_code.value
            if code in (0, 36):  # created, or TOPIC_ALREADY_EXISTS after an unknown outcome
                return
        except ClientError:
            pass
        await asyncio.sleep(0.5)


async def scenario(sim: SimCluster, seconds: float, result: Result, transaction_version: int | None = None) -> None:
    h = History()
    sim.start()
    admin_proc = sim.client_process("admin")
    admin = Client(admin_proc, "admin", sim.bootstrap, sim.net.connector(admin_proc), sim.rng)
    # half the seeds fsync every append (flush.messages=1): an await between a leader's append
    # and its wait for the followers, in which its role may change (defect 1)
    flush = {"flush.messages": "1"} if sim.rng.random() < 0.5 else {}
    await admin_proc.spawn(create_topic(admin, TOPIC, 3, 3, {"min.insync.replicas": "2", **flush}))
    await admin_proc.spawn(create_topic(admin, COPY, 3, 3, {"min.insync.replicas": "2"}))
    await sim.until(lambda: converged(sim, TOPICS) is None, 30, "topics ready")

    producers = []
    specs = [
        ("idempotent-1", dict(idempotent=True)),
        ("idempotent-2", dict(idempotent=True)),
        ("once", dict(idempotent=False, retries=0)),
    ]
    for name, kw in specs:
        proc = sim.client_process(name)
        c = Client(proc, name, sim.bootstrap, sim.net.connector(proc), sim.rng)
        producers.append((proc, Producer(c, h, TOPIC, kind=name, **kw)))  # type: ignore[arg-type]
    # transaction version 2 (KIP-890 part 2) for the transactional clients of half the seeds,
    # drawn apart from the simulation's own randomness (the other seeds keep their schedules);
    # `--transaction-version` sets it for every seed (the seeds that found defects before version 2
    # existed replay them at version 1)
    if transaction_version is None:
        tv2 = random.Random(sim.seed * 7 + 5).random() < 0.5
    else:
        tv2 = transaction_version == 2
    tproc = sim.client_process("txn")
    tc = Client(tproc, "txn", sim.bootstrap, sim.net.connector(tproc), sim.rng)
    producers.append((tproc, TxnProducer(tc, h, TOPIC, "sim-txn-1", kind="txn", tv2=tv2)))
    eproc = sim.client_process("eos")
    ec = Client(eproc, "eos", sim.bootstrap, sim.net.connector(eproc), sim.rng)
    producers.append((eproc, EosCopier(ec, h, TOPIC, COPY, "sim-copier", "sim-copy-group", tv2=tv2)))
    for _proc, p in producers:
        p.judge = lambda t, part, node: _judge(sim, t, part, node)
    tasks = [proc.spawn(p.run(0.1)) for proc, p in producers]

    nemesis = Nemesis(sim)
    await nemesis.run(seconds)
    sim.heal_all()
    for _proc, p in producers:
        p.stopping = True
    done, pending = await asyncio.wait(tasks, timeout=120)
    for t in done:
        if t.exception() is not None:
            sim.violate(f"client failed: {t.exception()!r}")
    if pending:
        sim.violate(f"{len(pending)} clients did not finish within 120 s after the faults healed")
    ok = await sim.until(lambda: converged(sim, TOPICS) is None, 120, "convergence")
    # transactions the clients left open time out (transaction.timeout.ms) and are aborted
    ok = ok and await sim.until(
        lambda: converged(sim, TOPICS) is None and not any(open_transactions(sim, t) for t in TOPICS), 60
    )
    if not ok:
        sim.violate(f"no convergence within 120 s of healing: {converged(sim, TOPICS)}")
        for line in diagnose(sim, TOPIC) + diagnose_transactions(sim, TOPICS):
            sim.event(f"diagnosis: {line}")
    else:
        sim.check_now()
        for v in final_check(sim, h, TOPIC) + eos_check(sim, TOPIC, COPY):
            sim.violate(v)
    for e in h.client_errors:
        sim.violate(f"client saw: {e}")
    result.acked = len(h.acked)
    digest = hashlib.sha256(repr((sim.events, sorted(h.acked.items()), [t.outcome for t in h.txns])).encode())
    result.fingerprint = digest.hexdigest()[:16]
    result.txns = {o: sum(1 for t in h.txns if t.outcome == o) for o in ("committed", "aborted", "unknown", "open")}
    result.faults = dict(nemesis.counts)


def _judge(sim: SimCluster, topic: str, p: int, node: int) -> str:
    """Why an OUT_OF_ORDER_SEQUENCE_NUMBER answer of `node` is wrong ("" when it is not): wrong
    when `node` leads the partition in etcd's state and acts as its leader at that epoch."""
    from sim.scripted import state

    st = state(sim, topic, p)
    b = sim.brokers.get(node)
    rm = b.replica_manager() if b is not None else None
    r = rm.replicas.get((topic, p)) if rm is not None else None
    if (
        st is not None
        and st.leader == node
        and r is not None
        and r.role == "leader"
        and r.leader_epoch == st.leader_epoch
    ):
        return f"from its rightful leader {node} at epoch {st.leader_epoch}"
    return ""


def open_transactions(sim: SimCluster, topic: str) -> bool:
    """Some partition of `topic` still has an open transaction (its LSO below its HW)."""
    from sim.scripted import state

    for p in range(3):
        st = state(sim, topic, p)
        plog = sim.brokers[st.leader].plog(topic, p) if st is not None and st.leader > 0 else None
        if plog is None or plog.last_stable_offset < plog.high_watermark:
            return True
    return False


def run_seed(
    seed: int,
    seconds: float = 30.0,
    verbose: bool = False,
    keep: Path | None = None,
    transaction_version: int | None = None,
) -> Result:
    result = Result(seed)
    t0 = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix=f"tidelog-sim-{seed}-", dir=_tmp_root()))
    loop = SimLoop()
    det = Determinism(loop, seed)
    stream = io.StringIO()
    handler = logging.StreamHandler(sys.stderr if verbose else stream)
    handler.setFormatter(_Formatter(loop))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    sim = SimCluster(loop, seed, base)
    errors = _Errors(sim)
    root.addHandler(errors)
    try:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(_main(sim, seconds, result, transaction_version))
    except Exception:  # noqa: BLE001 - a crash of the harness is a failed seed, with its trace
        result.violations.append("simulation failed:\n" + traceback.format_exc())
    finally:
        result.virtual_s = loop.time()
        try:
            loop.run_until_complete(sim.stop())
        except Exception:  # noqa: BLE001 - the run's result stands
            pass
        det.restore()
        asyncio.set_event_loop(None)
        loop.close()
        root.removeHandler(handler)
        root.removeHandler(errors)
        root.setLevel(old_level)
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
        else:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.move(base, keep)
    result.violations += sim.violations
    result.events = sim.events
    result.log_tail = stream.getvalue()[-20000:]
    result.wall_s = time.monotonic() - t0
    return result


async def _main(sim: SimCluster, seconds: float, result: Result, transaction_version: int | None) -> None:
    await scenario(sim, seconds, result, transaction_version)


class _Errors(logging.Handler):
    """An ERROR logged by the broker is a violation: every fault the nemesis injects is one a
    broker must expect (bad input and lost peers get an error code and a log line, never a crash)."""

    def __init__(self, sim: SimCluster) -> None:
        super().__init__(logging.ERROR)
        self.sim = sim

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("tidelog"):
            exc = record.exc_info[1] if record.exc_info else None
            self.sim.violate(f"{record.name} logged an error: {record.getMessage()}" + (f": {exc!r}" if exc else ""))


class _Formatter(logging.Formatter):
    def __init__(self, loop: SimLoop) -> None:
        super().__init__()
        self.loop = loop

    def format(self, record: logging.LogRecord) -> str:
        from sim.loop import PROCESS

        proc = PROCESS.get()
        who = proc.name if proc is not None else "sim"
        return f"{self.loop.time():9.3f} {who:8} {record.levelname[0]} {record.name}: {record.getMessage()}" + (
            "\n" + self.formatException(record.exc_info) if record.exc_info else ""
        )


def _tmp_root() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _worker(args: tuple[int, float, int | None]) -> Result:
    seed, seconds, tv = args
    r = run_seed(seed, seconds, transaction_version=tv)
    if r.ok:
        r.events, r.log_tail = [], ""
    return r


def _report(r: Result, file: io.TextIOBase | None = None) -> None:
    out = file or sys.stdout
    print(
        f"seed {r.seed}: {'ok' if r.ok else 'FAILED'} ({r.acked} acked, txns {r.txns}, faults {r.faults}, "
        f"{r.virtual_s:.0f} s virtual, {r.wall_s:.1f} s, run {r.fingerprint})",
        file=out,
    )
    if not r.ok:
        for v in r.violations[:25]:
            print(f"  VIOLATION {v}", file=out)
        if len(r.violations) > 25:
            print(f"  ... and {len(r.violations) - 25} more", file=out)
        print("  last events:", file=out)
        for e in r.events[-40:]:
            print(f"    {e}", file=out)
        if r.log_tail:
            print(
                "  log tail (warnings and errors):\n" + "\n".join("    " + ln for ln in r.log_tail.splitlines()[-60:]),
                file=out,
            )
    out.flush()  # a long run's log shows each failure as it happens


def parse_seeds(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        if ":" in part:
            a, b = part.split(":")
            out += list(range(int(a), int(b)))
        else:
            out.append(int(part))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:20", help="a:b (b excluded), or a list 1,5,9")
    ap.add_argument("--seed", type=int, help="one seed, with its trace on stderr (-v)")
    ap.add_argument("--seconds", type=float, default=30.0, help="virtual seconds of faults per seed")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--progress", type=int, default=0, metavar="N", help="a progress line every N seeds")
    ap.add_argument("--keep", type=Path, help="keep the data directories here (one seed)")
    ap.add_argument(
        "--transaction-version",
        type=int,
        choices=(1, 2),
        help="every seed's transactional clients at this version (default: version 2 on half the seeds)",
    )
    args = ap.parse_args()
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:  # string hashes decide set orders: fix them
        os.environ["PYTHONHASHSEED"] = HASH_SEED
        os.execv(sys.executable, [sys.executable, *sys.argv])
    if args.seed is not None:
        r = run_seed(args.seed, args.seconds, args.verbose, args.keep, args.transaction_version)
        _report(r)
        return 0 if r.ok else 1
    seeds = parse_seeds(args.seeds)
    t0 = time.monotonic()
    failed: list[int] = []
    acked = 0
    with multiprocessing.get_context("fork").Pool(max(1, args.jobs), maxtasksperchild=50) as pool:
        for done, r in enumerate(
            pool.imap_unordered(_worker, [(s, args.seconds, args.transaction_version) for s in seeds]), 1
        ):
            acked += r.acked
            if not r.ok:
                failed.append(r.seed)
                _report(r)
            elif args.verbose:
                _report(r)
            if args.progress and done % args.progress == 0:
                print(
                    f"... {done}/{len(seeds)} seeds, {len(failed)} failed, {acked} records acknowledged, "
                    f"{time.monotonic() - t0:.0f} s",
                    flush=True,
                )
    took = time.monotonic() - t0
    print(
        f"{len(seeds) - len(failed)} passed, {len(failed)} failed ({len(seeds)} seeds, {acked} records "
        f"acknowledged, {took:.0f} s)"
    )
    if failed:
        print(f"failed seeds: {sorted(failed)}; replay one: python tests/sim/run.py --seed {min(failed)} -v")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
