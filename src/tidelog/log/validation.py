"""Append validation: v2 batches in, a `ValidatedAppend` out, or `LogAppendError(code, message)`.

Pure (no I/O). It reads batch headers only, never records, and works in place on the buffer the
caller gives it (a `bytearray` copy, or the writable request frame itself): base offsets are
assigned, and for LogAppendTime topics the timestamp type bit and maxTimestamp are set (CRC
recomputed; records are not recompressed).

| check                                                          | error                      |
|----------------------------------------------------------------|----------------------------|
| truncated batch, bad length, magic != 2, count/offsets mismatch | CORRUPT_MESSAGE (2)        |
| CRC32C mismatch                                                 | CORRUPT_MESSAGE (2)        |
| unknown codec                                                   | CORRUPT_MESSAGE (2)        |
| batch larger than max.message.bytes (whole batch, 12 included)  | MESSAGE_TOO_LARGE (10)     |
| record set larger than segment.bytes                            | RECORD_LIST_TOO_LARGE (18) |
| control batch from a client                                     | INVALID_RECORD (87)        |
| CreateTime outside message.timestamp.difference.max.ms (or      | INVALID_TIMESTAMP (32)     |
| before/after.max.ms) of the broker clock                        |                            |

A failure refuses the whole record set: nothing is written. CreateTime bounds are checked on the
batch's firstTimestamp and maxTimestamp (header fields), not on every record: a record in the
middle of a batch with a smaller timestamp than the first is not seen (hot-path rule: no record
decoding on append). Timestamps of -1 (magic 0 data) are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crc32c import crc32c

from .config import LogConfig
from .errors import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    MESSAGE_TOO_LARGE,
    RECORD_LIST_TOO_LARGE,
    LogAppendError,
)
from .records import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    HEADER,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
    set_base_offset,
    set_log_append_time,
)

_MIN_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD


@dataclass(slots=True)
class BatchInfo:
    """One appended batch, as the producer-state and index code need it."""

    position: int  # within the appended record set
    size: int
    base_offset: int
    last_offset: int
    records_count: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    is_control: bool

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset - self.base_offset) % (2**31)


@dataclass(slots=True)
class ValidatedAppend:
    batches: list[BatchInfo] = field(default_factory=list)
    first_offset: int = -1
    last_offset: int = -1
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    log_append_time: int = NO_TIMESTAMP  # -1 for CreateTime topics
    num_records: int = 0
    size: int = 0


def validate_and_assign(
    buf: bytearray | memoryview,
    next_offset: int,
    config: LogConfig,
    now_ms: int,
    *,
    origin_client: bool = True,
) -> ValidatedAppend:
    """Validate every batch of `buf` and assign offsets from `next_offset`, in place."""
    n = len(buf)
    if n > config.segment_bytes:
        raise LogAppendError(
            RECORD_LIST_TOO_LARGE, f"record set of {n} bytes exceeds segment.bytes {config.segment_bytes}"
        )
    out = ValidatedAppend(size=n, first_offset=next_offset if n else -1)
    log_append = config.log_append_time
    out.log_append_time = now_ms if log_append else NO_TIMESTAMP
    diff_max = config.message_timestamp_difference_max_ms
    before_max = config.message_timestamp_before_max_ms
    after_max = config.message_timestamp_after_max_ms
    max_size = config.max_message_bytes
    mv = memoryview(buf)
    pos = 0
    offset = next_offset
    batches = out.batches
    max_ts, offset_of_max = NO_TIMESTAMP, -1
    while pos < n:
        if pos + RECORD_BATCH_OVERHEAD > n:
            raise LogAppendError(CORRUPT_MESSAGE, f"truncated record batch at byte {pos}")
        (_b, length, _e, magic, crc, attrs, lod, first_ts, batch_max_ts, pid, pepoch, bseq, count) = HEADER.unpack_from(
            buf, pos
        )
        if magic != MAGIC_V2:
            raise LogAppendError(CORRUPT_MESSAGE, f"batch at byte {pos} has magic {magic}, expected 2")
        size = LOG_OVERHEAD + length
        if length < _MIN_LENGTH or pos + size > n:
            raise LogAppendError(CORRUPT_MESSAGE, f"batch at byte {pos} has an invalid length {length}")
        if size > max_size:
            raise LogAppendError(MESSAGE_TOO_LARGE, f"batch of {size} bytes exceeds max.message.bytes {max_size}")
        if crc32c(mv[pos + ATTRIBUTES_OFFSET : pos + size]) != crc:
            raise LogAppendError(CORRUPT_MESSAGE, f"CRC mismatch in batch at byte {pos}")
        if count <= 0 or lod != count - 1:
            # a client batch holds count records at deltas 0..count-1; the coordinator's
            # batches come from build_batch and obey the same rule
            if origin_client or count < 0 or lod < 0:
                raise LogAppendError(
                    CORRUPT_MESSAGE,
                    f"batch at byte {pos}: recordsCount {count} inconsistent with lastOffsetDelta {lod}",
                )
        if attrs & COMPRESSION_CODEC_MASK > 4:
            raise LogAppendError(CORRUPT_MESSAGE, f"unknown compression codec {attrs & COMPRESSION_CODEC_MASK}")
        control = bool(attrs & CONTROL_FLAG_MASK)
        if control and origin_client:
            raise LogAppendError(INVALID_RECORD, "clients may not write control batches")
        if log_append:
            set_log_append_time(buf, pos, now_ms)
            batch_max_ts = now_ms
        else:
            for ts in (first_ts, batch_max_ts):
                if ts == NO_TIMESTAMP:
                    continue
                d = now_ms - ts
                if abs(d) > diff_max or d > before_max or -d > after_max:
                    raise LogAppendError(
                        INVALID_TIMESTAMP,
                        f"timestamp {ts} of batch at byte {pos} is out of range of broker time {now_ms}",
                    )
        set_base_offset(buf, pos, offset)
        last = offset + lod
        if batch_max_ts > max_ts:
            max_ts, offset_of_max = batch_max_ts, last
        batches.append(
            BatchInfo(
                pos,
                size,
                offset,
                last,
                count,
                first_ts,
                batch_max_ts,
                pid,
                pepoch,
                bseq,
                bool(attrs & TRANSACTIONAL_FLAG_MASK),
                control,
            )
        )
        out.num_records += count
        offset = last + 1
        pos += size
    if batches:
        out.last_offset = offset - 1
        if offset_of_max < 0:
            offset_of_max = out.first_offset
    out.max_timestamp = max_ts
    out.offset_of_max_timestamp = offset_of_max
    return out


def validate_replicated(buf: bytearray | memoryview, next_offset: int) -> ValidatedAppend:
    """A follower's append: batches copied from the leader keep their offsets, timestamps and
    partitionLeaderEpoch. Checked: structure, magic, CRC, and offsets that start at or after
    `next_offset` and increase. A trailing partial batch (a fetch response cut at its byte
    limit) is left out: `size` tells how many bytes of `buf` are whole batches."""
    n = len(buf)
    out = ValidatedAppend()
    mv = memoryview(buf)
    pos = 0
    expect = next_offset
    max_ts, offset_of_max = NO_TIMESTAMP, -1
    while pos + RECORD_BATCH_OVERHEAD <= n:
        (base, length, _e, magic, crc, attrs, lod, first_ts, batch_max_ts, pid, pepoch, bseq, count) = (
            HEADER.unpack_from(buf, pos)
        )
        size = LOG_OVERHEAD + length
        if pos + size > n:
            break
        if magic != MAGIC_V2 or length < _MIN_LENGTH or lod < 0:
            raise LogAppendError(CORRUPT_MESSAGE, f"replicated batch at byte {pos} is malformed")
        if crc32c(mv[pos + ATTRIBUTES_OFFSET : pos + size]) != crc:
            raise LogAppendError(CORRUPT_MESSAGE, f"CRC mismatch in replicated batch at byte {pos}")
        if base < expect:
            raise LogAppendError(CORRUPT_MESSAGE, f"replicated batch at offset {base} is below the log end {expect}")
        last = base + lod
        if batch_max_ts > max_ts:
            max_ts, offset_of_max = batch_max_ts, last
        out.batches.append(
            BatchInfo(
                pos,
                size,
                base,
                last,
                count,
                first_ts,
                batch_max_ts,
                pid,
                pepoch,
                bseq,
                bool(attrs & TRANSACTIONAL_FLAG_MASK),
                bool(attrs & CONTROL_FLAG_MASK),
            )
        )
        out.num_records += count
        expect = last + 1
        pos += size
    out.size = pos
    if out.batches:
        out.first_offset = out.batches[0].base_offset
        out.last_offset = expect - 1
    out.max_timestamp = max_ts
    out.offset_of_max_timestamp = offset_of_max
    return out
