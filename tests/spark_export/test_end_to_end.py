"""End to end: real clients produce through a real broker, `tidelog export` is killed mid-publish,
re-run, then run again after more data; Spark SQL sees exactly the committed records once each,
and `<topic>_latest` equals a brute-force compaction."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

pytest.importorskip("pyspark")
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.cli.client import KafkaClient

BROKER_OVERRIDES = {
    "transaction.state.log.num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "log.cleaner.enable": "false",  # the broker's own compaction would make the main table depend on timing
}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
HOUR = 3_600_000
TOPIC_CONFIG = {"segment.bytes": "4000", "segment.ms": str(HOUR)}


class Sent:
    """What was produced, with the (partition, offset) each record got, and its fate."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, int, int], tuple] = {}  # (topic, partition, offset) -> row
        self.state: dict[tuple[str, int, int], str] = {}
        self.last_sentinel = 0

    def callback(self, state: str, headers=None):
        headers = tuple(headers or ())  # delivery reports do not carry them

        def on_delivery(err, msg):
            assert err is None, err
            ts = msg.timestamp()[1]
            k = (msg.topic(), msg.partition(), msg.offset())
            self.rows[k] = (msg.partition(), msg.offset(), msg.key(), msg.value(), ts, headers)
            self.state[k] = state

        return on_delivery

    def committed(self, topic: str) -> list[tuple]:
        return sorted(r for k, r in self.rows.items() if k[0] == topic and self.state[k] == "committed")


