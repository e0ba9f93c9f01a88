"""Legacy message sets, magic 0 and 1 (clients before Kafka 0.11), converted to and from v2.

A message set is a sequence of entries, each::

    offset       int64
    messageSize  int32      bytes of the message that follows
    message:
      crc        uint32     CRC32 (zlib) of magic .. end of message
      magic      int8       0 or 1
      attributes int8       bits 0-2 codec; bit 3 timestamp type (magic 1 only)
      timestamp  int64      magic 1 only
      key        int32 length (-1 null) + bytes
      value      int32 length (-1 null) + bytes

Smallest message: 14 bytes (magic 0), 22 bytes (magic 1); each entry adds 12.

Compression wraps: a wrapper message whose value is a compressed message set of inner
messages. With magic 1 the inner offsets are relative (0, 1, ...) and the wrapper's offset is the
absolute offset of the last inner message, so inner absolute = wrapper - last relative + relative.
With magic 0 inner offsets are absolute. A magic 1 wrapper with the LogAppendTime bit gives its
timestamp to every inner message.

`to_v2` (produce from old clients) validates CRCs and builds one v2 batch per wrapper (same codec)
and one per run of uncompressed messages, keeping keys, values, timestamps (-1 for magic 0) and the
timestamp type. `downconvert` (fetch by old clients) writes one message per record, or one
wrapper per compressed batch, recompressed with the batch's codec; control batches are dropped and
record headers are lost (the old formats have none). zstd cannot be down-converted
(UNSUPPORTED_COMPRESSION_TYPE), as in Kafka.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from . import compression
from .errors import CORRUPT_MESSAGE, UNSUPPORTED_COMPRESSION_TYPE, LogAppendError, LogError
from .records import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CREATE_TIME,
    H_ATTRIBUTES,
    H_MAX_TS,
    HEADER,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    Record,
    build_batch,
    decode_records,
    iter_batches,
)

# Entry and message field offsets, chained.
OFFSET_OFFSET = 0
OFFSET_LENGTH = 8
SIZE_OFFSET = OFFSET_OFFSET + OFFSET_LENGTH
SIZE_LENGTH = 4
LOG_OVERHEAD = SIZE_OFFSET + SIZE_LENGTH  # 12
CRC_OFFSET = 0  # from the start of the message
CRC_LENGTH = 4
MAGIC_OFFSET = CRC_OFFSET + CRC_LENGTH
MAGIC_LENGTH = 1
ATTRIBUTES_OFFSET = MAGIC_OFFSET + MAGIC_LENGTH
ATTRIBUTES_LENGTH = 1
TIMESTAMP_OFFSET = ATTRIBUTES_OFFSET + ATTRIBUTES_LENGTH  # magic 1 only
TIMESTAMP_LENGTH = 8
KEY_OFFSET_V0 = TIMESTAMP_OFFSET
KEY_OFFSET_V1 = TIMESTAMP_OFFSET + TIMESTAMP_LENGTH
MIN_MESSAGE_SIZE_V0 = KEY_OFFSET_V0 + 4 + 4  # 14
MIN_MESSAGE_SIZE_V1 = KEY_OFFSET_V1 + 4 + 4  # 22

_ENTRY = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_HEAD_V0 = struct.Struct(">Ibb")
_HEAD_V1 = struct.Struct(">Ibbq")


@dataclass(slots=True)
class LegacyMessage:
    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None

    @property
    def codec(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.magic > 0 and self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME


def _corrupt(msg: str) -> LogAppendError:
    return LogAppendError(CORRUPT_MESSAGE, msg)


def _parse_shallow(buf: bytes | memoryview) -> list[LegacyMessage]:
    """The top-level messages of a message set, CRC-checked; raises on a partial entry."""
    mv = memoryview(buf)
    out: list[LegacyMessage] = []
    pos, n = 0, len(mv)
    while pos < n:
        if pos + LOG_OVERHEAD > n:
            raise _corrupt("truncated message set entry")
        offset, size = _ENTRY.unpack_from(mv, pos)
        start = pos + LOG_OVERHEAD
        end = start + size
        if size < MIN_MESSAGE_SIZE_V0 or end > n:
            raise _corrupt(f"message at {pos} has an invalid size {size}")
        magic = mv[start + MAGIC_OFFSET]
        if magic == 0:
            crc, magic, attrs = _HEAD_V0.unpack_from(mv, start)
            ts, p = NO_TIMESTAMP, start + KEY_OFFSET_V0
        elif magic == 1:
            if size < MIN_MESSAGE_SIZE_V1:
                raise _corrupt(f"magic 1 message at {pos} is shorter than 22 bytes")
            crc, magic, attrs, ts = _HEAD_V1.unpack_from(mv, start)
            p = start + KEY_OFFSET_V1
        else:
            raise _corrupt(f"message at {pos} has magic {magic}, expected 0 or 1")
        if zlib.crc32(mv[start + MAGIC_OFFSET : end]) != crc:
            raise _corrupt(f"CRC mismatch in message at offset {offset}")
        key, p = _read_bytes(mv, p, end)
        value, p = _read_bytes(mv, p, end)
        if p != end:
            raise _corrupt(f"message at {pos} has {end - p} trailing bytes")
        out.append(LegacyMessage(offset, magic, attrs, ts, key, value))
        pos = end
    return out


def _read_bytes(mv: memoryview, p: int, end: int) -> tuple[bytes | None, int]:
    if p + 4 > end:
        raise _corrupt("truncated key/value length")
    (length,) = _I32.unpack_from(mv, p)
    p += 4
    if length < 0:
        return None, p
    if p + length > end:
        raise _corrupt("key/value extends past the message")
    return bytes(mv[p : p + length]), p + length


def decode_message_set(buf: bytes | memoryview) -> list[LegacyMessage]:
    """Every message, wrappers unwrapped, inner offsets made absolute."""
    out: list[LegacyMessage] = []
    for m in _parse_shallow(buf):
        if not m.codec:
            out.append(m)
            continue
        out.extend(_unwrap(m))
    return out


def _unwrap(w: LegacyMessage) -> list[LegacyMessage]:
    if w.value is None:
        raise _corrupt("compressed wrapper message has a null value")
    try:
        inner = _parse_shallow(compression.decompress(w.codec, w.value))
    except LogError as e:
        raise _corrupt(f"cannot read compressed wrapper at offset {w.offset}: {e.message}") from None
    if not inner:
        raise _corrupt("compressed wrapper message with no inner messages")
    for m in inner:
        if m.codec:
            raise _corrupt("nested compression in a wrapper message")
        if m.magic != w.magic:
            raise _corrupt("inner message magic differs from its wrapper's")
    if w.magic == 1:
        last_rel = inner[-1].offset
        for m in inner:
            m.offset = w.offset - last_rel + m.offset
            if w.attributes & TIMESTAMP_TYPE_MASK:
                m.timestamp = w.timestamp
    return inner


def to_v2(buf: bytes | memoryview) -> bytes:
    """Convert a magic 0/1 message set to v2 batches (base offsets from 0; the log reassigns)."""
    batches: list[bytes] = []
    run: list[Record] = []
    run_type = CREATE_TIME
    next_offset = 0

    def flush_run() -> None:
        nonlocal run, next_offset
        if run:
            batches.append(build_batch(run, next_offset, timestamp_type=run_type, max_timestamp=_max_ts(run)))
            next_offset += len(run)
            run = []

    for m in _parse_shallow(buf):
        if m.codec:
            flush_run()
            inner = _unwrap(m)
            ttype = m.timestamp_type
            recs = [Record(x.key, x.value, x.timestamp) for x in inner]
            batches.append(
                build_batch(recs, next_offset, codec=m.codec, timestamp_type=ttype, max_timestamp=_max_ts(recs))
            )
            next_offset += len(recs)
        else:
            ttype = m.timestamp_type
            if run and ttype != run_type:
                flush_run()
            run_type = ttype
            run.append(Record(m.key, m.value, m.timestamp))
    flush_run()
    return b"".join(batches)


def _max_ts(recs: list[Record]) -> int:
    return max(r.timestamp for r in recs)


def encode_message(magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    """One message (crc .. value), without the offset/size entry header."""
    body = bytearray()
    body += bytes((magic, attributes & 0xFF))
    if magic == 1:
        body += _I64.pack(timestamp)
    for b in (key, value):
        if b is None:
            body += _I32.pack(-1)
        else:
            body += _I32.pack(len(b))
            body += b
    return struct.pack(">I", zlib.crc32(body)) + bytes(body)


def encode_entry(offset: int, message: bytes) -> bytes:
    return _ENTRY.pack(offset, len(message)) + message


def build_message_set(
    messages: list[tuple[bytes | None, bytes | None, int]],
    magic: int,
    codec: int = compression.NONE,
    base_offset: int = 0,
    timestamp_type: int = CREATE_TIME,
) -> bytes:
    """A message set as an old producer writes it: (key, value, timestamp) per message."""
    tbit = TIMESTAMP_TYPE_MASK if magic == 1 and timestamp_type == LOG_APPEND_TIME else 0
    if codec == compression.NONE:
        return b"".join(
            encode_entry(base_offset + i, encode_message(magic, tbit, ts, k, v))
            for i, (k, v, ts) in enumerate(messages)
        )
    inner = b"".join(
        encode_entry(i if magic == 1 else base_offset + i, encode_message(magic, 0, ts, k, v))
        for i, (k, v, ts) in enumerate(messages)
    )
    wrapper_ts = max((ts for _, _, ts in messages), default=NO_TIMESTAMP)
    wrapper = encode_message(magic, codec | tbit, wrapper_ts, None, compression.compress(codec, inner))
    return encode_entry(base_offset + len(messages) - 1, wrapper)


def downconvert(batches: bytes | bytearray | memoryview, magic: int) -> bytes:
    """v2 batches -> a magic 0 or 1 message set for old Fetch versions (a partial trailing
    batch is ignored; control batches are dropped)."""
    if magic not in (0, 1):
        raise ValueError(f"cannot down-convert to magic {magic}")
    out = bytearray()
    for pos, _hv in iter_batches(batches):
        h = HEADER.unpack_from(batches, pos)
        attrs = h[H_ATTRIBUTES]
        if attrs & CONTROL_FLAG_MASK:
            continue
        codec = attrs & COMPRESSION_CODEC_MASK
        recs = decode_records(batches, pos)
        if not recs:
            continue
        tbit = TIMESTAMP_TYPE_MASK if magic == 1 and attrs & TIMESTAMP_TYPE_MASK else 0
        if codec == compression.NONE:
            for r in recs:
                out += encode_entry(r.offset, encode_message(magic, tbit, r.timestamp, r.key, r.value))
            continue
        if codec == compression.ZSTD:
            raise LogError(UNSUPPORTED_COMPRESSION_TYPE, "zstd batches cannot be down-converted to magic 0/1")
        first = recs[0].offset
        inner = b"".join(
            encode_entry(
                r.offset - first if magic == 1 else r.offset, encode_message(magic, 0, r.timestamp, r.key, r.value)
            )
            for r in recs
        )
        wrapper = encode_message(magic, codec | tbit, h[H_MAX_TS], None, compression.compress(codec, inner))
        out += encode_entry(recs[-1].offset, wrapper)
    return bytes(out)
