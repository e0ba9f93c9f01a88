"""Record batch v2 (magic 2): the on-disk and on-wire unit of the log. Pure functions over bytes.

Byte layout of one batch (big-endian; offsets are from the start of the batch)::

    offset  size  field
    0       8     baseOffset            first offset of the batch (assigned by the broker)
    8       4     batchLength           bytes after this field (whole batch = 12 + batchLength)
    12      4     partitionLeaderEpoch
    16      1     magic                 2
    17      4     crc                   CRC32C (Castagnoli) of bytes 21 .. end of batch
    21      2     attributes            see the table below
    23      4     lastOffsetDelta       last offset - baseOffset
    27      8     firstTimestamp        timestamp of the first record
    35      8     maxTimestamp          largest record timestamp (or the LogAppendTime)
    43      8     producerId            -1 when not idempotent
    51      2     producerEpoch
    53      4     baseSequence
    57      4     recordsCount
    61      ...   records               compressed as a whole when the codec is not none

The CRC covers attributes through the end of the batch, so the broker may rewrite baseOffset and
partitionLeaderEpoch without recomputing it; a rewrite of attributes or maxTimestamp
(LogAppendTime) needs a new CRC.

Attribute bits::

    bit   meaning
    0-2   compression codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
    3     timestamp type: 0 CreateTime, 1 LogAppendTime
    4     transactional
    5     control batch (transaction markers; never written by clients)
    6     has delete horizon (set by the cleaner, KIP-534)
    7-15  unused

One record inside the (decompressed) records section::

    length          varint (zigzag) bytes after this field
    attributes      int8 (unused)
    timestampDelta  varlong, from firstTimestamp
    offsetDelta     varint, from baseOffset
    keyLength       varint, -1 for a null key
    key             bytes
    valueLength     varint, -1 for a null value
    value           bytes
    headersCount    varint
    headers         headerKeyLength varint, headerKey utf-8, headerValueLength varint (-1 null), value

Control records (attribute bit 5): key = version int16 (0) + type int16 (0 ABORT, 1 COMMIT, as Kafka's
ControlRecordType and every client have it; KIP-98's text has them the other way round);
value = version int16 (0) + coordinator epoch int32.

The hot path (append, read) touches only headers (`BatchHeader`, `HEADER.unpack_from`);
`decode_records` and `build_batch` are for the features that need records.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from crc32c import crc32c

from . import compression
from .errors import CorruptRecordError

# Field offsets, chained: each is the previous offset plus the previous length.
BASE_OFFSET_OFFSET = 0
BASE_OFFSET_LENGTH = 8
LENGTH_OFFSET = BASE_OFFSET_OFFSET + BASE_OFFSET_LENGTH
LENGTH_LENGTH = 4
PARTITION_LEADER_EPOCH_OFFSET = LENGTH_OFFSET + LENGTH_LENGTH
PARTITION_LEADER_EPOCH_LENGTH = 4
MAGIC_OFFSET = PARTITION_LEADER_EPOCH_OFFSET + PARTITION_LEADER_EPOCH_LENGTH
MAGIC_LENGTH = 1
CRC_OFFSET = MAGIC_OFFSET + MAGIC_LENGTH
CRC_LENGTH = 4
ATTRIBUTES_OFFSET = CRC_OFFSET + CRC_LENGTH
ATTRIBUTES_LENGTH = 2
LAST_OFFSET_DELTA_OFFSET = ATTRIBUTES_OFFSET + ATTRIBUTES_LENGTH
LAST_OFFSET_DELTA_LENGTH = 4
FIRST_TIMESTAMP_OFFSET = LAST_OFFSET_DELTA_OFFSET + LAST_OFFSET_DELTA_LENGTH
FIRST_TIMESTAMP_LENGTH = 8
MAX_TIMESTAMP_OFFSET = FIRST_TIMESTAMP_OFFSET + FIRST_TIMESTAMP_LENGTH
MAX_TIMESTAMP_LENGTH = 8
PRODUCER_ID_OFFSET = MAX_TIMESTAMP_OFFSET + MAX_TIMESTAMP_LENGTH
PRODUCER_ID_LENGTH = 8
PRODUCER_EPOCH_OFFSET = PRODUCER_ID_OFFSET + PRODUCER_ID_LENGTH
PRODUCER_EPOCH_LENGTH = 2
BASE_SEQUENCE_OFFSET = PRODUCER_EPOCH_OFFSET + PRODUCER_EPOCH_LENGTH
BASE_SEQUENCE_LENGTH = 4
RECORDS_COUNT_OFFSET = BASE_SEQUENCE_OFFSET + BASE_SEQUENCE_LENGTH
RECORDS_COUNT_LENGTH = 4
RECORDS_OFFSET = RECORDS_COUNT_OFFSET + RECORDS_COUNT_LENGTH

LOG_OVERHEAD = LENGTH_OFFSET + LENGTH_LENGTH  # 12: baseOffset + batchLength
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET  # 61: a batch with no records
MAGIC_V2 = 2

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1

CONTROL_ABORT = 0  # Kafka's ControlRecordType: ABORT(0), COMMIT(1)
CONTROL_COMMIT = 1

# The whole header in one call: baseOffset .. recordsCount (61 bytes).
HEADER = struct.Struct(">qiibIhiqqqhii")
assert HEADER.size == RECORD_BATCH_OVERHEAD
# Indices into HEADER.unpack_from(...) tuples, for hot paths that unpack once.
H_BASE_OFFSET, H_LENGTH, H_LEADER_EPOCH, H_MAGIC, H_CRC, H_ATTRIBUTES = 0, 1, 2, 3, 4, 5
H_LAST_OFFSET_DELTA, H_FIRST_TS, H_MAX_TS, H_PRODUCER_ID, H_PRODUCER_EPOCH = 6, 7, 8, 9, 10
H_BASE_SEQUENCE, H_RECORDS_COUNT = 11, 12

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_OFFSET_LENGTH = struct.Struct(">qi")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class BatchHeader:
    """Zero-copy view of one batch header inside a buffer; each property reads its field."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos

    def _get(self, s: struct.Struct, off: int) -> int:
        value: int = s.unpack_from(self.buf, self.pos + off)[0]
        return value

    base_offset = property(lambda self: self._get(_I64, BASE_OFFSET_OFFSET))
    batch_length = property(lambda self: self._get(_I32, LENGTH_OFFSET))
    partition_leader_epoch = property(lambda self: self._get(_I32, PARTITION_LEADER_EPOCH_OFFSET))
    magic = property(lambda self: self._get(_I8, MAGIC_OFFSET))
    crc = property(lambda self: self._get(_U32, CRC_OFFSET))
    attributes = property(lambda self: self._get(_I16, ATTRIBUTES_OFFSET))
    last_offset_delta = property(lambda self: self._get(_I32, LAST_OFFSET_DELTA_OFFSET))
    first_timestamp = property(lambda self: self._get(_I64, FIRST_TIMESTAMP_OFFSET))
    max_timestamp = property(lambda self: self._get(_I64, MAX_TIMESTAMP_OFFSET))
    producer_id = property(lambda self: self._get(_I64, PRODUCER_ID_OFFSET))
    producer_epoch = property(lambda self: self._get(_I16, PRODUCER_EPOCH_OFFSET))
    base_sequence = property(lambda self: self._get(_I32, BASE_SEQUENCE_OFFSET))
    records_count = property(lambda self: self._get(_I32, RECORDS_COUNT_OFFSET))

    @property
    def size(self) -> int:
        """Whole batch in bytes, including baseOffset and batchLength."""
        length: int = self.batch_length
        return LOG_OVERHEAD + length

    @property
    def last_offset(self) -> int:
        base: int = self.base_offset
        delta: int = self.last_offset_delta
        return base + delta

    @property
    def compression(self) -> int:
        attributes: int = self.attributes
        return attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    def fields(self) -> tuple[Any, ...]:
        """All header fields at once (see the H_* indices)."""
        return HEADER.unpack_from(self.buf, self.pos)

    def is_valid(self) -> bool:
        return batch_crc_ok(self.buf, self.pos)

    def __repr__(self) -> str:
        return (
            f"BatchHeader(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"size={self.size}, attributes={self.attributes:#x}, max_timestamp={self.max_timestamp})"
        )


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header view) of every whole batch; stops before a partial trailing batch."""
    pos, n = 0, len(buf)
    while pos + RECORD_BATCH_OVERHEAD <= n:
        length = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
        end = pos + LOG_OVERHEAD + length
        if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD or end > n:
            return
        yield pos, BatchHeader(buf, pos)
        pos = end


def transactional_producer(records: bytes | memoryview) -> tuple[int, int] | None:
    """(producer id, epoch) of a record set's first batch when it is a transactional v2 batch
    (its header only; None for anything else, a short or legacy record set included)."""
    if len(records) < RECORD_BATCH_OVERHEAD:
        return None
    h = HEADER.unpack_from(records, 0)
    if h[H_MAGIC] != 2 or not h[H_ATTRIBUTES] & TRANSACTIONAL_FLAG_MASK:
        return None
    return h[H_PRODUCER_ID], h[H_PRODUCER_EPOCH]


def batch_crc_ok(buf: bytes | bytearray | memoryview, pos: int = 0) -> bool:
    length = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
    stored = _U32.unpack_from(buf, pos + CRC_OFFSET)[0]
    mv = memoryview(buf)
    ok: bool = crc32c(mv[pos + ATTRIBUTES_OFFSET : pos + LOG_OVERHEAD + length]) == stored
    return ok


def compute_crc(buf: bytearray | memoryview, pos: int = 0) -> int:
    length = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
    return crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + LOG_OVERHEAD + length])


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Rewrite baseOffset in place (outside the CRC: no recompute)."""
    _I64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    _I32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Mark the batch LogAppendTime with maxTimestamp = `timestamp`; recompute the CRC.

    Records are not touched (no recompression): consumers read every record's timestamp
    from maxTimestamp when the timestamp type bit is set.
    """
    attrs = _I16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attrs | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp)
    _U32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos))


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(slots=True)
class Record:
    """One decoded record. `offset` is absolute (-1 in a builder input: assigned in order)."""

    key: bytes | None = None
    value: bytes | None = None
    timestamp: int = NO_TIMESTAMP
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    offset: int = -1


@dataclass(slots=True)
class DecodedBatch:
    header: tuple[Any, ...]  # HEADER fields
    records: list[Record]

    @property
    def base_offset(self) -> int:
        value: int = self.header[H_BASE_OFFSET]
        return value

    @property
    def attributes(self) -> int:
        value: int = self.header[H_ATTRIBUTES]
        return value


def _read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Zigzag varint (varlong) at pos -> (value, next pos)."""
    b = buf[pos]
    if b < 0x80:  # the common one-byte case without a call
        return (b >> 1) ^ -(b & 1), pos + 1
    raw, pos = read_raw_varint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_raw_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A record varint before unzigzagging at pos -> (raw value, next pos): the one reader of
    the record format's varints (the export's columnar decoder inlines its one- and two-byte
    cases and calls this for the rest)."""
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint too long")


def _write_varint(out: bytearray, n: int) -> None:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def decode_records(batch: bytes | bytearray | memoryview, pos: int = 0) -> list[Record]:
    """Every record of the batch at `pos`, decompressed; LogAppendTime applied to timestamps."""
    h = HEADER.unpack_from(batch, pos)
    end = pos + LOG_OVERHEAD + h[H_LENGTH]
    if h[H_MAGIC] != MAGIC_V2:
        raise CorruptRecordError(f"not a v2 batch (magic {h[H_MAGIC]})")
    if end > len(batch):
        raise CorruptRecordError("truncated batch")
    attrs = h[H_ATTRIBUTES]
    body = bytes(memoryview(batch)[pos + RECORDS_OFFSET : end])
    codec = attrs & COMPRESSION_CODEC_MASK
    if codec:
        body = compression.decompress(codec, body)
    base_offset, first_ts = h[H_BASE_OFFSET], h[H_FIRST_TS]
    log_append = attrs & TIMESTAMP_TYPE_MASK
    max_ts = h[H_MAX_TS]
    out: list[Record] = []
    p, n = 0, len(body)
    try:
        for _ in range(h[H_RECORDS_COUNT]):
            length, p = _read_varint(body, p)
            rec_end = p + length
            if rec_end > n or length < 0:
                raise CorruptRecordError("record extends past the batch")
            p += 1  # attributes
            ts_delta, p = _read_varint(body, p)
            off_delta, p = _read_varint(body, p)
            klen, p = _read_varint(body, p)
            if klen >= 0:
                key = body[p : p + klen]
                p += klen
            else:
                key = None
            vlen, p = _read_varint(body, p)
            if vlen >= 0:
                value = body[p : p + vlen]
                p += vlen
            else:
                value = None
            nh, p = _read_varint(body, p)
            headers: list[tuple[str, bytes | None]] = []
            for _h in range(nh):
                hk, p = _read_varint(body, p)
                hkey = body[p : p + hk].decode("utf-8")
                p += hk
                hv, p = _read_varint(body, p)
                if hv >= 0:
                    hval = body[p : p + hv]
                    p += hv
                else:
                    hval = None
                headers.append((hkey, hval))
            if p != rec_end:
                raise CorruptRecordError("record length does not match its fields")
            ts = max_ts if log_append else (first_ts + ts_delta if first_ts != NO_TIMESTAMP else NO_TIMESTAMP)
            out.append(Record(key, value, ts, headers, base_offset + off_delta))
    except (IndexError, UnicodeDecodeError) as e:
        raise CorruptRecordError(f"malformed record: {e}") from None
    return out


def decode_batches(buf: bytes | bytearray | memoryview) -> list[DecodedBatch]:
    return [DecodedBatch(HEADER.unpack_from(buf, pos), decode_records(buf, pos)) for pos, _ in iter_batches(buf)]


def record_timestamps(batch: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of every record, skipping keys, values and headers: the timestamp
    lookup's final batch."""
    h = HEADER.unpack_from(batch, pos)
    end = pos + LOG_OVERHEAD + h[H_LENGTH]
    attrs = h[H_ATTRIBUTES]
    codec = attrs & COMPRESSION_CODEC_MASK
    body: bytes | bytearray | memoryview
    if codec:
        body = compression.decompress(codec, memoryview(batch)[pos + RECORDS_OFFSET : end])
        p, n = 0, len(body)
    else:
        body, p, n = batch, pos + RECORDS_OFFSET, end
    base, first_ts, max_ts = h[H_BASE_OFFSET], h[H_FIRST_TS], h[H_MAX_TS]
    lat = attrs & TIMESTAMP_TYPE_MASK
    rv = _read_varint
    for _ in range(h[H_RECORDS_COUNT]):
        if p >= n:
            raise CorruptRecordError("record extends past the batch")
        length, p = rv(body, p)
        nxt = p + length
        ts_delta, q = rv(body, p + 1)
        off_delta, _q = rv(body, q)
        ts = max_ts if lat else (first_ts + ts_delta if first_ts != NO_TIMESTAMP else NO_TIMESTAMP)
        yield base + off_delta, ts
        p = nxt


