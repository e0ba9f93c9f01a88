"""A nemesis under load (issues 21 and 26): one etcd and three brokers; a topic with RF 3, min ISR 2,
6 partitions, and a second one for transactions; clients:

- idempotent acks=all producers of three libraries (confluent-kafka, kafka-python, aiokafka);
- a non-idempotent confluent-kafka producer, acks=all and retries=0, whose values must never be
  written twice (failures are expected; a failed value may be in the log once, never twice);
- a confluent-kafka transactional producer (every ABORT_EVERY-th transaction aborted) writing
  TXN_SIZE records over the partitions of the second topic per transaction;
- a read_uncommitted consumer of the first topic, a read_committed one of the second.

A nemesis injects one fault every TIDELOG_NEMESIS_EVERY seconds (default 10), each kind once per
round in an order drawn from TIDELOG_NEMESIS_SEED (random when unset; printed), for
TIDELOG_NEMESIS_SECONDS (default 60); TIDELOG_NEMESIS_FAULTS=kind,kind restricts the kinds:

- leader-kill: SIGKILL the leader of a partition, restart it once another leads;
- zombie: SIGSTOP a leader until another was elected (past broker.session.timeout.ms), SIGCONT;
- two-kill: SIGKILL two of the three brokers at once, restart both;
- sigterm: SIGTERM a leader (controlled shutdown), restart it;
- disk-loss: SIGKILL a leader, delete its data directory, restart it (only once every partition
  of every topic has a full ISR, so that it stays a single failure);
- etcd-kill: SIGKILL etcd, restart it on the same data directory and ports;
- etcd-pause: SIGSTOP etcd past the session timeout, SIGCONT.

Then everything is healed, every partition must have a full ISR again, and the checks run: the
history checker (tests/history.py) over each topic's clients and final logs (read to the HW, the
transactional topic read_committed): nothing acknowledged lost, no duplicate, transactions whole
and aborted ones invisible; every client's records acknowledged (but the retries=0 producer's);
no fatal client error; replicas identical batch by batch (base offset, last offset, CRC) up to the
HW; no Traceback in a broker's log. A failure names each failed check with its values, places
anomalies among the faults, and lists the fault history and the brokers' ERROR lines; the figures
are printed either way and the report is written to <tmp>/nemesis-report.txt. The clients are in
nemesis_clients.py, the faults in nemesis_faults.py.

    PYTHONPATH=src:tests pytest -s tests/cluster/test_nemesis.py      # CI: ~60 s of faults
    TIDELOG_NEMESIS_SECONDS=600 TIDELOG_NEMESIS_SEED=7 pytest -s tests/cluster/test_nemesis.py
"""

from __future__ import annotations

import collections
import os
import random
import re
import threading
import time
import uuid
from pathlib import Path

import pytest
from cluster_process import Cluster
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from history import History
from nemesis_clients import PARTITIONS, Clients
from nemesis_faults import KINDS, Nemesis, every_broker_sees, full, list_offsets, live, metadata, retrying
from test_replication import describe, wait_for

from tidelog.log.records import iter_batches

SECONDS = float(os.environ.get("TIDELOG_NEMESIS_SECONDS", "60"))
EVERY = float(os.environ.get("TIDELOG_NEMESIS_EVERY", "10"))
SEED = int(os.environ.get("TIDELOG_NEMESIS_SEED") or random.SystemRandom().randrange(1_000_000))
FAULTS = tuple(k.strip() for k in os.environ.get("TIDELOG_NEMESIS_FAULTS", ",".join(KINDS)).split(",") if k.strip())

pytestmark = pytest.mark.timeout(400 + int(SECONDS) * 3)


