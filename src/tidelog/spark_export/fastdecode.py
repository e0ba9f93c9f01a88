"""The export's compiled decoder: `append_batch`'s record walk (columns.py, the pure-Python
reference) JIT-compiled with numba into machine code that writes straight into numpy arrays,
which become Arrow buffers without a Python object per record.

The same layout and the same checks as the reference: a record extending past the batch, a
length that does not match its fields or a varint longer than 10 bytes is CorruptRecordError, and
nothing of a malformed batch stays in the columns. Batches whose records carry headers (rare in
bulk data) go through the reference decoder into the same columns. Decompression stays in the
codec libraries. `tests/spark_export/test_columns.py` checks that both decoders build identical
Arrow batches.

The fast path is used when numba imports (it comes with `tidelog[spark]`) and
`TIDELOG_EXPORT_DECODER` is not `python`; `DECODER` says which one runs (the export logs it).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tidelog.log import records as rb
from tidelog.log.errors import CorruptRecordError

from .columns import Columns, append_batch, batch_body, batch_fields

njit: Any
try:
    if os.environ.get("TIDELOG_EXPORT_DECODER", "") == "python":
        raise ImportError("the pure-Python decoder was asked for")
    from numba import njit
except ImportError:  # pragma: no cover - numba is part of tidelog[spark]
    njit = None

DECODER = "numba" if njit is not None else "python"

OK, CORRUPT, HAS_HEADERS = 0, 1, 2


def _varint(body, p, n):  # pragma: no cover - compiled
    """(zigzag value, next position); position -1 when it runs past `n` or over 10 bytes."""
    shift = 0
    raw = 0
    for _ in range(10):
        if p >= n:
            return 0, -1
        b = body[p]
        p += 1
        raw |= np.int64(b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), p
    return 0, -1


def _walk(
    body,
    count,
    base,
    first_ts,
    max_ts,
    log_append,
    no_ts,
    start_off,
    end_off,
    check_off,
    lo,
    hi,
    check_ts,
    out_off,
    out_ts,
    k_pos,
    k_len,
    v_pos,
    v_len,
):  # pragma: no cover - compiled
    """One pass over the records: fields of the selected ones into the out arrays; returns
    (status, how many selected)."""
    n = body.shape[0]
    p = 0
    sel = 0
    for _ in range(count):
        length, p = _varint(body, p, n)
        if p < 0 or length < 0 or p + length > n:
            return CORRUPT, sel
        rec_end = p + length
        p += 1  # record attributes
        ts_delta, p = _varint(body, p, rec_end)
        if p < 0:
            return CORRUPT, sel
        off_delta, p = _varint(body, p, rec_end)
        if p < 0:
            return CORRUPT, sel
        kl, p = _varint(body, p, rec_end)
        if p < 0:
            return CORRUPT, sel
        kp = p
        if kl > 0:
            p += kl
        vl, p2 = _varint(body, p, rec_end)
        if p2 < 0:
            return CORRUPT, sel
        p = p2
        vp = p
        if vl > 0:
            p += vl
        nh, p2 = _varint(body, p, rec_end)
        if p2 < 0:
            return CORRUPT, sel
        p = p2
        if nh > 0:
            return HAS_HEADERS, sel
        if p != rec_end:
            return CORRUPT, sel
        off = base + off_delta
        if log_append:
            ts = max_ts
        elif no_ts:
            ts = -1
        else:
            ts = first_ts + ts_delta
        if check_off and (off < start_off or off >= end_off):
            continue
        if check_ts and (ts < lo or ts >= hi):
            continue
        out_off[sel] = off
        out_ts[sel] = ts
        k_pos[sel] = kp
        k_len[sel] = kl
        v_pos[sel] = vp
        v_len[sel] = vl
        sel += 1
    return OK, sel


def _gather(body, pos, lens, count):  # pragma: no cover - compiled
    """The selected keys (or values) copied into one contiguous buffer."""
    total = 0
    for i in range(count):
        if lens[i] > 0:
            total += lens[i]
    out = np.empty(total, np.uint8)
    at = 0
    for i in range(count):
        ln = lens[i]
        if ln > 0:
            out[at : at + ln] = body[pos[i] : pos[i] + ln]
            at += ln
    return out


if njit is not None:
    _varint = njit(cache=True, nogil=True)(_varint)
    _walk = njit(cache=True, nogil=True)(_walk)
    _gather = njit(cache=True, nogil=True)(_gather)


class FastColumns:
    """Columns as numpy chunks (one per batch), joined into Arrow buffers by `to_arrow`."""

    def __init__(self) -> None:
        self.n = 0
        self.offsets: list[Any] = []
        self.timestamps: list[Any] = []
        self.ts_types: list[Any] = []
        self.pids: list[Any] = []
        self.txn: list[Any] = []
        self.key_lens: list[Any] = []
        self.key_data: list[Any] = []
        self.val_lens: list[Any] = []
        self.val_data: list[Any] = []
        self.h_counts: list[Any] = []
        self.h_keys: list[str] = []
        self.h_values: list[bytes | None] = []

    def __len__(self) -> int:
        return self.n

    def _add(self, offs, ts, klens, kdata, vlens, vdata, hcounts, ts_type: int, pid: int, txn: bool) -> None:
        m = len(offs)
        if not m:
            return
        self.offsets.append(offs)
        self.timestamps.append(ts)
        self.key_lens.append(klens)
        self.key_data.append(kdata)
        self.val_lens.append(vlens)
        self.val_data.append(vdata)
        self.h_counts.append(hcounts)
        self.ts_types.append(np.full(m, ts_type, np.int32))
        self.pids.append(np.full(m, pid, np.int64))
        self.txn.append(np.full(m, txn, np.bool_))
        self.n += m

    def add_reference(self, c: Columns, ts_type: int, pid: int, txn: bool) -> None:
        """Rows the pure-Python decoder produced (a batch with headers)."""

        def lens_data(items: list[bytes | None]) -> tuple[Any, Any]:
            lens = np.array([-1 if x is None else len(x) for x in items], np.int64)
            return lens, np.frombuffer(b"".join(x for x in items if x), np.uint8)

        klens, kdata = lens_data(c.keys)
        vlens, vdata = lens_data(c.values)
        self._add(
            np.array(c.offsets, np.int64),
            np.array(c.timestamps, np.int64),
            klens,
            kdata,
            vlens,
            vdata,
            np.diff(np.array(c.h_offsets, np.int64)),
            ts_type,
            pid,
            txn,
        )
        self.h_keys.extend(c.h_keys)
        self.h_values.extend(c.h_values)

    def to_arrow(self, topic: str, partition: int, schema):
        import pyarrow as pa

        n = self.n

        def cat(chunks: list[Any], dtype) -> Any:
            return np.concatenate(chunks) if chunks else np.empty(0, dtype)

        def binary(lens_chunks: list[Any], data_chunks: list[Any]):
            lens = cat(lens_chunks, np.int64)
            valid = lens >= 0
            offsets = np.zeros(n + 1, np.int32)
            np.cumsum(np.where(valid, lens, 0), out=offsets[1:])
            data = cat(data_chunks, np.uint8)
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if not valid.all() else None
            return pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)])

        h_offsets = np.zeros(n + 1, np.int32)
        np.cumsum(cat(self.h_counts, np.int64), out=h_offsets[1:])
        header_type = schema.field("headers").type
        headers = pa.ListArray.from_arrays(
            pa.array(h_offsets, pa.int32()),
            pa.StructArray.from_arrays(
                [pa.array(self.h_keys, pa.string()), pa.array(self.h_values, pa.binary())],
                fields=list(header_type.value_type),
            ),
            type=header_type,
        )
        ts = cat(self.timestamps, np.int64) * 1000
        return pa.RecordBatch.from_arrays(
            [
                pa.repeat(pa.scalar(topic, pa.string()), n),
                pa.array(np.full(n, partition, dtype=np.int32)),
                pa.array(cat(self.offsets, np.int64), pa.int64()),
                pa.array(ts, pa.timestamp("us", tz="UTC")),
                pa.array(cat(self.ts_types, np.int32), pa.int32()),
                binary(self.key_lens, self.key_data),
                binary(self.val_lens, self.val_data),
                headers,
                pa.array(cat(self.pids, np.int64), pa.int64()),
                pa.array(cat(self.txn, np.bool_), pa.bool_()),
            ],
            schema=schema,
        )


def append_batch_fast(
    cols: FastColumns,
    buf,
    pos: int,
    header: tuple,
    start_offset: int,
    end_offset: int,
    t_lo: int | None,
    t_hi: int | None,
) -> None:
    """`columns.append_batch` into FastColumns, through the compiled walk."""
    body = batch_body(buf, pos, header)
    base, first_ts, max_ts, log_append, no_ts, pid, txn, ts_type, check_off, check_ts, count = batch_fields(
        header, start_offset, end_offset, t_lo, t_hi
    )
    arr = np.frombuffer(body, np.uint8)
    out_off = np.empty(count, np.int64)
    out_ts = np.empty(count, np.int64)
    k_pos = np.empty(count, np.int64)
    k_len = np.empty(count, np.int64)
    v_pos = np.empty(count, np.int64)
    v_len = np.empty(count, np.int64)
    # int64 bounds for the compiled walk: "unbounded above" is the largest int64 (the reference's
    # 2**63 does not fit), which no record's timestamp can reach (it would be excluded, as there).
    status, sel = _walk(
        arr,
        count,
        base,
        first_ts,
        max_ts,
        log_append,
        no_ts,
        start_offset,
        end_offset,
        check_off,
        t_lo if t_lo is not None else -(1 << 63),
        t_hi if t_hi is not None else (1 << 63) - 1,
        check_ts,
        out_off,
        out_ts,
        k_pos,
        k_len,
        v_pos,
        v_len,
    )
    if status == CORRUPT:
        raise CorruptRecordError("malformed record")
    if status == HAS_HEADERS:
        ref = Columns()
        append_batch(ref, buf, pos, header, start_offset, end_offset, t_lo, t_hi)
        cols.add_reference(ref, ts_type, pid, txn)
        return
    cols._add(
        out_off[:sel],
        out_ts[:sel],
        k_len[:sel],
        _gather(arr, k_pos, k_len, sel),
        v_len[:sel],
        _gather(arr, v_pos, v_len, sel),
        np.zeros(sel, np.int64),
        ts_type,
        pid,
        txn,
    )


def warm() -> None:
    """Load (or compile) the JIT's machine code now: one small batch through the compiled walk."""
    if DECODER != "numba":
        return
    from tidelog.log.records import Record, build_batch

    buf = build_batch([Record(b"k", b"v", 1, []), Record(None, b"w", 2, [])])
    for pos, h in rb.iter_batches(buf):
        append_batch_fast(FastColumns(), buf, pos, h.fields(), 0, 1 << 62, None, None)
