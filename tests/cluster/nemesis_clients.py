"""The nemesis's clients (tests/cluster/test_nemesis.py): idempotent acks=all producers of three
libraries, a confluent-kafka acks=all producer that never retries, a transactional producer and
two consumers, each in its own thread, recording what they send, what is acknowledged and what
they read into a `History` per topic."""

import asyncio
import collections
import logging
import re
import threading
import time
import uuid

from cluster_process import Cluster
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from history import History

PARTITIONS = 6
TXN_SIZE = 12  # records per transaction, two per partition
ABORT_EVERY = 5  # every 5th transaction is aborted


class ResentBatches(logging.Handler):
    """librdkafka's own re-sends that may write a batch twice, read from its `msg` debug lines.

    librdkafka (2.10 and later) drops a broker that leaves the Metadata response ("decommissioning
    this broker"); the batches in flight to it fail with `_DESTROY_BROKER`, which it counts as
    *not persisted* and sends again to the new leader without counting a retry, even with
    `message.send.max.retries=0`. A zombie leader leaves the Metadata (its etcd session ended, as
    a fenced broker leaves KRaft's) while it may have appended and replicated such a batch without
    answering: that batch is then in the log twice, with Apache Kafka as with tidelog. The debug
    line names the partition and the number of messages, not which ones (the MsgId it prints is 0
    without idempotence), so `count` is a bound: partition -> messages sent again."""

    def __init__(self, topic: str) -> None:
        super().__init__(logging.DEBUG)
        self.pattern = re.compile(
            re.escape(topic) + r" \[(\d+)\]: MessageSet with (\d+) message\(s\) "
            r".*encountered error: Local: Broker handle destroyed"
        )
        self.count: collections.Counter = collections.Counter()
        self.batches = 0

    def emit(self, record: logging.LogRecord) -> None:
        m = self.pattern.search(record.getMessage())
        if m:
            self.count[int(m[1])] += int(m[2])
            self.batches += 1

    def explained(self, duplicates: list, acks: dict) -> list:
        """The duplicates [(value, [(partition, offset), ...])] that librdkafka's re-sends account
        for: twice in one partition, acknowledged at the later copy (the re-send's), and on each
        partition no more of them than the messages it sent again there (else none is)."""
        by_partition: dict[int, list] = collections.defaultdict(list)
        for e in duplicates:
            v, places = e
            if len(places) == 2 and places[0][0] == places[1][0] and acks.get(v) == places[1]:
                by_partition[places[0][0]].append(e)
        return [e for p, es in by_partition.items() if len(es) <= self.count[p] for e in es]


