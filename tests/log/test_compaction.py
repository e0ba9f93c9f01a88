"""Compaction against a brute-force model: latest record per key, tombstones after
delete.retention.ms, offsets kept, active segment untouched."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from loghelpers import T0, all_records

from tidelog.log import LogConfig, PartitionLog
from tidelog.log import compression as C
from tidelog.log.records import Record, build_batch

DAY = 86_400_000


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_compaction_matches_brute_force(tmp_path_factory, seed):
    rng = random.Random(seed)
    d = tmp_path_factory.mktemp("c")
    now = [T0]
    cfg = LogConfig(cleanup_policy="compact", segment_bytes=rng.choice([300, 800, 3000]), delete_retention_ms=DAY)
    log = PartitionLog.open(d, "t", 0, cfg, lambda: now[0])
    keys = [b"k%d" % i for i in range(rng.randint(1, 12))]
    for _ in range(rng.randint(1, 80)):
        recs = [
            Record(
                rng.choice(keys),
                None if rng.random() < 0.15 else b"v%d" % rng.randrange(1000),
                T0 + rng.randint(0, 1000),
            )
            for _ in range(rng.randint(1, 4))
        ]
        log.append(build_batch(recs, codec=rng.choice([C.NONE, C.GZIP, C.ZSTD])))
    before = all_records(log)
    active_base = log.segments[-1].base_offset
    expire = rng.random() < 0.5
    now[0] = T0 + (2 * DAY if expire else 1000)
    log.compact(force=True)
    after = all_records(log)
    closed = [r for r in before if r.offset < active_base]
    last = {r.key: r.offset for r in closed}
    want = [r for r in closed if last[r.key] == r.offset and not (r.value is None and expire)] + [
        r for r in before if r.offset >= active_base
    ]
    assert [(r.offset, r.key, r.value, r.timestamp) for r in after] == [
        (r.offset, r.key, r.value, r.timestamp) for r in want
    ]
    assert log.log_end_offset == before[-1].offset + 1
    # the compacted log survives a restart and stays consistent
    log.close()
    log = PartitionLog.open(d, "t", 0, cfg, lambda: now[0], clean_shutdown=True)
    assert [(r.offset, r.value) for r in all_records(log)] == [(r.offset, r.value) for r in want]
    log.close()


def test_dirty_ratio_and_lag(open_log, clock):
    log = open_log(LogConfig(cleanup_policy="compact", segment_bytes=300, min_compaction_lag_ms=1000))
    for _i in range(20):
        log.append(build_batch([Record(b"same", b"x" * 50, T0)]))
    assert log.compact().skipped  # lag not reached
    clock.advance(2000)
    stats = log.compact()
    assert not stats.skipped and stats.records_removed > 0
    assert log.compact().skipped  # nothing dirty any more


def test_interrupted_swap_is_completed(tmp_path):
    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(segment_bytes=300), lambda: T0)
    for _i in range(10):
        log.append(build_batch([Record(b"k", b"x" * 60, T0)]))
    first = log.segments[0]
    log.close()
    data = (tmp_path / "t-0" / first.log.path.name).read_bytes()
    (tmp_path / "t-0" / (first.log.path.name + ".swap")).write_bytes(data)
    (tmp_path / "t-0" / "00000000000000000099.log.cleaned").write_bytes(b"junk")
    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(segment_bytes=300), lambda: T0, clean_shutdown=True)
    assert not list((tmp_path / "t-0").glob("*.swap")) and not list((tmp_path / "t-0").glob("*.cleaned"))
    assert len(all_records(log)) == 10
    log.close()
