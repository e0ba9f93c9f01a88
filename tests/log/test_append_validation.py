"""Append validation error codes, all-or-nothing, LogAppendTime, legacy input, reads."""

import struct

import pytest
from loghelpers import T0, all_records, batch_of

from tidelog.log import LogAppendError, LogConfig, OffsetOutOfRangeError, legacy
from tidelog.log import compression as C
from tidelog.log.records import (
    CRC_OFFSET,
    RECORDS_COUNT_OFFSET,
    BatchHeader,
    Record,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
)


def codes(log, data, **kw):
    with pytest.raises(LogAppendError) as e:
        log.append(data, **kw)
    return e.value.error_code


def test_error_codes(open_log):
    log = open_log(LogConfig(max_message_bytes=2000, message_timestamp_difference_max_ms=60_000))
    good = batch_of(3, T0)
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    assert codes(log, bytes(bad_crc)) == 2
    assert codes(log, good[:-5]) == 2  # truncated
    bad_magic = bytearray(good)
    bad_magic[16] = 3
    assert codes(log, bytes(bad_magic)) == 2
    bad_count = bytearray(good)
    struct.pack_into(">i", bad_count, RECORDS_COUNT_OFFSET, 5)
    from tidelog.log.records import compute_crc

    struct.pack_into(">I", bad_count, CRC_OFFSET, compute_crc(bad_count))
    assert codes(log, bytes(bad_count)) == 2
    assert codes(log, build_batch([Record(b"k", b"x" * 3000, T0)])) == 10
    assert codes(log, build_control_batch(0, 1, 1, 1, T0)) == 87
    assert codes(log, batch_of(1, T0 - 61_000)) == 32
    assert codes(log, batch_of(1, T0 + 61_000)) == 32
    assert log.log_end_offset == 0 and log.size == 0
    info = log.append(good)
    assert (info.first_offset, info.last_offset, info.log_append_time, info.num_records) == (0, 2, -1, 3)
    assert log.append_control(1, producer_id=1, producer_epoch=0, coordinator_epoch=0).first_offset == 3


def test_record_set_is_all_or_nothing(open_log):
    log = open_log(LogConfig(message_timestamp_difference_max_ms=1000))
    data = batch_of(2, T0) + batch_of(2, T0 - 10_000)  # second batch has a bad timestamp
    with pytest.raises(LogAppendError):
        log.append(data)
    assert log.log_end_offset == 0 and log.size == 0
    assert log.append(batch_of(2, T0) + batch_of(2, T0)).last_offset == 3


def test_segment_bytes_limit(open_log):
    log = open_log(LogConfig(segment_bytes=200))
    assert codes(log, batch_of(30, T0)) == 18


def test_log_append_time(open_log, clock):
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append(batch_of(3, 5, codec=C.LZ4), now_ms=T0 + 7)
    assert info.log_append_time == T0 + 7 and info.max_timestamp == T0 + 7
    data = log.read(0, 10_000).data
    h = BatchHeader(data)
    assert h.timestamp_type == 1 and h.max_timestamp == T0 + 7 and h.is_valid()
    assert [r.timestamp for r in decode_records(data)] == [T0 + 7] * 3


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [C.NONE, C.GZIP, C.SNAPPY, C.LZ4])
def test_legacy_produce(open_log, magic, codec):
    log = open_log()
    log.append(batch_of(2, T0))
    ms = legacy.build_message_set([(b"a", b"1", T0), (None, b"2", T0 + 1)], magic, codec)
    info = log.append(ms)
    assert (info.first_offset, info.last_offset) == (2, 3)
    recs = all_records(log)
    assert [(r.offset, r.key, r.value) for r in recs[2:]] == [(2, b"a", b"1"), (3, None, b"2")]
    assert [r.timestamp for r in recs[2:]] == ([T0, T0 + 1] if magic else [-1, -1])
    down = legacy.decode_message_set(legacy.downconvert(log.read(2, 1 << 20).data, magic))
    assert [(m.offset, m.value) for m in down] == [(2, b"1"), (3, b"2")]


def test_read_semantics(open_log):
    log = open_log(LogConfig(index_interval_bytes=0))
    sizes = []
    for i in range(10):
        b = batch_of(3, T0 + i)
        sizes.append(len(b))
        log.append(b)
    # mid-batch fetch returns the whole batch containing it
    f = log.read(4, 10_000)
    assert f.records.first_offset == 3 and f.records.last_offset == 29
    # byte limit: whole batches only
    f = log.read(0, sizes[0] * 2 + 10)
    assert f.records.length == sizes[0] * 2 and f.records.last_offset == 5
    # min_one: one whole batch even when larger than max_bytes
    f = log.read(0, 1)
    assert f.records.length == sizes[0]
    assert log.read(0, 1, min_one=False).records is None
    # max_offset (HW / LSO)
    f = log.read(0, 10_000, max_offset=7)
    assert f.records.last_offset == 5
    assert log.read(30, 100).records is None
    with pytest.raises(OffsetOutOfRangeError):
        log.read(31, 100)
    # bytes and fd agree
    import os

    f = log.read(6, 100, load=False)
    assert os.pread(f.records.fd, f.records.length, f.records.position) == f.data
    assert [p for p, _ in iter_batches(f.data)] == [0]


def test_flush_and_flush_messages(open_log):
    log = open_log(LogConfig(flush_messages=5))
    assert not log.append(batch_of(3, T0)).flush_needed
    assert log.append(batch_of(3, T0)).flush_needed
    log.flush()
    assert log.recovery_point == 6
    assert not log.append(batch_of(1, T0)).flush_needed


def test_append_listener_and_before_write(open_log):
    log = open_log()
    seen = []
    log.on_append = lambda lg: seen.append(lg.log_end_offset)
    log.append(batch_of(2, T0))

    def refuse(v):
        raise LogAppendError(45, "out of order sequence")

    with pytest.raises(LogAppendError):
        log.append(batch_of(2, T0), before_write=refuse)
    assert seen == [2] and log.log_end_offset == 2


def test_config_from_properties():
    cfg = LogConfig.from_properties(
        {"retention.ms": "1000", "cleanup.policy": "compact,delete", "min.insync.replicas": "2"}
    )
    assert cfg.retention_ms == 1000 and cfg.compact and cfg.delete
    with pytest.raises(ValueError, match="segment.bytes"):
        LogConfig.from_properties({"segment.bytes": "abc"})
    with pytest.raises(ValueError, match="message.timestamp.type"):
        LogConfig.from_properties({"message.timestamp.type": "Now"})
    assert LogConfig.from_properties(cfg.to_properties()) == cfg