def _encode_record(out: bytearray, r: Record, offset_delta: int, ts_delta: int) -> None:
    body = bytearray(b"\x00")
    _write_varint(body, ts_delta)
    _write_varint(body, offset_delta)
    if r.key is None:
        _write_varint(body, -1)
    else:
        _write_varint(body, len(r.key))
        body += r.key
    if r.value is None:
        _write_varint(body, -1)
    else:
        _write_varint(body, len(r.value))
        body += r.value
    _write_varint(body, len(r.headers))
    for hk, hv in r.headers:
        kb = hk.encode("utf-8")
        _write_varint(body, len(kb))
        body += kb
        if hv is None:
            _write_varint(body, -1)
        else:
            _write_varint(body, len(hv))
            body += hv
    _write_varint(out, len(body))
    out += body


def build_batch(
    records: Sequence[Record],
    base_offset: int = 0,
    codec: int = compression.NONE,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = -1,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """A complete v2 batch. Record offsets of -1 are assigned base_offset, base_offset+1, ...;
    otherwise they are kept (the cleaner rebuilds batches with gaps). `max_timestamp` overrides
    the computed one (LogAppendTime); `last_offset_delta` keeps the original range of a batch
    whose records were removed; `delete_horizon_ms` sets bit 6 and stores the horizon as the
    batch's first timestamp (KIP-534), so record deltas are then relative to it."""
    if not records and last_offset_delta is None:
        raise ValueError("a batch needs at least one record")
    timestamps = [r.timestamp for r in records]
    if delete_horizon_ms is not None:
        first_ts = delete_horizon_ms
    else:
        first_ts = timestamps[0] if timestamps else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max(timestamps) if timestamps else NO_TIMESTAMP
    raw = bytearray()
    last_delta = 0
    for i, r in enumerate(records):
        delta = r.offset - base_offset if r.offset >= 0 else i
        if delta < last_delta and i:
            raise ValueError("record offsets must increase")
        last_delta = delta
        ts_delta = 0 if r.timestamp == NO_TIMESTAMP or first_ts == NO_TIMESTAMP else r.timestamp - first_ts
        _encode_record(raw, r, delta, ts_delta)
    if last_offset_delta is None:
        last_offset_delta = last_delta
    elif records and last_offset_delta < last_delta:
        raise ValueError("last_offset_delta is below the last record's delta")
    body: bytes | bytearray = raw
    if codec != compression.NONE:
        body = compression.compress(codec, raw)
    attrs = codec & COMPRESSION_CODEC_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_MASK
    if transactional:
        attrs |= TRANSACTIONAL_FLAG_MASK
    if control:
        attrs |= CONTROL_FLAG_MASK
    if delete_horizon_ms is not None:
        attrs |= DELETE_HORIZON_FLAG_MASK
    total = RECORDS_OFFSET + len(body)
    out = bytearray(total)
    HEADER.pack_into(
        out,
        0,
        base_offset,
        total - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,
        attrs,
        last_offset_delta,
        first_ts,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    out[RECORDS_OFFSET:] = body
    _U32.pack_into(out, CRC_OFFSET, compute_crc(out, 0))
    return bytes(out)


def build_control_batch(
    control_type: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
) -> bytes:
    """A transaction marker: one control record (ABORT=0, COMMIT=1), transactional + control."""
    rec = Record(_CONTROL_KEY.pack(0, control_type), _CONTROL_VALUE.pack(0, coordinator_epoch), timestamp)
    return build_batch(
        [rec],
        base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
    )


def parse_control_record(r: Record) -> tuple[int, int]:
    """(control type, coordinator epoch) of a control record."""
    if r.key is None or len(r.key) < 4:
        raise CorruptRecordError("control record without a valid key")
    _version, ctype = _CONTROL_KEY.unpack_from(r.key)
    epoch = _CONTROL_VALUE.unpack_from(r.value)[1] if r.value and len(r.value) >= 6 else -1
    return ctype, epoch
