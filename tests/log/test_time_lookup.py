"""Timestamp lookups against a brute-force scan, over out-of-order CreateTime timestamps and
many segments; ListOffsets -3 and the v0 offsets_before answer."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from loghelpers import T0, all_records

from tidelog.log import LogConfig, PartitionLog
from tidelog.log import compression as C
from tidelog.log.records import Record, build_batch


def brute_first_at_or_after(records, ts, start=0):
    for r in records:
        if r.offset >= start and r.timestamp >= ts:
            return r.offset, r.timestamp
    return None


def fill(log, rng, n_batches, spread):
    for _ in range(n_batches):
        n = rng.randint(1, 5)
        recs = [Record(b"k", b"v" * rng.randint(0, 40), T0 + rng.randint(0, spread)) for _ in range(n)]
        log.append(build_batch(recs, codec=rng.choice([C.NONE, C.GZIP])))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), interval=st.sampled_from([0, 64, 300, 4096]))
def test_offset_for_timestamp_matches_brute_force(tmp_path_factory, seed, interval):
    rng = random.Random(seed)
    d = tmp_path_factory.mktemp("ts")
    cfg = LogConfig(segment_bytes=rng.choice([400, 1500, 10_000]), index_interval_bytes=interval)
    log = PartitionLog.open(d, "t", 0, cfg, lambda: T0)
    fill(log, rng, rng.randint(1, 120), spread=rng.choice([10, 1000]))
    recs = all_records(log)
    targets = {r.timestamp for r in recs} | {T0 - 1, T0 + 5000, *(T0 + rng.randint(0, 1000) for _ in range(20))}
    for ts in targets:
        assert log.offset_for_timestamp(ts) == brute_first_at_or_after(recs, ts), ts
    best = max(recs, key=lambda r: (r.timestamp, -r.offset))
    assert log.offset_of_max_timestamp() == (best.offset, best.timestamp)
    # after reopening (indexes from disk, final time-index entries) and after DeleteRecords
    log.close()
    log = PartitionLog.open(d, "t", 0, cfg, lambda: T0, clean_shutdown=True)
    start = recs[len(recs) // 2].offset
    log.delete_records(start)
    for ts in list(targets)[:10]:
        assert log.offset_for_timestamp(ts) == brute_first_at_or_after(recs, ts, start), ts
    log.close()


def test_many_segments_and_rebuilt_indexes(tmp_path):
    rng = random.Random(7)
    cfg = LogConfig(segment_bytes=600, index_interval_bytes=100)
    log = PartitionLog.open(tmp_path, "t", 0, cfg, lambda: T0)
    fill(log, rng, 400, spread=100_000)
    assert len(log.segments) > 30
    recs = all_records(log)
    log.close()
    for p in (tmp_path / "t-0").glob("*.timeindex"):
        p.unlink()
    log = PartitionLog.open(tmp_path, "t", 0, cfg, lambda: T0, clean_shutdown=True)
    for ts in range(T0, T0 + 100_001, 997):
        assert log.offset_for_timestamp(ts) == brute_first_at_or_after(recs, ts)
    log.close()


def test_offsets_before(open_log, clock):
    cfg = LogConfig(segment_bytes=300)
    log = open_log(cfg)
    for i in range(10):
        log.append(build_batch([Record(b"k", b"x" * 100, T0 + i * 1000)]))
    clock.now = T0 + 100_000
    segs = log.segments
    assert len(segs) > 3
    bases = [s.base_offset for s in segs]
    assert log.offsets_before(-1, 1) == [log.log_end_offset]
    assert log.offsets_before(-1, 100) == [log.log_end_offset] + bases[::-1]
    assert log.offsets_before(-2, 100) == [bases[0]]
    # every segment whose largest timestamp <= T, newest first, plus nothing newer
    ts = segs[2].max_timestamp
    assert log.offsets_before(ts, 100) == sorted(bases[:3], reverse=True)
    assert log.offsets_before(ts, 2) == sorted(bases[1:3], reverse=True)
    assert log.offsets_before(T0 - 1, 10) == []
    assert log.offsets_before(clock() + 1, 1) == [log.log_end_offset]


def test_list_offset_sentinels(open_log):
    log = open_log()
    assert log.list_offset(-3) is None and log.offset_for_timestamp(0) is None
    log.append(build_batch([Record(b"a", b"1", T0 + 5), Record(b"b", b"2", T0 + 9), Record(b"c", b"3", T0 + 1)]))
    assert log.list_offset(-1) == (3, -1)
    assert log.list_offset(-2) == (0, -1)
    assert log.list_offset(-3) == (1, T0 + 9)
    assert log.list_offset(T0 + 6) == (1, T0 + 9)
    assert log.list_offset(T0 + 10) is None
