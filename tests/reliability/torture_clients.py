"""The torture test's clients, each run as its own process (`python torture_clients.py ROLE
BOOTSTRAP TOPIC OUT STOPFILE`) so that they live through every broker kill. Each appends what it
knows for sure to OUT, one JSON object a line, flushed at once:

- idempotent:    {"acked": value, "p": partition, "o": offset} for every delivery report without error
- transactional: {"txn": n, "values": [...], "outcome": "committed" | "aborted" | "uncertain"}
                 (aborted: abort_transaction returned, or commit was never called - such a
                 transaction can never commit; uncertain: commit was called and never confirmed)
- consumer:      {"p", "o", "v"} for every record a read_committed group member received, and
                 {"committed": {partition: offset}} after each synchronous commit

They run until STOPFILE exists.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

PARTITIONS = 3


def writer(path):
    f = open(path, "a", buffering=1)

    def emit(obj):
        f.write(json.dumps(obj) + "\n")
        f.flush()

    return emit


def idempotent(boot, topic, emit, stop):
    p = Producer(
        {
            "bootstrap.servers": boot,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 120000,
            "reconnect.backoff.max.ms": 200,
            "client.id": "torture-idempotent",
        }
    )

    def done(err, msg):
        if err is None:
            emit({"acked": msg.value().decode(), "p": msg.partition(), "o": msg.offset()})
        else:
            emit({"failed": msg.value().decode(), "err": str(err)})

    n = 0
    while not os.path.exists(stop):
        try:
            p.produce(topic, b"idem-%d" % n, partition=n % PARTITIONS, on_delivery=done)
            n += 1
        except BufferError:
            p.poll(0.1)
        p.poll(0.005 if n % 20 else 0.05)
    p.flush(120)


def transactional(boot, topic, emit, stop):
    rng = random.Random(os.getpid())

    def make():
        p = Producer(
            {
                "bootstrap.servers": boot,
                "transactional.id": "torture-txn",
                "acks": "all",
                "transaction.timeout.ms": 60000,
                "message.timeout.ms": 60000,
                "reconnect.backoff.max.ms": 200,
                "client.id": "torture-txn",
            }
        )
        while True:
            try:
                p.init_transactions(30)
                return p
            except KafkaException as e:
                if not e.args[0].retriable():
                    raise
                time.sleep(0.2)

    p = make()
    n = 0
    while not os.path.exists(stop):
        n += 1
        values = [f"txn-{n}-{i}" for i in range(rng.randint(1, 5))]
        want_commit = rng.random() < 0.7
        commit_called = False
        try:
            p.begin_transaction()
            for i, v in enumerate(values):
                p.produce(topic, v.encode(), partition=(n + i) % PARTITIONS)
            if p.flush(30):  # the records reach the log before the decision, aborted ones too
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "flush timed out"))
            if want_commit:
                commit_called = True
                while True:
                    try:
                        p.commit_transaction(30)
                        break
                    except KafkaException as e:
                        if e.args[0].retriable() and not e.args[0].txn_requires_abort():
                            time.sleep(0.2)
                            continue
                        raise
                emit({"txn": n, "values": values, "outcome": "committed"})
            else:
                p.abort_transaction(30)
                emit({"txn": n, "values": values, "outcome": "aborted"})
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                try:
                    p.abort_transaction(30)
                    emit({"txn": n, "values": values, "outcome": "aborted", "why": str(err)})
                    continue
                except KafkaException:
                    pass
            emit({"txn": n, "values": values, "outcome": "uncertain" if commit_called else "aborted", "why": str(err)})
            try:
                p.flush(5)
            except Exception:  # noqa: BLE001
                pass
            p = make()  # a fresh producer: init_transactions fences and finishes the old one
        time.sleep(rng.random() * 0.05)


def consumer(boot, topic, emit, stop):
    c = Consumer(
        {
            "bootstrap.servers": boot,
            "group.id": "torture-group",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 45000,
            "reconnect.backoff.max.ms": 200,
            "client.id": "torture-consumer",
        }
    )
    c.subscribe([topic])
    idle_since = None
    while True:
        msgs = c.consume(100, 0.5)
        got = [m for m in msgs if m.error() is None]
        for m in got:
            emit({"p": m.partition(), "o": m.offset(), "v": m.value().decode()})
        if got:
            idle_since = None
            try:
                done = c.commit(asynchronous=False)
                emit({"committed": {str(tp.partition): tp.offset for tp in done or [] if tp.error is None}})
            except KafkaException as e:
                if e.args[0].code() not in (KafkaError._NO_OFFSET,):
                    emit({"commit_failed": str(e)})
        elif os.path.exists(stop):
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 5:
                break
    c.close()


def main() -> None:
    role, boot, topic, out, stop = sys.argv[1:6]
    {"idempotent": idempotent, "transactional": transactional, "consumer": consumer}[role](
        boot, topic, writer(out), stop
    )


if __name__ == "__main__":
    main()
