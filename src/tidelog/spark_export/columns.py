"""Records of v2 batches decoded straight into Arrow-ready columns (the export's inner loop).

`tidelog.log.records.decode_records` builds one `Record` object per record and calls a varint
reader per field; that is the reference decoder and stays the one the broker uses. The export
decodes millions of records, so `append_batch` walks the same record layout (see the table in
`tidelog.log.records`) with the one- and two-byte varint cases inlined, appends each field to its
column list directly, and makes no per-record object. It validates as the reference does: a
record extending past the batch, a length that does not match the fields, or a varint longer
than 10 bytes is `CorruptRecordError`. `tests/spark_export/test_columns.py` checks both decoders
agree on every codec, null keys/values, headers and LogAppendTime.
"""

from __future__ import annotations

from typing import NamedTuple

from tidelog.log import compression
from tidelog.log import records as rb
from tidelog.log.errors import CorruptRecordError


class Columns:
    """Column lists of one Arrow record batch under construction."""

    __slots__ = ("offsets", "timestamps", "ts_types", "keys", "values", "h_offsets", "h_keys", "h_values",
                 "pids", "txn")

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.ts_types: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.h_offsets: list[int] = [0]
        self.h_keys: list[str] = []
        self.h_values: list[bytes | None] = []
        self.pids: list[int] = []
        self.txn: list[bool] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def to_arrow(self, topic: str, partition: int, schema):
        import numpy as np
        import pyarrow as pa

        n = len(self.offsets)
        ts = np.asarray(self.timestamps, dtype=np.int64) * 1000
        header_type = schema.field("headers").type
        headers = pa.ListArray.from_arrays(
            pa.array(self.h_offsets, pa.int32()),
            pa.StructArray.from_arrays(
                [pa.array(self.h_keys, pa.string()), pa.array(self.h_values, pa.binary())],
                fields=list(header_type.value_type),
            ),
            type=header_type,
        )
        return pa.RecordBatch.from_arrays(
            [
                pa.repeat(pa.scalar(topic, pa.string()), n),
                pa.array(np.full(n, partition, dtype=np.int32)),
                pa.array(self.offsets, pa.int64()),
                pa.array(ts, pa.timestamp("us", tz="UTC")),
                pa.array(self.ts_types, pa.int32()),
                pa.array(self.keys, pa.binary()),
                pa.array(self.values, pa.binary()),
                headers,
                pa.array(self.pids, pa.int64()),
                pa.array(self.txn, pa.bool_()),
            ],
            schema=schema,
        )


_uvarint = rb.read_raw_varint  # the log's record-varint reader (multi-byte cases)


def batch_body(buf, pos: int, header: tuple) -> bytes:
    """The records section of the v2 batch at `pos`, decompressed; CorruptRecordError for another
    magic or a batch running past the buffer."""
    if header[rb.H_MAGIC] != rb.MAGIC_V2:
        raise CorruptRecordError(f"not a v2 batch (magic {header[rb.H_MAGIC]})")
    end = pos + rb.LOG_OVERHEAD + header[rb.H_LENGTH]
    if end > len(buf):
        raise CorruptRecordError("truncated batch")
    body = bytes(memoryview(buf)[pos + rb.RECORDS_OFFSET : end])
    codec = header[rb.H_ATTRIBUTES] & rb.COMPRESSION_CODEC_MASK
    return compression.decompress(codec, body) if codec else body


class BatchFields(NamedTuple):
    """What both decoders take from a batch's header, once per batch."""

    base: int
    first_ts: int
    max_ts: int
    log_append: bool  # LogAppendTime: every record's timestamp is max_ts
    no_ts: bool  # first_ts is NO_TIMESTAMP (converted magic 0 data): every record's is too
    pid: int
    txn: bool
    ts_type: int  # 0 CreateTime, 1 LogAppendTime
    check_off: bool  # the batch straddles an offset bound: filter per record
    check_ts: bool  # a timestamp bound is set: filter per record
    records: int  # the header's record count (0 when negative)


def batch_fields(header: tuple, start_offset: int, end_offset: int, t_lo: int | None, t_hi: int | None) -> BatchFields:
    attrs = header[rb.H_ATTRIBUTES]
    base = header[rb.H_BASE_OFFSET]
    log_append = bool(attrs & rb.TIMESTAMP_TYPE_MASK)
    last = base + header[rb.H_LAST_OFFSET_DELTA]
    return BatchFields(
        base, header[rb.H_FIRST_TS], header[rb.H_MAX_TS], log_append, header[rb.H_FIRST_TS] == rb.NO_TIMESTAMP,
        header[rb.H_PRODUCER_ID], bool(attrs & rb.TRANSACTIONAL_FLAG_MASK), 1 if log_append else 0,
        base < start_offset or last >= end_offset, t_lo is not None or t_hi is not None,
        max(header[rb.H_RECORDS_COUNT], 0),
    )


