"""Share-group consume throughput (KIP-932, queues): 1, 4 and 16 librdkafka ShareConsumers (each
in its own process, implicit acknowledgement) on ONE partition, tidelog vs Apache Kafka 4.3.1 in
the same run, alternating tidelog, kafka, tidelog, kafka for each consumer count.

Each run: a fresh broker, a topic of one partition with `--messages` records of `--size` bytes
(produced first, acks=all), the group set to `share.auto.offset.reset=earliest`, then the
consumers start together. The figure is records per second from the first record any consumer
got to the moment all records were delivered (the join, which Kafka answers a heartbeat later,
is left out), and the share of records delivered more than once. It prints one table and writes
`bench/results/share-<stamp>.json`.

    .venv/bin/python bench/share_consume.py                    # 200k x 100 B, 2 runs each
    .venv/bin/python bench/share_consume.py --messages 50000 --runs 1 --consumers 1,4
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from brokers import BENCH, Kafka, Tidelog


def produce(bootstrap: str, topic: str, n: int, size: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    value = b"x" * size
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


def set_earliest(bootstrap: str, group: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([res])[res].result(30)


def consumer(bootstrap: str, group: str, topic: str, total, delivered, stop, out) -> None:
    from confluent_kafka import ShareConsumer

    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe([topic])
    first = last = 0.0
    n = 0
    while not stop.is_set():
        got = [m for m in c.poll(0.1) if not m.error()]
        if got:
            now = time.monotonic()
            first = first or now
            last = now
            n += len(got)
            with delivered.get_lock():
                delivered.value += len(got)
                if delivered.value >= total:
                    stop.set()
    c.commit_sync()  # accept what the last poll gave (librdkafka's close alone releases it, on either broker)
    c.close()
    out.put((first, last, n))


def one_run(broker_cls, consumers: int, messages: int, size: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="share-bench-"))
    b = broker_cls()
    b.start(work)
    try:
        topic, group = f"q-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
        produce(b.bootstrap, topic, messages, size)
        set_earliest(b.bootstrap, group)
        delivered, stop, out = mp.Value("q", 0), mp.Event(), mp.Queue()
        procs = [
            mp.Process(target=consumer, args=(b.bootstrap, group, topic, messages, delivered, stop, out))
            for _ in range(consumers)
        ]
        cpu0 = b.cpu_s()
        for p in procs:
            p.start()
        stop.wait(300)
        stop.set()
        results = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(30)
        cpu = b.cpu_s() - cpu0
        firsts = [f for f, _, n in results if n]
        lasts = [t for _, t, n in results if n]
        got = sum(n for _, _, n in results)
        elapsed = max(lasts) - min(firsts) if firsts else float("nan")
        return {
            "broker": b.name,
            "consumers": consumers,
            "records_per_s": messages / elapsed if elapsed > 0 else float("nan"),
            "delivered": got,
            "redelivered_share": (got - messages) / messages,
            "consumers_with_records": len(firsts),
            "broker_cpu_s": cpu,
        }
    finally:
        b.stop()
        b.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--consumers", default="1,4,16")
    args = ap.parse_args()
    runs: list[dict] = []
    for n in (int(x) for x in args.consumers.split(",")):
        for _ in range(args.runs):
            for cls in (Tidelog, Kafka):
                r = one_run(cls, n, args.messages, args.size)
                print(json.dumps(r), flush=True)
                runs.append(r)
    print()
    print(f"share-group consume, {args.messages} x {args.size} B on one partition, {args.runs} runs each (medians)")
    header = ["consumers", "tidelog records/s", "kafka records/s", "tidelog / kafka"]
    header += ["consumers given records tidelog / kafka", "redelivered tidelog / kafka", "broker CPU s tidelog / kafka"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n in sorted({r["consumers"] for r in runs}):

        def med(broker: str, key: str, n: int = n) -> float:
            return statistics.median(r[key] for r in runs if r["broker"] == broker and r["consumers"] == n)

        t, k = med("tidelog", "records_per_s"), med("kafka", "records_per_s")
        print(
            f"| {n} | {t:,.0f} | {k:,.0f} | {t / k:.2f} | {med('tidelog', 'consumers_with_records'):.0f} / "
            f"{med('kafka', 'consumers_with_records'):.0f} | {med('tidelog', 'redelivered_share'):.1%} / "
            f"{med('kafka', 'redelivered_share'):.1%} | {med('tidelog', 'broker_cpu_s'):.1f} / "
            f"{med('kafka', 'broker_cpu_s'):.1f} |"
        )
    stamp = time.strftime("%Y%m%d-%H%M")
    (BENCH / "results").mkdir(exist_ok=True)
    (BENCH / "results" / f"share-{stamp}.json").write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
