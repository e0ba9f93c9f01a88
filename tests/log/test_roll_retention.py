"""Rolling (bytes, record time, index full, offset overflow) and retention with a fake clock."""

import pytest
from loghelpers import T0, all_records, batch_of

from tidelog.log import LogConfig
from tidelog.log.errors import POLICY_VIOLATION, LogError, OffsetOutOfRangeError
from tidelog.log.records import Record, build_batch

HOUR = 3_600_000


def test_roll_on_segment_bytes(open_log):
    log = open_log(LogConfig(segment_bytes=1000))
    for _ in range(40):
        log.append(batch_of(2, T0))
    segs = log.segments
    assert len(segs) > 2 and all(s.size <= 1000 for s in segs)
    assert [s.base_offset for s in segs] == sorted(s.base_offset for s in segs)
    assert len(all_records(log)) == 80
    # files named as Kafka names them
    names = sorted(p.name for p in log.dir.iterdir())
    assert "00000000000000000000.log" in names and "00000000000000000000.index" in names
    assert "00000000000000000000.timeindex" in names


def test_roll_on_segment_ms_uses_record_time(open_log, clock):
    log = open_log(LogConfig(segment_ms=HOUR))
    log.append(batch_of(1, T0))
    clock.advance(2 * HOUR)  # wall time alone does not roll: record time does
    log.append(batch_of(1, T0 + HOUR - 1))
    assert len(log.segments) == 1
    log.append(batch_of(1, T0 + HOUR + 1))
    assert len(log.segments) == 2 and log.segments[1].base_offset == 2


def test_roll_on_full_index(open_log):
    log = open_log(LogConfig(segment_index_bytes=48, index_interval_bytes=0))
    for _ in range(20):
        log.append(batch_of(1, T0))
    assert len(log.segments) >= 3
    assert len(all_records(log)) == 20


def test_roll_on_relative_offset_overflow(open_log):
    log = open_log()
    log.append(batch_of(1, T0))
    big = build_batch([Record(b"k", b"v", T0)])
    log._next_offset = 2**31 + 5  # as if a huge gap had been appended (e.g. a follower)
    log.append(big)
    assert [s.base_offset for s in log.segments] == [0, 2**31 + 5]


def test_roll_writes_final_time_index_entry_and_trims(open_log):
    log = open_log(LogConfig(index_interval_bytes=1_000_000))
    log.append(batch_of(1, T0 + 5))
    log.append(batch_of(1, T0 + 9))
    log.roll()
    first = log.segments[0]
    assert first.time_index.last_entry() == (T0 + 9, 1)
    assert first.time_index.path.stat().st_size == 12
    assert first.offset_index.path.stat().st_size == 0
    assert log.segments[1].offset_index.path.stat().st_size == 10 * 1024 * 1024  # preallocated


def test_retention_ms_by_largest_record_timestamp(open_log, clock):
    log = open_log(LogConfig(retention_ms=10 * HOUR, segment_bytes=200))
    for i in range(12):
        log.append(batch_of(2, T0 + i * HOUR))
    n_before = len(log.segments)
    assert n_before > 3
    clock.now = T0 + 15 * HOUR
    deleted = log.apply_retention()
    assert deleted > 0 and len(log.segments) == n_before - deleted
    for s in log.segments:
        assert clock.now - s.largest_timestamp() <= 10 * HOUR or s is log.segments[-1]
    assert log.log_start_offset == log.segments[0].base_offset
    # everything expired: the active segment is rolled and deleted too, the offsets go on
    clock.now = T0 + 100 * HOUR
    log.apply_retention()
    assert len(log.segments) == 1 and log.segments[0].size == 0
    assert log.log_start_offset == log.log_end_offset == 24
    assert log.append(batch_of(1, clock.now)).first_offset == 24


def test_retention_bytes(open_log, clock):
    log = open_log(LogConfig(retention_bytes=1500, segment_bytes=500, retention_ms=-1))
    for _i in range(30):
        log.append(batch_of(2, T0))
    log.apply_retention()
    total = sum(s.size for s in log.segments)
    assert total - log.segments[-1].size <= 1500 + 500
    assert total - log.segments[0].size < 1500 or len(log.segments) == 1
    assert [r.offset for r in all_records(log)] == list(range(log.log_start_offset, 60))


def test_delete_records_moves_log_start(open_log):
    log = open_log(LogConfig(segment_bytes=500))
    for _i in range(20):
        log.append(batch_of(2, T0))
    n = len(log.segments)
    assert log.delete_records(17) == 17
    assert log.log_start_offset == 17 and len(log.segments) < n
    assert all_records(log)[0].offset == 17
    with pytest.raises(OffsetOutOfRangeError):
        log.read(16, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(41)
    assert log.delete_records(-1) == 40
    assert log.delete_records(3) == 40  # below the log start: nothing moves


def test_delete_records_refused_without_the_delete_policy(open_log):
    log = open_log(LogConfig(cleanup_policy="compact"))
    log.append(batch_of(2, T0))
    with pytest.raises(LogError) as refused:
        log.delete_records(1)
    assert refused.value.error_code == POLICY_VIOLATION and log.log_start_offset == 0


def test_deleted_segment_fd_stays_readable_until_delay(open_log, clock):
    import os

    log = open_log(LogConfig(segment_bytes=300, file_delete_delay_ms=1000))
    for _i in range(6):
        log.append(batch_of(2, T0))
    f = log.read(0, 1000, load=False)
    log.delete_records(log.segments[-1].base_offset)
    assert not f.records.path.exists()
    assert len(os.pread(f.records.fd, f.records.length, f.records.position)) == f.records.length
    clock.advance(2000)
    log.apply_retention()
    assert log._graveyard == []


def test_empty_cleanup_policy_keeps_every_segment(open_log, clock):
    """Kafka 4.x: an empty cleanup.policy list means no cleanup at all - neither retention
    deletes nor compaction, and DeleteRecords is refused as without `delete`."""
    cfg = LogConfig.from_properties({"cleanup.policy": "", "retention.ms": str(HOUR), "segment.bytes": "200"})
    assert cfg.cleanup_policy == "" and not cfg.delete and not cfg.compact
    log = open_log(cfg)
    for i in range(6):
        log.append(batch_of(2, T0 + i))
    n = len(log.segments)
    clock.now = T0 + 10 * HOUR
    assert log.apply_retention() == 0 and len(log.segments) == n and log.log_start_offset == 0
    with pytest.raises(LogError) as refused:
        log.delete_records(1)
    assert refused.value.error_code == POLICY_VIOLATION
    with pytest.raises(ValueError):
        LogConfig.from_properties({"cleanup.policy": "delete,forever"})