def final_log(c: Cluster, topic: str) -> dict[int, list[tuple[int, str]]]:
    consumer = Consumer(
        {"bootstrap.servers": c.bootstrap, "group.id": f"f-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
    )
    out: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        pos = {p: 0 for p in range(PARTITIONS)}
        deadline = time.monotonic() + 120
        while any(pos[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None or m.error():
                continue
            out[m.partition()].append((m.offset(), m.value().decode()))
            pos[m.partition()] = m.offset() + 1
        assert all(pos[p] >= ends[p] for p in ends), f"final read incomplete: {pos} of {ends}"
    finally:
        consumer.close()
    return out


def batches_upto(data_dir: Path, topic: str, p: int, hw: int) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, CRC, leader epoch) of every batch below `hw` in one replica's files."""
    out = []
    for f in sorted((data_dir / f"{topic}-{p}").glob("*.log")):
        data = f.read_bytes()
        for _pos, hd in iter_batches(data):
            last = hd.base_offset + hd.last_offset_delta
            if last < hw:
                out.append((hd.base_offset, last, hd.crc, hd.partition_leader_epoch))
    return out


def replicated_topic(c: Cluster, prefix: str) -> str:
    """A fresh topic of PARTITIONS partitions, RF 3, min ISR 2, every partition led with a full ISR."""
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(20)
    wait_for(lambda: all(len(p["isr"]) == 3 and p["leader"] > 0 for p in describe(c, topic)), 30, "a full ISR")
    return topic


def read_log(c: Cluster, topic: str, isolation: str) -> tuple[dict[int, list[tuple[int, str]]], dict[int, int]]:
    """Every record of every partition up to its end (HW, or LSO under read_committed): (records,
    ends). The read ends at each partition's EOF at or past the end, so that trailing control
    batches (transaction markers, never delivered) do not keep it waiting."""
    ends = {
        p: retrying(lambda p=p: list_offsets(c, topic, p, 1 if isolation == "read_committed" else 0))
        for p in range(PARTITIONS)
    }
    consumer = Consumer(
        {
            "bootstrap.servers": c.bootstrap,
            "group.id": f"f-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    out: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    eof: dict[int, int] = {}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 180
        while any(eof.get(p, -1) < ends[p] for p in ends) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof[m.partition()] = m.offset()
                continue
            out[m.partition()].append((m.offset(), m.value().decode()))
        assert all(eof.get(p, -1) >= ends[p] for p in ends), f"final read of {topic} incomplete: {eof} of {ends}"
    finally:
        consumer.close()
    return out, ends


def anomaly_values(h: History, cls: str, e: tuple) -> list:
    """The values an anomaly of the history checker is about (its example's shape per class)."""
    if cls in ("lost-write", "duplicate"):
        return [e[0]]
    if cls == "aborted-read":
        return [e[3]]
    if cls.startswith("txn-"):
        return list(e[3])
    if cls == "inconsistent-offsets":
        named = [v for v in e[2] if v in h.sent_by]
        return sorted(named, key=lambda v: h.ack_times.get(v, float("inf")))
    if cls == "nonmonotonic-send":
        return [e[2][1], e[3][1]]
    return []


# -- reports ------------------------------------------------------------------------------------------

STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def broker_log_findings(c: Cluster) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """Per broker: its tracebacks (each with the log line before it) and its ERROR lines."""
    tracebacks: dict[int, list[str]] = {}
    errors: dict[int, list[str]] = {}
    for node, b in c.brokers.items():
        try:
            lines = b.log_path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        tbs, errs = [], []
        i = 0
        while i < len(lines):
            ln = lines[i]
            if " ERROR " in ln:
                errs.append(ln[:400])
            if ln.startswith("Traceback"):
                j = i + 1
                while j < len(lines) and not STAMP.match(lines[j]):
                    j += 1
                head = lines[i - 1][:300] if i else ""
                tbs.append("\n".join([head, *lines[i:j][-14:]]))
                i = j
                continue
            i += 1
        tracebacks[node], errors[node] = tbs, errs
    return tracebacks, errors


def distinct(blocks: list[str], limit: int) -> list[str]:
    """The first block of each kind (by its last line), at most `limit`, with their counts."""
    seen: dict[str, list] = {}
    for blk in blocks:
        key = blk.strip().splitlines()[-1] if blk.strip() else ""
        key = re.sub(r"\d+", "N", key)[:200]
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [blk, 1]
    return [f"({n}x) {blk}" for blk, n in list(seen.values())[:limit]]


def compare_replicas(c: Cluster, topic: str, settle: float) -> list[str]:
    """Differences between the replicas' batches below the HW, per partition ([] when identical),
    after waiting up to `settle` seconds for them to agree."""
    problems = []
    for p in range(PARTITIONS):
        hw = retrying(lambda p=p: list_offsets(c, topic, p, 0))

        def copies(p=p, hw=hw) -> dict[int, list[tuple[int, int, int, int]]]:
            return {
                n: [x[:3] for x in batches_upto(b.data_dir, topic, p, hw)]
                for n, b in c.brokers.items()
                if b.data_dir.joinpath(f"{topic}-{p}").is_dir()
            }

        try:
            wait_for(
                lambda: len(set(map(tuple, copies().values()))) == 1 and len(copies()) == 3,
                settle,
                f"{topic}-{p}: identical replicas",
            )
        except AssertionError:
            pass
        got = copies()
        if len(got) != 3:
            problems.append(f"{topic}-{p}: {len(got)} replicas on disk ({sorted(got)})")
            continue
        first, ref = next(iter(got.items()))
        if hw > 0 and (not ref or ref[-1][1] != hw - 1):
            problems.append(f"{topic}-{p}: broker {first}'s batches end at {ref[-1:]} below the HW {hw}")
        for node, cp in got.items():
            if cp != ref:
                i = next((k for k, (a, b) in enumerate(zip(ref, cp)) if a != b), min(len(ref), len(cp)))
                problems.append(
                    f"{topic}-{p} (HW {hw}): broker {node} differs from broker {first} at batch {i}: "
                    f"{cp[i : i + 2]} vs {ref[i : i + 2]} ({len(cp)} vs {len(ref)} batches)"
                )
    return problems


def test_nemesis(cluster):
    c = cluster
    topic = replicated_topic(c, "nemesis")
    txn_topic = replicated_topic(c, "nemesis-txn")
    h, ht = History(unordered=frozenset({"non-idempotent"})), History()  # order: idempotent producers only
    clients = Clients(c, topic, h, txn_topic, ht)
    t0 = time.monotonic()
    nemesis = Nemesis(c, [topic, txn_topic], SEED, FAULTS, t0)
    print(
        f"\nnemesis: seed {SEED}, {SECONDS:.0f} s, a fault every {EVERY:.0f} s of {', '.join(FAULTS)}; "
        f"data in {c.base}",
        flush=True,
    )
    failed: list[str] = []  # each failed check, with its values
    clients.start()
    try:
        nemesis.run(SECONDS, EVERY, threading.Event())
    except Exception as e:  # noqa: BLE001 - a fault that could not be injected (a broker not restarting)
        failed.append(f"nemesis stopped at {nemesis.now():.1f} s: {e!r}"[:3000])
    finally:
        try:
            nemesis.heal()
        except Exception as e:  # noqa: BLE001 - the report says so; the checks below still run
            failed.append(f"healing: {e!r}"[:3000])
        try:
            wait_for(
                lambda: every_broker_sees(c, [topic, txn_topic], full, all_topics=True),
                120,
                "every partition of every topic in full ISR",
            )
        except AssertionError as e:
            try:
                state = {
                    n: [
                        f"{t}-{p['partition']} leader {p['leader']} isr {p['isr']} of {p['replicas']}"
                        for t, parts in metadata(c, n, None).items()
                        for p in parts
                        if not full(p)
                    ]
                    for n in live(c)
                }
            except Exception as e2:  # noqa: BLE001 - the report says so
                state = repr(e2)
            failed.append(f"after healing: {e}; partitions not in full ISR per broker: {state}")
        healed = time.monotonic()
        try:
            clients.join()
        except AssertionError as e:
            failed.append(f"clients: {e}")
        stopped = {n: round(t - healed, 1) for n, t in clients.finished.items()}
    run_s = time.monotonic() - t0
    try:  # the transactional topic's last stable offset up to the HW: no transaction left open
        wait_for(
            lambda: all(
                list_offsets(c, txn_topic, p, 1) == list_offsets(c, txn_topic, p, 0) for p in range(PARTITIONS)
            ),
            90,
            "LSO = HW on the transactional topic",
        )
    except AssertionError as e:
        failed.append(str(e))
    for t, hist, isolation in ((topic, h, "read_uncommitted"), (txn_topic, ht, "read_committed")):
        try:  # also when healing failed: what the leaders serve now is what a consumer gets
            logs, _ends = read_log(c, t, isolation)
        except Exception as e:  # noqa: BLE001 - the report says so
            failed.append(f"final read of {t} ({isolation}): {e!r}")
            continue
        for p, recs in logs.items():
            hist.final(p, recs, read_committed=isolation == "read_committed", complete=True)
    found = {name: {k: v for k, v in hist.check().items() if v} for name, hist in (("data", h), ("txn", ht))}
    # a batch librdkafka itself sent again after dropping a zombie leader from its metadata is the
    # client's doing (nemesis_clients.ResentBatches): counted apart; any other duplicate fails
    dups = found["data"].pop("duplicate", [])
    resent = clients.resent.explained([e for e in dups if h.producer_of(e[0]) == "non-idempotent"], h.acks)
    if len(resent) < len(dups):
        found["data"]["duplicate"] = [e for e in dups if e not in resent]

    # -- the checks ------------------------------------------------------------------------------
    places: list[str] = []
    suspects: collections.Counter = collections.Counter()
    for name, hist in (("data", h), ("txn", ht)):
        for cls, examples in found[name].items():
            failed.append(f"{name} topic: {cls}: {len(examples)}, e.g. {examples[:5]}")
            for i, e in enumerate(examples):
                vals = anomaly_values(hist, cls, e)
                if cls in ("lost-write", "inconsistent-offsets", "txn-lost"):
                    suspects[(nemesis.culprit(hist, vals[0]) if vals else "?", f"{name} {cls}")] += 1
                if i < 5 and vals:
                    places.append(
                        f"  {name} {cls} {vals[:3]}: "
                        + "; ".join(
                            f"{v} ({hist.producer_of(v)}) {nemesis.place(hist.ack_times.get(v))}" for v in vals[:3]
                        )
                    )
    for name in Clients.IDEMPOTENT:
        acked = sum(1 for v in h.ack_producer.values() if v == name)
        if acked != len(h.sends[name]):
            failed.append(
                f"{name}: {acked} of {len(h.sends[name])} records acknowledged (errors {dict(clients.errors[name])})"
            )
    if clients.fatal:
        failed.append(f"client errors: {clients.fatal[:8]}")
    if len(h.acks) < 1000 or clients.txn_outcomes["committed"] < 5:
        failed.append(
            f"too little load to judge: {len(h.acks)} records acknowledged, "
            f"{clients.txn_outcomes['committed']} transactions committed"
        )
    failed += [f"liveness: {s}" for s in nemesis.stalls]
    unhealed = any(f.startswith("after healing") for f in failed)
    for t in (topic, txn_topic):
        try:
            failed += [f"replicas: {d}" for d in compare_replicas(c, t, 0 if unhealed else 30)]
        except Exception as e:  # noqa: BLE001 - the report says so
            failed.append(f"replicas of {t} not compared: {e!r}")
    tracebacks, errors = broker_log_findings(c)
    for node, tbs in tracebacks.items():
        if tbs:
            failed.append(f"broker {node}: {len(tbs)} tracebacks in {c.brokers[node].log_path}")

    # -- the figures -----------------------------------------------------------------------------
    kinds = collections.Counter(f.kind for f in nemesis.faults)
    lines = [
        f"nemesis figures: seed {SEED}, {run_s:.0f} s, {len(nemesis.faults)} faults "
        f"({', '.join(f'{k} {kinds[k]}' for k in KINDS if kinds[k])})"
    ]
    for hist, names in ((h, (*Clients.IDEMPOTENT, "non-idempotent")), (ht, ("txn",))):
        for name in names:
            acked = sum(1 for v in hist.ack_producer.values() if v == name)
            errs = dict(clients.errors.get(name, {}))
            lines.append(
                f"  {name}: {acked} acknowledged of {len(hist.sends[name])} sent" + (f"; errors {errs}" if errs else "")
            )
    lines.append(
        f"  non-idempotent, librdkafka's re-sends: {clients.resent.batches} batches in flight to a "
        f"broker it dropped from its metadata sent again ({sum(clients.resent.count.values())} "
        f"records), {len(resent)} values of them twice in the log, e.g. {resent[:2]}"
    )
    lines.append(f"  clients finished, seconds after the heal: {stopped}")
    lines.append(
        f"  transactions: {clients.txn_outcomes['committed']} committed, "
        f"{clients.txn_outcomes['aborted']} aborted, {clients.txn_outcomes['unknown']} unknown"
    )
    for name, hist in (("consumer", h), ("rc-consumer", ht)):
        lines.append(
            f"  {name}: {len(hist.polls[name])} polled"
            + (f"; errors {dict(clients.errors[name])}" if clients.errors.get(name) else "")
        )
    for name, hist in (("data", h), ("txn", ht)):
        by = hist.by_client(found[name])
        lines.append(
            f"  anomalies ({name} topic): "
            + (", ".join(f"{k} {len(v)} {by.get(k, {})}" for k, v in found[name].items()) or "none")
        )
    lines.append(
        f"  broker logs: tracebacks { ({n: len(v) for n, v in tracebacks.items()}) }, "
        f"ERROR lines { ({n: len(v) for n, v in errors.items()}) }"
    )
    lines.append("fault history:")
    lines += [f"  {f}" for f in nemesis.faults]
    figures = "\n".join(lines)
    print(figures, flush=True)
    report = [figures]
    if failed:
        report += ["FAILED CHECKS:", *(f"- {f}" for f in failed)]
        if suspects:
            report.append(
                "lost or overwritten acknowledged writes by the faults under way between their "
                "acknowledgement and the first acknowledgement of another value at their offset:"
            )
            report += [f"  {fault}: {cls} {n}" for (fault, cls), n in sorted(suspects.items())]
        if places:
            report += ["examples among the faults:", *places]
        for node in c.brokers:
            if tracebacks.get(node):
                report.append(f"==== broker {node} tracebacks (distinct):")
                report += distinct(tracebacks[node], 6)
            if errors.get(node):
                report.append(f"==== broker {node} ERROR lines ({len(errors[node])}, distinct):")
                report += distinct(errors[node], 12)
    text = "\n".join(report)
    out = Path(c.base) / "nemesis-report.txt"
    out.write_text(text + "\n")
    assert not failed, f"replay with TIDELOG_NEMESIS_SEED={SEED} (report: {out})\n{text}"
