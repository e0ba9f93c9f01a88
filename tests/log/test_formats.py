"""Record batch v2, compression and legacy v0/v1 conversions, both ways, every codec."""

import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.log import compression as C
from tidelog.log import legacy
from tidelog.log.errors import LogAppendError, LogError
from tidelog.log.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    BatchHeader,
    Record,
    batch_crc_ok,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
    parse_control_record,
    set_base_offset,
    set_log_append_time,
)

CODECS = [C.NONE, C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD]

records_st = st.lists(
    st.builds(
        Record,
        key=st.none() | st.binary(max_size=20),
        value=st.none() | st.binary(max_size=200),
        timestamp=st.integers(0, 2**41),
        headers=st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=3),
    ),
    min_size=1,
    max_size=20,
)


def strip(recs):
    return [(r.key, r.value, r.timestamp, list(r.headers)) for r in recs]


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=25, deadline=None)
@given(recs=records_st, base=st.integers(0, 2**40))
def test_v2_round_trip(codec, recs, base):
    b = build_batch(recs, base_offset=base, codec=codec, producer_id=7, producer_epoch=1, base_sequence=3)
    h = BatchHeader(b)
    assert h.magic == 2 and h.compression == codec and h.records_count == len(recs)
    assert h.size == len(b) and h.base_offset == base and h.last_offset_delta == len(recs) - 1
    assert h.max_timestamp == max(r.timestamp for r in recs) and h.first_timestamp == recs[0].timestamp
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 1, 3)
    assert h.is_valid()
    out = decode_records(b)
    assert strip(out) == strip(recs)
    assert [r.offset for r in out] == list(range(base, base + len(recs)))


def test_header_layout_offsets():
    b = bytearray(build_batch([Record(b"k", b"v", 5)]))
    assert b[16] == 2  # magic at byte 16
    assert struct.unpack_from(">i", b, 8)[0] == len(b) - LOG_OVERHEAD
    set_base_offset(b, 0, 12345)  # outside the CRC
    assert batch_crc_ok(b) and BatchHeader(b).base_offset == 12345
    b[RECORDS_OFFSET] ^= 1
    assert not batch_crc_ok(b)


@pytest.mark.parametrize("codec", CODECS)
def test_log_append_time_rewrite_keeps_records(codec):
    recs = [Record(b"a", b"x" * 100, 10), Record(b"b", None, 20)]
    b = bytearray(build_batch(recs, codec=codec))
    before = bytes(b[RECORDS_OFFSET:])
    set_log_append_time(b, 0, 999)
    h = BatchHeader(b)
    assert h.is_valid() and h.timestamp_type == LOG_APPEND_TIME and h.max_timestamp == 999
    assert bytes(b[RECORDS_OFFSET:]) == before  # no recompression
    assert [r.timestamp for r in decode_records(b)] == [999, 999]


def test_iter_batches_stops_before_partial():
    a = build_batch([Record(b"1", b"1", 1)])
    b = build_batch([Record(b"2", b"2", 2)], base_offset=1)
    buf = a + b + b[:30]
    assert [p for p, _ in iter_batches(buf)] == [0, len(a)]


def test_control_batch():
    b = build_control_batch(CONTROL_ABORT, producer_id=5, producer_epoch=2, coordinator_epoch=9, timestamp=77)
    h = BatchHeader(b)
    assert h.is_control and h.is_transactional and h.producer_id == 5 and h.producer_epoch == 2
    (r,) = decode_records(b)
    assert r.key == struct.pack(">hh", 0, 0) and r.value == struct.pack(">hi", 0, 9)  # ABORT is type 0
    assert parse_control_record(r) == (CONTROL_ABORT, 9)
    r2 = decode_records(build_control_batch(CONTROL_COMMIT, 5, 2, 1, 1))[0]
    assert parse_control_record(r2)[0] == CONTROL_COMMIT


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=15, deadline=None)
@given(data=st.binary(max_size=100_000))
def test_compression_round_trip(codec, data):
    assert C.decompress(codec, C.compress(codec, data)) == data


