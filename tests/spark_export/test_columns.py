"""The export's columnar decoder agrees with the log's reference decoder, record for record."""

from __future__ import annotations

import random

import pytest

from tidelog.log import compression
from tidelog.log import records as rb
from tidelog.log.errors import CorruptRecordError
from tidelog.spark_export.columns import Columns, append_batch

T0 = 1_735_689_600_000


def _records(rng: random.Random, n: int) -> list[rb.Record]:
    out = []
    for i in range(n):
        key = None if i % 7 == 0 else rng.randbytes(rng.choice([0, 3, 200]))
        value = None if i % 11 == 0 else rng.randbytes(rng.choice([0, 1, 63, 64, 300, 20000]))
        headers = [(f"h{j}-é", None if j == 2 else rng.randbytes(rng.choice([0, 5, 130]))) for j in range(i % 4)]
        ts = T0 + rng.randrange(-(10**9), 10**9)  # out of order, deltas of every varint width
        out.append(rb.Record(key, value, ts, headers))
    return out


def _reference(batch: bytes, lo: int, hi: int, t_lo, t_hi) -> Columns:
    h = rb.HEADER.unpack_from(batch, 0)
    c = Columns()
    for r in rb.decode_records(batch, 0):
        if not lo <= r.offset < hi:
            continue
        if (t_lo is not None and r.timestamp < t_lo) or (t_hi is not None and r.timestamp >= t_hi):
            continue
        c.offsets.append(r.offset)
        c.timestamps.append(r.timestamp)
        c.keys.append(r.key)
        c.values.append(r.value)
        for hk, hv in r.headers:
            c.h_keys.append(hk)
            c.h_values.append(hv)
        c.h_offsets.append(len(c.h_keys))
        c.ts_types.append(1 if h[rb.H_ATTRIBUTES] & rb.TIMESTAMP_TYPE_MASK else 0)
        c.pids.append(h[rb.H_PRODUCER_ID])
        c.txn.append(bool(h[rb.H_ATTRIBUTES] & rb.TRANSACTIONAL_FLAG_MASK))
    return c


def _as_tuple(c: Columns):
    return tuple(getattr(c, name) for name in Columns.__slots__)


@pytest.mark.parametrize("codec", sorted(compression.CODEC_NAMES))
@pytest.mark.parametrize("ts_type", [rb.CREATE_TIME, rb.LOG_APPEND_TIME])
def test_columns_match_reference_decoder(codec, ts_type):
    rng = random.Random(codec * 10 + ts_type)
    batch = rb.build_batch(
        _records(rng, 300),
        base_offset=1000,
        codec=codec,
        timestamp_type=ts_type,
        producer_id=42,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )
    h = rb.HEADER.unpack_from(batch, 0)
    for lo, hi, t_lo, t_hi in [
        (0, 1 << 62, None, None),
        (1100, 1200, None, None),
        (0, 1 << 62, T0 - 10**8, T0 + 10**8),
        (1050, 1250, T0, None),
    ]:
        got = Columns()
        append_batch(got, batch, 0, h, lo, hi, t_lo, t_hi)
        want = _reference(batch, lo, hi, t_lo, t_hi)
        assert _as_tuple(got) == _as_tuple(want)
        if ts_type == rb.CREATE_TIME or t_lo is None:  # LogAppendTime: every record has maxTimestamp
            assert len(got.offsets) > 0


def test_malformed_batch_raises_and_leaves_columns_unchanged():
    rng = random.Random(5)
    good = rb.build_batch(_records(rng, 20), base_offset=0)
    cols = Columns()
    append_batch(cols, good, 0, rb.HEADER.unpack_from(good, 0), 0, 1 << 62, None, None)
    before = _as_tuple(cols)
    before = tuple(list(x) for x in before)
    bad = bytearray(rb.build_batch(_records(rng, 20), base_offset=20))
    h = list(rb.HEADER.unpack_from(bad, 0))
    h[rb.H_RECORDS_COUNT] += 1  # one more record than present: decoding runs off the end
    rb.HEADER.pack_into(bad, 0, *h)
    with pytest.raises(CorruptRecordError):
        append_batch(cols, bytes(bad), 0, tuple(h), 0, 1 << 62, None, None)
    assert _as_tuple(cols) == before


def _no_headers(rng: random.Random, n: int) -> list[rb.Record]:
    return [rb.Record(r.key, r.value, r.timestamp, []) for r in _records(rng, n)]


@pytest.mark.parametrize("codec", sorted(compression.CODEC_NAMES))
@pytest.mark.parametrize("with_headers", [False, True])
def test_compiled_decoder_builds_the_same_arrow_batches(codec, with_headers):
    """The numba fast path (fastdecode.py) against the pure-Python decoder, Arrow batch for Arrow
    batch: several batches in one set of columns, bounds straddling them, null keys and values,
    headers (decoded by the reference inside the fast columns), LogAppendTime."""
    from tidelog.spark_export.fastdecode import DECODER, FastColumns, append_batch_fast
    from tidelog.spark_export.segments import arrow_schema

    assert DECODER == "numba"  # tidelog[spark] brings numba: the fast path is what runs
    rng = random.Random(codec * 3 + with_headers)
    make = _records if with_headers else _no_headers
    batches = [
        rb.build_batch(
            make(rng, 120),
            base_offset=1000 + 120 * i,
            codec=codec,
            timestamp_type=rb.LOG_APPEND_TIME if i == 1 else rb.CREATE_TIME,
            producer_id=7 + i,
            producer_epoch=0,
            base_sequence=0,
            transactional=i == 2,
        )
        for i in range(3)
    ]
    schema = arrow_schema()
    for lo, hi, t_lo, t_hi in [(0, 1 << 62, None, None), (1050, 1300, None, None), (0, 1 << 62, T0, None)]:
        ref, fast = Columns(), FastColumns()
        for b in batches:
            h = rb.HEADER.unpack_from(b, 0)
            append_batch(ref, b, 0, h, lo, hi, t_lo, t_hi)
            append_batch_fast(fast, b, 0, h, lo, hi, t_lo, t_hi)
        assert len(fast) == len(ref) > 0
        assert fast.to_arrow("t", 3, schema).equals(ref.to_arrow("t", 3, schema))


def test_compiled_decoder_refuses_a_malformed_batch():
    from tidelog.spark_export.fastdecode import FastColumns, append_batch_fast

    rng = random.Random(9)
    bad = bytearray(rb.build_batch(_no_headers(rng, 20), base_offset=0))
    h = list(rb.HEADER.unpack_from(bad, 0))
    h[rb.H_RECORDS_COUNT] += 1
    rb.HEADER.pack_into(bad, 0, *h)
    cols = FastColumns()
    with pytest.raises(CorruptRecordError):
        append_batch_fast(cols, bytes(bad), 0, tuple(h), 0, 1 << 62, None, None)
    assert len(cols) == 0
