"""Helpers shared by the log tests."""

from tidelog.log import PartitionLog
from tidelog.log.records import Record, build_batch, decode_records, iter_batches

T0 = 1_700_000_000_000


def batch_of(n: int, ts: int, key_prefix: bytes = b"k", **kw) -> bytes:
    return build_batch([Record(key_prefix + b"%d" % i, b"v%d" % i, ts) for i in range(n)], **kw)


def all_records(log: PartitionLog, start: int | None = None, *, to_end: bool = False) -> list[Record]:
    """Every record from `start` (default: log start) to the high watermark (`to_end`: to the log
    end offset, as a follower's copy holds it), via read()."""
    out: list[Record] = []
    off = log.log_start_offset if start is None else start
    while off < log.log_end_offset:
        f = log.read(off, 1 << 20, max_offset=log.log_end_offset if to_end else None)
        if f.records is None:
            break
        data = f.data
        for pos, _h in iter_batches(data):
            out.extend(r for r in decode_records(data, pos) if r.offset >= off)
        off = f.records.last_offset + 1
    return out
