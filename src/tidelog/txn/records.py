"""Records of `__transaction_state`: one keyed record per change of a transactional id.

Kafka's transaction log layout (`TransactionLogKey` / `TransactionLogValue`, big-endian)::

    key:   version int16 (0) | transactional_id string (int16 length)
    value version 0 (transaction.version 0):
           version int16 (0) | producer_id int64 | producer_epoch int16 | timeout_ms int32
           | state int8 (TxnState) | partitions int32 count (-1: null), each: topic string,
             int32 count, int32 partition ids | last_update_ms int64 | start_ms int64
    value version 1 (transaction.version 1+, flexible: KIP-890):
           version int16 (1) | producer_id int64 | producer_epoch int16 | timeout_ms int32
           | state int8 | partitions uvarint (count + 1, 0: null), each: topic uvarint
             (length + 1) + UTF-8, partition ids uvarint (count + 1) + int32s, tagged fields
           | last_update_ms int64 | start_ms int64
           | tagged fields: 0 PreviousProducerId int64, 1 NextProducerId int64,
             2 ClientTransactionVersion int16, 3 NextProducerEpoch int16
             (each written only when not its default: -1, -1, 0, -1)

Kafka writes the version its finalized `transaction.version` names (1 from level 1 up) and reads
both; so does tidelog. The last producer epoch (KIP-360's retry check) is not in the record: a
loaded id has none, as in Kafka.

A null value is a tombstone (the transactional id expired). The topic is compacted: the latest
record per key is the state. Pure functions; `RecordFormatError` for bytes that do not parse.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from ..wire.primitives import DecodeError, encode_uvarint, read_uvarint
from .state import TxnState

KEY_VERSION = 0
VALUE_VERSION = 0
FLEXIBLE_VALUE_VERSION = 1
_HEAD = struct.Struct(">hqhib")
_TAIL = struct.Struct(">qq")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

# tagged fields of value version 1: tag -> (field, struct, default)
_TAGS: dict[int, tuple[str, struct.Struct, int]] = {
    0: ("prev_producer_id", _I64, -1),
    1: ("next_producer_id", _I64, -1),
    2: ("client_txn_version", _I16, 0),
    3: ("next_producer_epoch", _I16, -1),
}


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
    prev_producer_id: int = -1  # the producer id before the last change (KIP-890)
    next_producer_id: int = -1  # the id the producer moves to once this transaction completes
    client_txn_version: int = 0  # the transaction version the client ran this transaction with
    next_producer_epoch: int = -1


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The `__transaction_state` partition of a transactional id (stable across restarts)."""
    return zlib.crc32(transactional_id.encode()) % num_partitions


def value_version(transaction_version: int) -> int:
    """The value version Kafka writes under a finalized `transaction.version`."""
    return FLEXIBLE_VALUE_VERSION if transaction_version >= 1 else VALUE_VERSION


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


def encode_value(v: TxnLogValue, version: int = VALUE_VERSION) -> bytes:
    """The value at `version` (0, or 1: flexible with KIP-890's tagged fields)."""
    out = bytearray(_HEAD.pack(version, v.producer_id, v.producer_epoch, v.timeout_ms, int(v.state)))
    flexible = version >= FLEXIBLE_VALUE_VERSION
    out += encode_uvarint(len(v.partitions) + 1) if flexible else _I32.pack(len(v.partitions))
    for topic in sorted(v.partitions):
        parts = sorted(v.partitions[topic])
        ids = b"".join(_I32.pack(p) for p in parts)
        if flexible:
            name = topic.encode()
            out += encode_uvarint(len(name) + 1) + name + encode_uvarint(len(parts) + 1) + ids + b"\x00"
        else:
            out += _string(topic) + _I32.pack(len(parts)) + ids
    out += _TAIL.pack(v.last_update_ms, v.start_ms)
    if flexible:
        tagged = [
            (tag, s.pack(getattr(v, name))) for tag, (name, s, default) in _TAGS.items() if getattr(v, name) != default
        ]
        out += encode_uvarint(len(tagged))
        for tag, data in tagged:
            out += encode_uvarint(tag) + encode_uvarint(len(data)) + data
    return bytes(out)


def decode_value(data: bytes) -> TxnLogValue:
    try:
        version, pid, epoch, timeout, state = _HEAD.unpack_from(data, 0)
        if version not in (VALUE_VERSION, FLEXIBLE_VALUE_VERSION):
            raise RecordFormatError(f"unknown transaction log value version {version}")
        if version == VALUE_VERSION:
            return _decode_v0(data, pid, epoch, timeout, state)
        return _decode_v1(data, pid, epoch, timeout, state)
    except (struct.error, UnicodeDecodeError, ValueError) as e:
        if isinstance(e, RecordFormatError):
            raise
        raise RecordFormatError(f"bad transaction log value: {e}") from e


def _decode_v0(data: bytes, pid: int, epoch: int, timeout: int, state: int) -> TxnLogValue:
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


def _skip_tags(data: bytes, pos: int) -> int:
    n, pos = read_uvarint(data, pos)
    for _ in range(n):
        _tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        pos += size
    return pos


def _decode_v1(data: bytes, pid: int, epoch: int, timeout: int, state: int) -> TxnLogValue:
    try:
        pos = _HEAD.size
        count, pos = read_uvarint(data, pos)
        partitions: dict[str, list[int]] = {}
        for _ in range(max(count - 1, 0)):
            n, pos = read_uvarint(data, pos)
            topic = data[pos : pos + n - 1].decode()
            pos += n - 1
            k, pos = read_uvarint(data, pos)
            partitions[topic] = list(struct.unpack_from(f">{k - 1}i", data, pos))
            pos += 4 * (k - 1)
            pos = _skip_tags(data, pos)
        last_update, start = _TAIL.unpack_from(data, pos)
        pos += _TAIL.size
        v = TxnLogValue(pid, epoch, timeout, TxnState(state), partitions, last_update, start)
        n, pos = read_uvarint(data, pos)
        for _ in range(n):
            tag, pos = read_uvarint(data, pos)
            size, pos = read_uvarint(data, pos)
            known = _TAGS.get(tag)
            if known is not None and size == known[1].size:
                setattr(v, known[0], known[1].unpack_from(data, pos)[0])
            pos += size
        return v
    except DecodeError as e:
        raise RecordFormatError(f"bad transaction log value: {e}") from e
