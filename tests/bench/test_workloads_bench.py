"""The pure parts of bench/workloads.py: its latency histogram (bucketing, percentiles, merging
across processes) and the configuration of the 3-node KRaft cluster it compares with. Nothing
here starts a process."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from kafka_process import KafkaCluster, kraft_cluster_overrides  # noqa: E402
from latency_hist import BUCKETS, LatencyHistogram, bucket_index, bucket_range  # noqa: E402
from workloads import summarize  # noqa: E402


def test_buckets_are_contiguous_and_narrow():
    prev_hi = -1
    for i in range(BUCKETS):
        lo, hi = bucket_range(i)
        assert lo == prev_hi + 1, i
        assert bucket_index(lo) == i and bucket_index(hi) == i
        assert (hi - lo + 1) / lo <= 1 / 64 if lo >= 128 else hi == lo
        prev_hi = hi
    assert bucket_index(prev_hi + 1) == BUCKETS - 1
    assert bucket_index(10**15) == BUCKETS - 1 and bucket_index(-5) == 0


def test_percentiles_within_the_bucket_error_of_exact_ones():
    rng = random.Random(7)
    values = [int(rng.lognormvariate(7, 1.5)) for _ in range(20_000)] + [3, 0, 127, 128]
    h = LatencyHistogram()
    for v in values:
        h.record(v)
    ordered = sorted(values)
    for q in (50, 90, 99, 99.9, 100):
        exact = ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]
        got = h.percentile(q)
        assert got is not None and exact <= got <= max(exact, exact + exact / 64), (q, exact, got)
    assert h.percentile(100) == max(values) == h.max
    assert h.count == len(values) and h.mean() == sum(values) / len(values)
    assert LatencyHistogram().percentile(99) is None


def test_merged_histograms_equal_one_that_saw_every_value():
    rng = random.Random(1)
    parts = [[rng.randrange(0, 5_000_000) for _ in range(1000)] for _ in range(3)]
    whole, merged = LatencyHistogram(), LatencyHistogram()
    for part in parts:
        h = LatencyHistogram()
        for v in part:
            h.record(v)
            whole.record(v)
        merged.merge(LatencyHistogram.from_json(h.to_json()))  # as the processes send them
    assert merged.counts == whole.counts
    assert (merged.count, merged.total, merged.max) == (whole.count, whole.total, whole.max)
    assert merged.percentile(99.9) == whole.percentile(99.9)


def test_kraft_cluster_nodes_share_one_static_quorum(tmp_path):
    c = KafkaCluster(tmp_path, 3)
    props = [k.properties() for k in c.nodes]
    voters = {p["controller.quorum.voters"] for p in props}
    assert len(voters) == 1
    entries = voters.pop().split(",")
    assert [e.split("@")[0] for e in entries] == ["1", "2", "3"]
    for node, k, p in zip(("1", "2", "3"), c.nodes, props):
        assert p["node.id"] == node
        assert f"{node}@127.0.0.1:{k.controller_port}" in entries
        assert f"CONTROLLER://127.0.0.1:{k.controller_port}" in p["listeners"]
        assert p["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{k.port}"
        assert p["process.roles"] == "broker,controller"
        assert p["log.dirs"].startswith(str(tmp_path / f"kafka-{node}"))
        assert (p["default.replication.factor"], p["min.insync.replicas"]) == ("3", "2")
        assert p["offsets.topic.replication.factor"] == "3"
    assert len({k.cluster_id for k in c.nodes}) == 1 and c.nodes[0].cluster_id
    assert len({k.port for k in c.nodes} | {k.controller_port for k in c.nodes}) == 6
    assert c.bootstrap == ",".join(k.bootstrap for k in c.nodes)
    one = kraft_cluster_overrides(1, [9093])
    assert (one["default.replication.factor"], one["min.insync.replicas"]) == ("1", "1")


def test_summary_ratios_point_the_same_way():
    def run(rate: float, p99: float) -> dict:
        return {"publish_msgs_s": rate, "publish_mb_s": rate / 1000, "pub_p99_ms": p99, "cpu_us_per_record": 2.0}

    runs = {"tidelog": [run(100, 5), run(120, 4), run(110, 6)], "kafka": [run(50, 10), {"error": "x"}]}
    s = summarize(runs, ["tidelog", "kafka"])
    assert s["tidelog"]["publish_msgs_s"] == 110 and s["tidelog"]["spread"] == (120 - 100) / 110
    assert s["kafka"]["runs_failed"] == 1 and s["kafka"]["spread"] is None
    assert s["ratio"]["publish_msgs_s"] == 2.2  # tidelog / kafka
    assert s["ratio"]["pub_p99_ms"] == 2.0  # kafka / tidelog: >= 1 means tidelog no worse
    assert s["ratio"]["cpu_us_per_record"] == 1.0
