"""Records of `__transaction_state`: one keyed record per change of a transactional id.

Kafka's transaction log layout (key and value version 0, big-endian, strings int16-length)::

    key:   version int16 (0) | transactional_id string
    value: version int16 (0) | producer_id int64 | producer_epoch int16 | timeout_ms int32
           | state int8 (TxnState) | partitions int32 count (-1: null), each: topic string,
             int32 count, int32 partition ids | last_update_ms int64 | start_ms int64

A null value is a tombstone (the transactional id expired). The topic is compacted: the latest
record per key is the state. Pure functions; `RecordFormatError` for bytes that do not parse.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from .state import TxnState

KEY_VERSION = 0
VALUE_VERSION = 0
_HEAD = struct.Struct(">hqhib")
_TAIL = struct.Struct(">qq")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class RecordFormatError(ValueError):
    pass


@dataclass(slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: dict[str, list[int]] = field(default_factory=dict)
    last_update_ms: int = -1
    start_ms: int = -1


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The `__transaction_state` partition of a transactional id (stable across restarts)."""
    return zlib.crc32(transactional_id.encode()) % num_partitions


def _string(s: str) -> bytes:
    b = s.encode()
    return _I16.pack(len(b)) + b


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def decode_key(data: bytes) -> str:
    try:
        version, n = struct.unpack_from(">hh", data, 0)
        if version != KEY_VERSION or n < 0 or 4 + n > len(data):
            raise RecordFormatError(f"bad transaction log key (version {version}, length {n})")
        return data[4 : 4 + n].decode()
    except (struct.error, UnicodeDecodeError) as e:
        raise RecordFormatError(f"bad transaction log key: {e}") from e


def encode_value(v: TxnLogValue) -> bytes:
    out = bytearray(_HEAD.pack(VALUE_VERSION, v.producer_id, v.producer_epoch, v.timeout_ms, int(v.state)))
    out += _I32.pack(len(v.partitions))
    for topic in sorted(v.partitions):
        parts = sorted(v.partitions[topic])
        out += _string(topic) + _I32.pack(len(parts)) + b"".join(_I32.pack(p) for p in parts)
    out += _TAIL.pack(v.last_update_ms, v.start_ms)
    return bytes(out)


def decode_value(data: bytes) -> TxnLogValue:
    try:
        version, pid, epoch, timeout, state = _HEAD.unpack_from(data, 0)
        if version != VALUE_VERSION:
            raise RecordFormatError(f"unknown transaction log value version {version}")
        pos = _HEAD.size
        (count,) = _I32.unpack_from(data, pos)
        pos += 4
        partitions: dict[str, list[int]] = {}
        for _ in range(max(count, 0)):
            (n,) = _I16.unpack_from(data, pos)
            topic = data[pos + 2 : pos + 2 + n].decode()
            pos += 2 + n
            (k,) = _I32.unpack_from(data, pos)
            pos += 4
            partitions[topic] = list(struct.unpack_from(f">{k}i", data, pos))
            pos += 4 * k
        last_update, start = _TAIL.unpack_from(data, pos)
        return TxnLogValue(pid, epoch, timeout, TxnState(state), partitions, last_update, start)
    except (struct.error, UnicodeDecodeError, ValueError) as e:
        if isinstance(e, RecordFormatError):
            raise
        raise RecordFormatError(f"bad transaction log value: {e}") from e