def test_snappy_xerial_and_raw():
    data = b"hello snappy " * 10_000
    framed = C.compress(C.SNAPPY, data)
    assert framed.startswith(C.XERIAL_MAGIC)
    assert C.decompress(C.SNAPPY, framed) == data
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert C.decompress(C.SNAPPY, raw) == data


def test_gzip_multi_member():
    import gzip

    assert C.decompress(C.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_corrupt_compressed_data_is_a_log_error():
    with pytest.raises(LogError):
        C.decompress(C.LZ4, b"not lz4 at all")


legacy_msgs_st = st.lists(
    st.tuples(st.none() | st.binary(max_size=10), st.none() | st.binary(max_size=50), st.integers(0, 2**41)),
    min_size=1,
    max_size=10,
)
LEGACY_CODECS = [C.NONE, C.GZIP, C.SNAPPY, C.LZ4]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(msgs=legacy_msgs_st)
def test_legacy_to_v2(magic, codec, msgs):
    ms = legacy.build_message_set(msgs, magic, codec)
    v2 = legacy.to_v2(ms)
    batches = list(iter_batches(v2))
    if codec:
        assert len(batches) == 1 and batches[0][1].compression == codec
    recs = [r for p, _ in batches for r in decode_records(v2, p)]
    want_ts = [ts if magic == 1 else -1 for _, _, ts in msgs]
    assert [(r.key, r.value, r.timestamp) for r in recs] == [(k, v, t) for (k, v, _), t in zip(msgs, want_ts)]
    assert [r.offset for r in recs] == list(range(len(msgs)))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(recs=records_st, base=st.integers(0, 2**40))
def test_downconvert(magic, codec, recs, base):
    v2 = build_batch(recs, base_offset=base, codec=codec) + build_control_batch(0, 1, 1, 1, 1, base + len(recs))
    ms = legacy.downconvert(v2, magic)
    msgs = legacy.decode_message_set(ms)
    assert [m.offset for m in msgs] == list(range(base, base + len(recs)))  # control batch dropped
    want_ts = [r.timestamp if magic == 1 else -1 for r in recs]
    assert [(m.key, m.value, m.timestamp) for m in msgs] == [(r.key, r.value, t) for r, t in zip(recs, want_ts)]
    assert all(m.magic == magic for m in msgs)
    if codec:
        (wrapper,) = legacy._parse_shallow(ms)
        assert wrapper.codec == codec and wrapper.offset == base + len(recs) - 1
    # and back up again: the same records
    back = legacy.to_v2(ms)
    got = [r for p, _ in iter_batches(back) for r in decode_records(back, p)]
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in recs]


def test_downconvert_keeps_gaps_and_log_append_time():
    recs = [Record(b"a", b"1", 5, offset=10), Record(b"b", b"2", 6, offset=13)]
    b = bytearray(build_batch(recs, base_offset=10, codec=C.GZIP))
    set_log_append_time(b, 0, 1234)
    msgs = legacy.decode_message_set(legacy.downconvert(b, 1))
    assert [(m.offset, m.timestamp) for m in msgs] == [(10, 1234), (13, 1234)]


def test_downconvert_zstd_refused():
    with pytest.raises(LogError) as e:
        legacy.downconvert(build_batch([Record(b"a", b"b", 1)], codec=C.ZSTD), 1)
    assert e.value.error_code == 76


def test_legacy_crc_mismatch():
    ms = bytearray(legacy.build_message_set([(b"k", b"v", 1)], 1))
    ms[-1] ^= 0xFF
    with pytest.raises(LogAppendError) as e:
        legacy.to_v2(ms)
    assert e.value.error_code == 2


def test_legacy_minimum_sizes():
    assert len(legacy.encode_message(0, 0, -1, None, None)) == legacy.MIN_MESSAGE_SIZE_V0 == 14
    assert len(legacy.encode_message(1, 0, 0, None, None)) == legacy.MIN_MESSAGE_SIZE_V1 == 22
    m = legacy.encode_entry(0, legacy.encode_message(0, 0, -1, b"key", b"value"))
    assert len(m) == 34