def append_batch(cols: Columns, buf, pos: int, header: tuple, start_offset: int, end_offset: int,
                 t_lo: int | None, t_hi: int | None) -> None:
    """Append the records of the v2 batch at `pos` (header fields `header`) whose offset lies in
    [start_offset, end_offset) and timestamp in [t_lo, t_hi) (None: unbounded) to `cols`."""
    body = batch_body(buf, pos, header)
    base, first_ts, max_ts, log_append, no_ts, pid, txn, ts_type, check_off, check_ts, count = batch_fields(
        header, start_offset, end_offset, t_lo, t_hi)
    # Python ints: the upper bound may be 2**63 (nothing at or above it).
    lo = t_lo if t_lo is not None else -(1 << 63)
    hi = t_hi if t_hi is not None else (1 << 63)

    offsets, timestamps, keys, values = cols.offsets, cols.timestamps, cols.keys, cols.values
    h_offsets, h_keys, h_values = cols.h_offsets, cols.h_keys, cols.h_values
    n_before = len(offsets)
    n = len(body)
    p = 0
    try:
        for _ in range(count):
            # length
            b = body[p]
            if b < 0x80:
                v = b; p += 1
            elif body[p + 1] < 0x80:
                v = (b & 0x7F) | (body[p + 1] << 7); p += 2
            else:
                v, p = _uvarint(body, p)
            length = (v >> 1) ^ -(v & 1)
            rec_end = p + length
            if length < 0 or rec_end > n:
                raise CorruptRecordError("record extends past the batch")
            p += 1  # record attributes
            # timestampDelta
            b = body[p]
            if b < 0x80:
                v = b; p += 1
            elif body[p + 1] < 0x80:
                v = (b & 0x7F) | (body[p + 1] << 7); p += 2
            else:
                v, p = _uvarint(body, p)
            ts_delta = (v >> 1) ^ -(v & 1)
            # offsetDelta
            b = body[p]
            if b < 0x80:
                v = b; p += 1
            elif body[p + 1] < 0x80:
                v = (b & 0x7F) | (body[p + 1] << 7); p += 2
            else:
                v, p = _uvarint(body, p)
            off = base + ((v >> 1) ^ -(v & 1))
            # key
            b = body[p]
            if b < 0x80:
                v = b; p += 1
            elif body[p + 1] < 0x80:
                v = (b & 0x7F) | (body[p + 1] << 7); p += 2
            else:
                v, p = _uvarint(body, p)
            klen = (v >> 1) ^ -(v & 1)
            if klen >= 0:
                key = body[p : p + klen]
                p += klen
            else:
                key = None
            # value
            b = body[p]
            if b < 0x80:
                v = b; p += 1
            elif body[p + 1] < 0x80:
                v = (b & 0x7F) | (body[p + 1] << 7); p += 2
            else:
                v, p = _uvarint(body, p)
            vlen = (v >> 1) ^ -(v & 1)
            if vlen >= 0:
                value = body[p : p + vlen]
                p += vlen
            else:
                value = None
            # headers
            b = body[p]
            if b < 0x80:
                v = b; p += 1
            else:
                v, p = _uvarint(body, p)
            nh = (v >> 1) ^ -(v & 1)
            hk_list = hv_list = None
            if nh > 0:
                hk_list, hv_list = [], []
                for _h in range(nh):
                    v, p = _uvarint(body, p)
                    hk = (v >> 1) ^ -(v & 1)
                    hkey = body[p : p + hk].decode("utf-8")
                    p += hk
                    v, p = _uvarint(body, p)
                    hv = (v >> 1) ^ -(v & 1)
                    if hv >= 0:
                        hval = body[p : p + hv]
                        p += hv
                    else:
                        hval = None
                    hk_list.append(hkey)
                    hv_list.append(hval)
            if p != rec_end:
                raise CorruptRecordError("record length does not match its fields")
            ts = max_ts if log_append else (rb.NO_TIMESTAMP if no_ts else first_ts + ts_delta)
            if check_off and (off < start_offset or off >= end_offset):
                continue
            if check_ts and (ts < lo or ts >= hi):
                continue
            offsets.append(off)
            timestamps.append(ts)
            keys.append(key)
            values.append(value)
            if hk_list:
                h_keys.extend(hk_list)
                h_values.extend(hv_list)
            h_offsets.append(len(h_keys))
    except (IndexError, UnicodeDecodeError, CorruptRecordError) as e:
        # Nothing of a malformed batch stays in the columns (they must keep equal lengths).
        del offsets[n_before:], timestamps[n_before:], keys[n_before:], values[n_before:]
        del h_offsets[n_before + 1:]
        del h_keys[h_offsets[-1]:], h_values[h_offsets[-1]:]
        if isinstance(e, CorruptRecordError):
            raise
        raise CorruptRecordError(f"malformed record: {e}") from None
    added = len(offsets) - n_before
    if added:
        cols.ts_types.extend([ts_type] * added)
        cols.pids.extend([pid] * added)
        cols.txn.extend([txn] * added)
