"""`tidelog dump-log FILE [FILE ...]`: print a segment's files as kafka-dump-log does.

    tidelog dump-log 00000000000000000000.log [--deep-iteration] [--print-data-log] [--max-bytes N]
    tidelog dump-log 00000000000000000000.index | .timeindex | .txnindex [--verify-index-only]

A `.log` prints one line per batch (offsets, count, sequences, producer id/epoch, transactional
and control flags, position, timestamp and its type, size, magic, codec, CRC and whether it is
valid); with `--deep-iteration` one `| offset: ...` line per record, and with `--print-data-log`
its key, payload and headers too. Control records show their marker (`endTxnMarker: COMMIT`).
Bytes after the last whole batch are reported as invalid.

An index file is decoded entry by entry and checked against the `.log` beside it: every
`.index` entry (offset, position) must point at the batch whose last offset is that offset;
every `.timeindex` entry (timestamp, offset) must name the batch ending at that offset whose
maxTimestamp is that timestamp; every `.txnindex` entry must end at an ABORT marker of its
producer. Entries must increase. Mismatches are listed at the end and the exit status is 1.
The active segment's preallocated index tail (all-zero entries) ends the listing.

A `.snapshot` (producer state, written by the transaction service) prints one line per
producer: epoch, coordinator epoch, open transaction's first offset, and its newest batch.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..log.compression import CODEC_NAMES
from ..log.errors import CorruptRecordError
from ..log.index import OffsetIndex, TimeIndex
from ..log.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CONTROL_FLAG_MASK,
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_BASE_SEQUENCE,
    H_CRC,
    H_LAST_OFFSET_DELTA,
    H_LEADER_EPOCH,
    H_LENGTH,
    H_MAGIC,
    H_MAX_TS,
    H_PRODUCER_EPOCH,
    H_PRODUCER_ID,
    H_RECORDS_COUNT,
    HEADER,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    batch_crc_ok,
    decode_records,
    parse_control_record,
)
from ..log.txnindex import ENTRY as TXN_ENTRY
from .consume import show

MARKERS = {CONTROL_ABORT: "ABORT", CONTROL_COMMIT: "COMMIT"}  # Kafka's ControlRecordType
_OFFSET_ENTRY = OffsetIndex.ENTRY
_TIME_ENTRY = TimeIndex.ENTRY
_TXN_ENTRY = TXN_ENTRY


@dataclass(frozen=True)
class Batch:
    position: int
    header: tuple  # HEADER fields

    base_offset = property(lambda self: self.header[0])
    size = property(lambda self: LOG_OVERHEAD + self.header[1])
    attributes = property(lambda self: self.header[5])
    last_offset = property(lambda self: self.header[0] + self.header[6])
    max_timestamp = property(lambda self: self.header[8])
    producer_id = property(lambda self: self.header[9])


def base_offset_of(path: Path) -> int:
    try:
        return int(path.name.split(".")[0])
    except ValueError:
        raise SystemExit(f"tidelog: {path.name} is not named by a base offset (00000000000000000000.log)") from None


def scan(path: Path) -> tuple[list[Batch], int, int]:
    """(whole batches, end of the last whole batch, file size). Headers only."""
    out: list[Batch] = []
    size = path.stat().st_size
    with open(path, "rb") as f:
        pos = 0
        while pos + RECORD_BATCH_OVERHEAD <= size:
            f.seek(pos)
            h = HEADER.unpack(f.read(RECORD_BATCH_OVERHEAD))
            if h[H_LENGTH] < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD or pos + LOG_OVERHEAD + h[H_LENGTH] > size:
                break
            out.append(Batch(pos, h))
            pos += LOG_OVERHEAD + h[H_LENGTH]
    return out, pos, size


def batch_line(b: Batch, valid: bool) -> str:
    h = b.header
    attrs = h[H_ATTRIBUTES]
    count = h[H_RECORDS_COUNT]
    seq = h[H_BASE_SEQUENCE]
    last_seq = -1 if seq < 0 else seq + h[H_LAST_OFFSET_DELTA]
    ts_type = "LogAppendTime" if attrs & TIMESTAMP_TYPE_MASK else "CreateTime"
    return (
        f"baseOffset: {h[H_BASE_OFFSET]} lastOffset: {b.last_offset} count: {count} baseSequence: {seq} "
        f"lastSequence: {last_seq} producerId: {h[H_PRODUCER_ID]} producerEpoch: {h[H_PRODUCER_EPOCH]} "
        f"partitionLeaderEpoch: {h[H_LEADER_EPOCH]} "
        f"isTransactional: {str(bool(attrs & TRANSACTIONAL_FLAG_MASK)).lower()} "
        f"isControl: {str(bool(attrs & CONTROL_FLAG_MASK)).lower()} position: {b.position} "
        f"{ts_type}: {h[H_MAX_TS]} size: {b.size} magic: {h[H_MAGIC]} "
        f"compresscodec: {CODEC_NAMES.get(attrs & 7, attrs & 7)} "
        f"crc: {h[H_CRC]} isvalid: {str(valid).lower()}"
    )


def record_lines(buf: bytes, b: Batch, print_data: bool) -> Iterator[str]:
    h = b.header
    ts_type = "LogAppendTime" if b.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"
    control = b.attributes & CONTROL_FLAG_MASK
    for _i, r in enumerate(decode_records(buf)):
        seq = -1 if h[H_BASE_SEQUENCE] < 0 else h[H_BASE_SEQUENCE] + (r.offset - h[H_BASE_OFFSET])
        line = (
            f"| offset: {r.offset} {ts_type}: {r.timestamp} keySize: {-1 if r.key is None else len(r.key)} "
            f"valueSize: {-1 if r.value is None else len(r.value)} sequence: {seq} "
            f"headerKeys: [{','.join(k for k, _ in r.headers)}]"
        )
        if control:
            ctype, epoch = parse_control_record(r)
            line += f" endTxnMarker: {MARKERS.get(ctype, ctype)} coordinatorEpoch: {epoch}"
        elif print_data:
            line += f" key: {show(r.key)} payload: {show(r.value)}"
            if r.headers:
                line += " headers: " + ",".join(f"{k}={show(v)}" for k, v in r.headers)
        yield line


def dump_log(path: Path, out, deep: bool, print_data: bool, max_bytes: int) -> int:
    batches, end, size = scan(path)
    print(f"Dumping {path}", file=out)
    print(f"Log starting offset: {base_offset_of(path)}", file=out)
    bad = 0
    with open(path, "rb") as f:
        for b in batches:
            if b.position >= max_bytes:
                break
            f.seek(b.position)
            buf = f.read(b.size)
            valid = b.header[3] == MAGIC_V2 and batch_crc_ok(buf, 0)
            bad += not valid
            print(batch_line(b, valid), file=out)
            if (deep or print_data) and valid:
                try:
                    for line in record_lines(buf, b, print_data):
                        print(line, file=out)
                except CorruptRecordError as e:
                    print(f"| cannot decode records: {e}", file=out)
                    bad += 1
    if end < size:
        print(f"Found {size - end} invalid bytes at the end of {path.name}", file=out)
        bad += 1
    return 1 if bad else 0


# ---- indexes ---------------------------------------------------------------------------------


def _log_beside(path: Path) -> tuple[Path, list[Batch]]:
    log_path = path.with_suffix(".log")
    if not log_path.exists():
        raise SystemExit(f"tidelog: {log_path} not found (needed to check {path.name})")
    return log_path, scan(log_path)[0]


def dump_offset_index(path: Path, out, verify_only: bool) -> list[str]:
    base = base_offset_of(path)
    _, batches = _log_beside(path)
    by_pos = {b.position: b for b in batches}
    data = path.read_bytes()
    problems: list[str] = []
    prev = -1
    if not verify_only:
        print(f"Dumping {path}", file=out)
    for i in range(len(data) // _OFFSET_ENTRY.size):
        rel, pos = _OFFSET_ENTRY.unpack_from(data, i * _OFFSET_ENTRY.size)
        if i > 0 and rel == 0 and pos == 0:
            break  # preallocated tail of the active segment
        offset = base + rel
        if not verify_only:
            print(f"offset: {offset} position: {pos}", file=out)
        b = by_pos.get(pos)
        if offset <= prev:
            problems.append(f"Index offset {offset} is not larger than the previous entry {prev}")
        if b is None:
            problems.append(f"Index offset: {offset}, position {pos} is not the start of a batch in the log")
        elif b.last_offset != offset:
            problems.append(f"Index offset: {offset}, log offset: {b.last_offset}")
        prev = offset
    return problems


def dump_time_index(path: Path, out, verify_only: bool) -> list[str]:
    base = base_offset_of(path)
    _, batches = _log_beside(path)
    by_last = {b.last_offset: b for b in batches}
    data = path.read_bytes()
    problems: list[str] = []
    prev_ts = prev_off = -1
    if not verify_only:
        print(f"Dumping {path}", file=out)
    for i in range(len(data) // _TIME_ENTRY.size):
        ts, rel = _TIME_ENTRY.unpack_from(data, i * _TIME_ENTRY.size)
        if i > 0 and ts == 0 and rel == 0:
            break
        offset = base + rel
        if not verify_only:
            print(f"timestamp: {ts} offset: {offset}", file=out)
        b = by_last.get(offset)
        if b is None:
            problems.append(f"Indexed offset: {offset}, no batch ends at this offset in the log")
        elif b.max_timestamp != ts:
            problems.append(
                f"Found timestamp mismatch in {path.name}: Index timestamp: {ts}, "
                f"log timestamp: {b.max_timestamp} (batch ending at {offset})"
            )
        if ts < prev_ts or offset < prev_off:
            problems.append(
                f"Found out of order index entry: timestamp {ts} offset {offset} after "
                f"timestamp {prev_ts} offset {prev_off}"
            )
        prev_ts, prev_off = ts, offset
    return problems


def dump_txn_index(path: Path, out, verify_only: bool) -> list[str]:
    log_path, batches = _log_beside(path)
    data = path.read_bytes()
    problems: list[str] = []
    if not verify_only:
        print(f"Dumping {path}", file=out)
    if len(data) % _TXN_ENTRY.size:
        problems.append(f"{len(data) % _TXN_ENTRY.size} trailing bytes (a torn entry)")
    prev_last = -1
    with open(log_path, "rb") as f:
        for i in range(len(data) // _TXN_ENTRY.size):
            version, pid, first, last, lso = _TXN_ENTRY.unpack_from(data, i * _TXN_ENTRY.size)
            if not verify_only:
                print(
                    f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} "
                    f"lastStableOffset: {lso}",
                    file=out,
                )
            if first > last:
                problems.append(f"Entry {i}: firstOffset {first} > lastOffset {last}")
            if last < prev_last:
                problems.append(f"Entry {i}: lastOffset {last} before the previous entry's {prev_last}")
            prev_last = last
            marker = next((b for b in batches if b.base_offset <= last <= b.last_offset), None)
            if marker is None:
                problems.append(f"Entry {i}: no batch holds lastOffset {last} in {log_path.name}")
                continue
            f.seek(marker.position)
            buf = f.read(marker.size)
            ok = marker.attributes & CONTROL_FLAG_MASK and marker.producer_id == pid
            if ok:
                try:
                    ok = any(parse_control_record(r)[0] == CONTROL_ABORT for r in decode_records(buf))
                except CorruptRecordError:
                    ok = False
            if not ok:
                problems.append(f"Entry {i}: offset {last} is not an ABORT marker of producer {pid}")
    return problems


def dump_snapshot(path: Path, out) -> int:
    """A producer state snapshot (`<offset>.snapshot`, written by the transaction service): one
    line per producer with its newest kept batch, as kafka-dump-log prints `.snapshot` files."""
    from ..txn.producers import PartitionProducers

    try:
        state, offset = PartitionProducers.from_snapshot("", 0, path.read_bytes())
    except (ValueError, KeyError, TypeError) as e:
        print(f"Dumping {path}\nunreadable snapshot: {e}", file=out)
        return 1
    print(f"Dumping {path}", file=out)
    print(f"Snapshot offset: {offset}", file=out)
    for pid, entry in sorted(state.producers.items()):
        line = (
            f"producerId: {pid} producerEpoch: {entry.epoch} coordinatorEpoch: {entry.coordinator_epoch} "
            f"currentTxnFirstOffset: {'None' if entry.txn_first_offset is None else entry.txn_first_offset} "
            f"lastTimestamp: {entry.last_timestamp}"
        )
        if entry.batches:
            b = entry.batches[-1]
            line += (
                f" firstSequence: {b.first_seq} lastSequence: {b.last_seq} lastOffset: {b.last_offset} "
                f"offsetDelta: {b.last_offset - b.first_offset} timestamp: {b.timestamp}"
            )
        print(line + f" batchesKept: {len(entry.batches)}", file=out)
    return 0


INDEXES = {".index": dump_offset_index, ".timeindex": dump_time_index, ".txnindex": dump_txn_index}


def cmd_dump_log(args) -> int:
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the dump quietly
    out = sys.stdout
    status = 0
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            print(f"tidelog: {path}: no such file", file=sys.stderr)
            status = 2
            continue
        if path.suffix == ".log":
            status = max(status, dump_log(path, out, args.deep_iteration, args.print_data_log, args.max_bytes))
        elif path.suffix == ".snapshot":
            status = max(status, dump_snapshot(path, out))
        elif path.suffix in INDEXES:
            problems = INDEXES[path.suffix](path, out, args.verify_index_only)
            if problems:
                print(f"Mismatches in {path}:", file=out)
                for p in problems:
                    print(f"  {p}", file=out)
                status = max(status, 1)
            elif args.verify_index_only:
                print(f"{path}: consistent with {path.with_suffix('.log').name}", file=out)
        else:
            print(f"tidelog: {path}: not a .log, .index, .timeindex, .txnindex or .snapshot file", file=sys.stderr)
            status = 2
    out.flush()
    return status


def add_parser(sub) -> None:
    p = sub.add_parser("dump-log", help="print segment and index files (like kafka-dump-log)")
    p.add_argument("files", nargs="+", metavar="FILE", help=".log, .index, .timeindex, .txnindex or .snapshot")
    p.add_argument("--deep-iteration", action="store_true", help="one line per record")
    p.add_argument("--print-data-log", action="store_true", help="records with key, payload and headers")
    p.add_argument("--max-bytes", type=int, default=2**63 - 1, help="stop at this position in a .log")
    p.add_argument("--verify-index-only", action="store_true", help="index files: print only mismatches")
    p.set_defaults(func=cmd_dump_log)