class Clients:
    """The producers and consumers, each in its own thread, recording into one History per topic.

    Without `txn_topic`: the three idempotent producers and the consumer of `topic` (the rolling
    restart and reassignment tests); with it, also the retries=0 producer, the transactional
    producer and the read_committed consumer of `txn_topic` (recording into `ht`)."""

    IDEMPOTENT = ("confluent", "kafka-python", "aiokafka")

    def __init__(
        self, c: Cluster, topic: str, h: History, txn_topic: str | None = None, ht: History | None = None
    ) -> None:
        self.c, self.topic, self.h = c, topic, h
        self.txn_topic, self.ht = txn_topic, ht
        self.stop = threading.Event()
        self.fatal: list[str] = []
        self.errors: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.txn_outcomes: collections.Counter = collections.Counter()
        self.resent = ResentBatches(topic)  # the retries=0 producer's batches librdkafka sent again
        fns = [self.confluent, self.kafka_python, self.aiokafka, self.consumer]
        if txn_topic is not None:
            assert ht is not None
            fns += [self.non_idempotent, self.transactional, self.committed_consumer]
        self.threads = [threading.Thread(target=self._guard, args=(f,), name=f.__name__) for f in fns]
        self.counts: dict[str, int] = {}
        self.finished: dict[str, float] = {}  # thread -> time.monotonic() when it ended

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(240)
            assert not t.is_alive(), f"{t.name} did not finish"

    def progress(self) -> collections.Counter:
        """What the clients of `topic` have done so far: records acknowledged per producer, and
        records read by the consumer (under "consumer")."""
        with self.h.lock:
            done = collections.Counter(self.h.ack_producer.values())
            done["consumer"] = len(self.h.polls["consumer"])
        return done

    def wait_for_load(self, records: int, timeout: float = 120.0) -> None:
        """Until every producer of `topic` has had `records` more acknowledged than when called,
        and the consumer has read `records` more: load on the cluster as it is now, counted
        rather than assumed from the time spent. Fails at once when a client thread has ended."""
        names = [*self.IDEMPOTENT, *(["non-idempotent"] if self.txn_topic is not None else []), "consumer"]
        start = self.progress()
        deadline = time.monotonic() + timeout
        while True:
            now = self.progress()
            short = {n: start[n] + records - now[n] for n in names if now[n] < start[n] + records}
            if not short:
                return
            ended = [t.name for t in self.threads if t.name in self.finished]
            if ended or time.monotonic() > deadline:
                raise AssertionError(
                    f"{records} more records per client not acknowledged/read "
                    f"{'before ' + ', '.join(ended) + ' ended' if ended else f'within {timeout} s'}: "
                    f"short by {short}; fatal {self.fatal[:5]}; errors {dict(self.errors)}"
                )
            time.sleep(0.1)  # the poll interval of this wait

    def _guard(self, f) -> None:
        try:
            f()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.fatal.append(f"{f.__name__}: {e!r}")
        finally:
            self.finished[f.__name__] = time.monotonic()

    def _pace(self, i: int) -> None:
        if i % 50 == 0:
            time.sleep(0.1)

    def _confluent_loop(self, name: str, prefix: str, keys: int, conf: dict, flush_s: float, logger=None) -> None:
        """One confluent-kafka producer of `self.topic`: `<prefix>-<i>` keyed by i % keys, paced,
        each delivery report recorded, until stopped; then every record must be reported."""
        h = self.h

        def cb(err, msg):
            v = msg.value().decode()
            if err:
                self.errors[name][err.name()] += 1
                h.fail(name, v)
                if err.fatal():
                    self.fatal.append(f"{name}: {err}")
            else:
                h.ack(name, v, msg.partition(), msg.offset())

        p = Producer(
            {
                "bootstrap.servers": self.c.bootstrap,
                "acks": "all",
                "linger.ms": 5,
                "topic.metadata.refresh.interval.ms": 2000,
                **conf,
            },
            **({"logger": logger} if logger else {}),
        )
        i = 0
        try:
            while not self.stop.is_set():
                v = f"{prefix}-{i}"
                h.send(name, v)
                p.produce(self.topic, v.encode(), key=str(i % keys).encode(), on_delivery=cb)
                p.poll(0)
                i += 1
                self._pace(i)
        finally:
            self.counts[name] = i
            assert p.flush(flush_s) == 0, f"{name}: records still queued"

    def confluent(self) -> None:
        self._confluent_loop("confluent", "ck", 31, {"enable.idempotence": True, "message.timeout.ms": 180000}, 180)

    def non_idempotent(self) -> None:
        """acks=all, no idempotence, no retries: a failover fails its writes (counted), it never
        writes one twice but for librdkafka's own re-sends (`ResentBatches`, with its debug lines)."""
        log = logging.getLogger("nemesis.rdkafka.non-idempotent")
        log.propagate, log.level = False, logging.DEBUG
        log.addHandler(self.resent)
        self._confluent_loop(
            "non-idempotent",
            "nr",
            37,
            {"enable.idempotence": False, "message.send.max.retries": 0, "message.timeout.ms": 30000, "debug": "msg"},
            60,
            log,
        )

    def kafka_python(self) -> None:
        from kafka import KafkaProducer

        h, name = self.h, "kafka-python"
        p = KafkaProducer(
            bootstrap_servers=self.c.bootstrap.split(","),
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            retries=2**31 - 1,
            delivery_timeout_ms=180000,
            request_timeout_ms=10000,
            metadata_max_age_ms=2000,
            max_in_flight_requests_per_connection=5,
        )
        i = 0
        try:
            while not self.stop.is_set():
                v = f"kp-{i}"
                h.send(name, v)
                fut = p.send(self.topic, v.encode(), key=str(i % 29).encode())
                fut.add_callback(lambda md, v=v: h.ack(name, v, md.partition, md.offset))
                fut.add_errback(lambda e, v=v: (h.fail(name, v), self.fatal.append(f"kafka-python: {e!r}")))
                i += 1
                self._pace(i)
        finally:
            self.counts[name] = i
            p.flush(180)
            p.close(30)

    def aiokafka(self) -> None:
        from aiokafka import AIOKafkaProducer

        h, name = self.h, "aiokafka"

        async def run() -> None:
            p = AIOKafkaProducer(
                bootstrap_servers=self.c.bootstrap,
                acks="all",
                enable_idempotence=True,
                linger_ms=5,
                request_timeout_ms=180000,
                metadata_max_age_ms=2000,
                retry_backoff_ms=200,
            )
            for _ in range(30):
                try:
                    await p.start()
                    break
                except Exception:  # noqa: BLE001 - a broker of the bootstrap list may be down
                    await asyncio.sleep(1)
            pending = set()
            i = 0
            try:
                while not self.stop.is_set():
                    v = f"ak-{i}"
                    h.send(name, v)
                    fut = await p.send(self.topic, v.encode(), key=str(i % 23).encode())

                    def done(f, v=v):
                        pending.discard(f)
                        if f.exception() is not None:
                            h.fail(name, v)
                            self.fatal.append(f"aiokafka: {f.exception()!r}")
                        else:
                            md = f.result()
                            h.ack(name, v, md.partition, md.offset)

                    pending.add(fut)
                    fut.add_done_callback(done)
                    i += 1
                    if i % 50 == 0:
                        await asyncio.sleep(0.1)
                if pending:
                    await asyncio.wait(pending, timeout=180)
            finally:
                self.counts[name] = i
                await p.stop()

        asyncio.run(run())

    def transactional(self) -> None:
        """Transactions of TXN_SIZE records over every partition of the second topic, each
        ABORT_EVERY-th aborted; an error that leaves the outcome open ("unknown": a fatal error, a
        failed abort) replaces the producer, whose init_transactions fences the old one and settles
        its transaction. At the end a transaction left unknown is settled the same way."""
        h, name = self.ht, "txn"
        assert h is not None and self.txn_topic is not None
        txn_id = f"nemesis-{uuid.uuid4().hex[:6]}"

        def cb(err, msg):
            v = msg.value().decode()
            if err:
                self.errors[name][err.name()] += 1
                h.fail(name, v)
            else:
                h.ack(name, v, msg.partition(), msg.offset())

        def new_producer() -> Producer | None:
            while True:
                p = Producer(
                    {
                        "bootstrap.servers": self.c.bootstrap,
                        "transactional.id": txn_id,
                        "acks": "all",
                        "linger.ms": 5,
                        "transaction.timeout.ms": 60000,
                        "message.timeout.ms": 60000,
                        "topic.metadata.refresh.interval.ms": 2000,
                    }
                )
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    try:
                        p.init_transactions(30)
                        return p
                    except KafkaException as e:
                        err = e.args[0]
                        self.errors[name][f"init:{err.name()}"] += 1
                        if err.fatal():
                            break  # a new producer
                        if not err.retriable():
                            time.sleep(0.5)
                self.fatal.append(f"txn: init_transactions failed for 120 s ({txn_id})")
                return None

        def one(p: Producer, n: int) -> tuple[list[str], str]:
            given: list[str] = []
            try:
                p.begin_transaction()
                for k in range(TXN_SIZE):
                    v = f"tx-{n}-{k}"
                    h.send(name, v)
                    p.produce(self.txn_topic, v.encode(), partition=k % PARTITIONS, on_delivery=cb)
                    given.append(v)
                p.flush(120)
                if n % ABORT_EVERY == ABORT_EVERY - 1:
                    p.abort_transaction(60)
                    return given, "aborted"
                for _attempt in range(20):
                    try:
                        p.commit_transaction(60)
                        return given, "committed"
                    except KafkaException as e:
                        err = e.args[0]
                        if not err.retriable() or err.txn_requires_abort() or err.fatal():
                            raise
                        self.errors[name][f"commit:{err.name()}"] += 1
                return given, "unknown"
            except KafkaException as e:
                err = e.args[0]
                self.errors[name][err.name()] += 1
                if err.txn_requires_abort() and not err.fatal():
                    try:
                        p.abort_transaction(60)
                        return given, "aborted"
                    except KafkaException as e2:
                        self.errors[name][f"abort:{e2.args[0].name()}"] += 1
                return given, "unknown"

        p = new_producer()
        n = 0
        outcome = "committed"
        try:
            while p is not None and not self.stop.is_set():
                given, outcome = one(p, n)
                h.txn(name, given, outcome)
                self.txn_outcomes[outcome] += 1
                n += 1
                if outcome == "unknown":
                    p.flush(10)
                    p = new_producer()
            if outcome == "unknown" and p is not None:
                p = new_producer()  # settles the last transaction before the final read
        finally:
            self.counts[name] = sum(len(v) for v in h.sends.values())

    def consumer(self) -> None:
        self._consume(self.h, "consumer", self.topic, "read_uncommitted")

    def committed_consumer(self) -> None:
        assert self.ht is not None and self.txn_topic is not None
        self._consume(self.ht, "rc-consumer", self.txn_topic, "read_committed")

    def _consume(self, h: History, name: str, topic: str, isolation: str) -> None:
        c = Consumer(
            {
                "bootstrap.servers": self.c.bootstrap,
                "group.id": f"n-{uuid.uuid4().hex[:6]}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": isolation,
                "topic.metadata.refresh.interval.ms": 2000,
            }
        )
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        try:
            while not self.stop.is_set():
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    self.errors[name][m.error().name()] += 1
                    continue
                h.poll(name, m.partition(), m.offset(), m.value().decode())
        finally:
            c.close()