def produce_round(bootstrap: str, sent: Sent, t0: int, round_no: int) -> int:
    """Plain producers with every codec, and a transactional producer committing and aborting,
    into `orders` and the compacted `profiles`; timestamps spread over two days from t0."""
    clock = t0
    for c, codec in enumerate(CODECS):
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "compression.type": codec,
                "linger.ms": 20,
                "enable.idempotence": c % 2 == 0,
            }
        )
        for i in range(60):
            clock += HOUR // 3
            topic = "orders" if i % 3 else "profiles"
            key = b"k%02d" % ((i * 7 + c + round_no) % 25)
            value = (
                None
                if topic == "profiles" and i % 17 == 0
                else b"%s-%d-%d-%s" % (codec.encode(), round_no, i, b"x" * (i % 40))
            )
            headers = [("codec", codec.encode()), ("n", None)] if i % 4 == 0 else None
            p.produce(
                topic,
                value=value,
                key=key,
                partition=i % 2,
                timestamp=clock,
                headers=headers,
                on_delivery=sent.callback("committed", headers),
            )
        assert p.flush(30) == 0
    tp = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"exporter-test-{round_no}", "linger.ms": 5})
    tp.init_transactions(30)
    for n in range(4):
        commit = n % 2 == 0
        tp.begin_transaction()
        for i in range(20):
            clock += 60_000
            topic = "orders" if i % 2 else "profiles"
            tp.produce(
                topic,
                key=b"k%02d" % ((i + n) % 25),
                value=b"txn-%d-%d-%d" % (round_no, n, i),
                partition=(i // 2) % 2,
                timestamp=clock,
                on_delivery=sent.callback("committed" if commit else "aborted"),
            )
        tp.flush(30)
        (tp.commit_transaction if commit else tp.abort_transaction)(30)
    tp.flush(30)
    return clock


def roll_all(bootstrap: str, sent: Sent, after: int) -> None:
    """Close every active segment: a record two segment.ms later than anything before it rolls
    the segment (it stays alone in the new active segment, which export never reads). Markers
    carry the broker's clock, earlier sentinels their own timestamps: later than both."""
    ts = max(after, int(time.time() * 1000), sent.last_sentinel) + 2 * HOUR
    sent.last_sentinel = ts
    for k, state in sent.state.items():
        if state == "sentinel":  # the previous ones: exported once a later roll closes them
            sent.state[k] = "committed"
    p = Producer({"bootstrap.servers": bootstrap})
    for topic in ("orders", "profiles"):
        for partition in (0, 1):
            p.produce(
                topic,
                key=b"sentinel",
                value=b"sentinel",
                partition=partition,
                timestamp=ts,
                on_delivery=sent.callback("sentinel"),
            )
    assert p.flush(30) == 0


def table_rows(spark, name: str) -> list[tuple]:
    return sorted(
        (
            r.partition,
            r.offset,
            r.key and bytes(r.key),
            r.value and bytes(r.value),
            int(r.timestamp.replace(tzinfo=dt.UTC).timestamp() * 1000),
            tuple((h.key, h.value and bytes(h.value)) for h in r.headers),
        )
        for r in spark.table(name).collect()
    )


def brute_force_latest(rows: list[tuple]) -> list[tuple]:
    latest = {}
    for r in sorted(rows, key=lambda r: (r[0], r[1])):
        if r[2] is not None:
            latest[(r[0], r[2])] = r
    return sorted(r for r in latest.values() if r[3] is not None)


def assert_once(spark, name: str, expected: list[tuple]) -> None:
    got = table_rows(spark, name)
    assert not [k for k, n in Counter(g[:2] for g in got).items() if n > 1], "duplicate rows"
    assert got == expected


def test_produce_kill_export_rerun_and_more(catalog, broker_factory, tmp_path):
    spark = catalog
    broker = broker_factory(BROKER_OVERRIDES)
    with KafkaClient(broker.bootstrap) as kc:
        assert {22, 26} <= set(kc.versions), "the broker must route InitProducerId and EndTxn"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics(
        [
            NewTopic("orders", 2, 1, config=TOPIC_CONFIG),
            NewTopic("profiles", 2, 1, config={**TOPIC_CONFIG, "cleanup.policy": "compact"}),
        ]
    ).values():
        f.result(30)
    sent = Sent()
    t0 = int(time.time() * 1000) - 10 * 24 * HOUR
    end = produce_round(broker.bootstrap, sent, t0, 0)
    roll_all(broker.bootstrap, sent, end)
    assert "aborted" in sent.state.values()

    # `tidelog export` of orders, killed (os._exit, like kill -9) after moving its first file into
    # the table; the in-process run then recovers and exports both topics.
    wh, data = tmp_path / "wh", broker.data_dir
    cmd = [
        sys.executable,
        "-m",
        "tidelog",
        "export",
        "--log-dirs",
        str(data),
        "--warehouse",
        str(wh),
        "--topics",
        "orders",
        "--shuffle-partitions",
        "2",
        "--driver-memory",
        "512m",
    ]
    env = {
        **os.environ,
        "TIDELOG_EXPORT_CRASH_AT": "mid-publish:hard",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 137, res.stderr[-3000:]
    assert list((wh / "tidelog.db" / "orders").rglob("part-*.parquet")), "killed before publishing anything"

    from tidelog.spark_export.job import ExportJob, ExportOptions

    def run():
        return {s.topic: s for s in ExportJob(spark, ExportOptions([data], wh, topics=["orders", "profiles"])).run()}

    first = run()  # recovers (undoes the killed run), then exports
    assert first["orders"].rows == len(sent.committed("orders"))
    assert_once(spark, "tidelog.orders", sent.committed("orders"))
    assert_once(spark, "tidelog.profiles", sent.committed("profiles"))
    assert table_rows(spark, "tidelog.profiles_latest") == brute_force_latest(sent.committed("profiles"))

    end = produce_round(broker.bootstrap, sent, end + 3 * HOUR, 1)
    roll_all(broker.bootstrap, sent, end)
    second = run()
    assert 0 < second["orders"].rows < len(sent.committed("orders"))  # only the new segments
    assert_once(spark, "tidelog.orders", sent.committed("orders"))
    assert_once(spark, "tidelog.profiles", sent.committed("profiles"))
    assert table_rows(spark, "tidelog.profiles_latest") == brute_force_latest(sent.committed("profiles"))
    codecs = spark.sql(
        "SELECT DISTINCT h.value FROM tidelog.orders LATERAL VIEW explode(headers) AS h WHERE h.key = 'codec'"
    ).collect()
    assert sorted(bytes(r.value) for r in codecs) == sorted(c.encode() for c in CODECS)
