"""Compaction of transactional data (KIP-98's cleaner rules): records of aborted transactions are
removed and never shadow committed ones, cleaning stops at the first unstable offset, markers stay
until delete.retention.ms after their transaction's data is gone.

The model is read_committed itself, computed from batch headers and markers: what a
read_committed consumer sees of a log must not change when the log is cleaned, except that only
the latest value of each key (and no expired tombstone) is left."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from loghelpers import T0

from tidelog.log import LogConfig, PartitionLog
from tidelog.log import compression as C
from tidelog.log.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    HEADER,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    parse_control_record,
)

DAY = 86_400_000


def read_committed(log: PartitionLog) -> list[Record]:
    """What a read_committed consumer reads: committed and non-transactional records below the
    first offset of a transaction without a marker, in offset order."""
    batches = []
    off = log.log_start_offset
    while off < log.log_end_offset:
        f = log.read(off, 1 << 20)
        if f.records is None:
            break
        data = f.data
        for pos, _ in iter_batches(data):
            h = HEADER.unpack_from(data, pos)
            batches.append((h, decode_records(data, pos)))
        off = f.records.last_offset + 1
    open_txn: dict[int, list[Record]] = {}
    first_open: dict[int, int] = {}
    out: list[Record] = []
    for h, recs in batches:
        attrs, pid = h[5], h[9]
        if attrs & 0x20:  # marker
            ctype = parse_control_record(recs[0])[0] if recs else None
            staged = open_txn.pop(pid, [])
            first_open.pop(pid, None)
            if ctype == CONTROL_COMMIT:
                out.extend(staged)
        elif attrs & 0x10:
            first_open.setdefault(pid, h[0])
            open_txn.setdefault(pid, []).extend(recs)
        else:
            out.extend(recs)
    lso = min(first_open.values(), default=log.log_end_offset)
    return sorted((r for r in out if r.offset < lso), key=lambda r: r.offset)


def latest_values(records: list[Record]) -> dict[bytes, bytes]:
    last: dict[bytes, bytes | None] = {}
    for r in records:
        last[r.key] = r.value
    return {k: v for k, v in last.items() if v is not None}


def _open(d, cfg, now):
    return PartitionLog.open(d, "t", 0, cfg, lambda: now[0])


def _txn(log, pid, keys_values, rng=None):
    log.append_raw(
        build_batch(
            [Record(k, v, T0) for k, v in keys_values],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
            codec=rng.choice([C.NONE, C.GZIP]) if rng else C.NONE,
        ),
        now_ms=T0,
    )


def _filler(log, n=6):
    for i in range(n):
        log.append(build_batch([Record(b"filler-%d" % i, b"x" * 40, T0)]), now_ms=T0)


def test_aborted_value_never_shadows_committed(tmp_path):
    now = [T0 + 10_000]
    log = _open(tmp_path, LogConfig(cleanup_policy="compact", segment_bytes=300, delete_retention_ms=DAY), now)
    log.append(build_batch([Record(b"K", b"committed-v1", T0)]), now_ms=T0)
    _txn(log, 7, [(b"K", b"ABORTED")])
    log.append_control(CONTROL_ABORT, 7, 0, 0, now_ms=T0)
    _filler(log)
    before = latest_values(read_committed(log))
    assert before[b"K"] == b"committed-v1"
    stats = log.compact(force=True)
    assert stats.records_removed > 0
    assert latest_values(read_committed(log))[b"K"] == b"committed-v1"
    log.close()


def test_open_transaction_is_not_cleaned_then_aborted(tmp_path):
    now = [T0 + 10_000]
    log = _open(tmp_path, LogConfig(cleanup_policy="compact", segment_bytes=300, delete_retention_ms=DAY), now)
    log.append(build_batch([Record(b"K", b"committed-v1", T0)]), now_ms=T0)
    _filler(log)
    _txn(log, 7, [(b"K", b"ABORTED")])
    _filler(log)
    assert len(log.segments) > 3
    log.compact(force=True)  # the transaction is open: nothing at or after it is cleaned
    assert latest_values(read_committed(log))[b"K"] == b"committed-v1"
    log.append_control(CONTROL_ABORT, 7, 0, 0, now_ms=T0)
    _filler(log)
    log.compact(force=True)
    assert latest_values(read_committed(log))[b"K"] == b"committed-v1"
    log.close()


def test_markers_stay_until_delete_horizon_after_their_data_is_gone(tmp_path):
    now = [T0 + 10_000]
    log = _open(tmp_path, LogConfig(cleanup_policy="compact", segment_bytes=300, delete_retention_ms=DAY), now)
    _txn(log, 7, [(b"K", b"v1")])
    log.append_control(CONTROL_COMMIT, 7, 0, 0, now_ms=T0)
    _txn(log, 8, [(b"K", b"aborted")])
    log.append_control(CONTROL_ABORT, 8, 0, 0, now_ms=T0)
    log.append(build_batch([Record(b"K", b"v2", T0)]), now_ms=T0)
    _filler(log)

    def markers():
        n = 0
        for seg in log.segments:
            n += sum(1 for _, h in seg.batches() if h[5] & 0x20)
        return n

    log.compact(force=True)  # data of both transactions gone; markers stamped, kept
    assert markers() == 2
    assert latest_values(read_committed(log))[b"K"] == b"v2"
    now[0] += DAY - 1
    log.compact(force=True)
    assert markers() == 2  # not yet past their horizon
    now[0] += 2
    stats = log.compact(force=True)
    assert markers() == 0 and stats.markers_removed == 2
    assert latest_values(read_committed(log))[b"K"] == b"v2"
    log.close()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_cleaning_preserves_read_committed(tmp_path_factory, seed):
    rng = random.Random(seed)
    d = tmp_path_factory.mktemp("ct")
    now = [T0 + 10_000]
    cfg = LogConfig(cleanup_policy="compact", segment_bytes=rng.choice([250, 600, 2000]), delete_retention_ms=DAY)
    log = _open(d, cfg, now)
    keys = [b"k%d" % i for i in range(rng.randint(1, 6))]
    pids = [11, 12, 13]
    open_txns: set[int] = set()

    def value():
        return None if rng.random() < 0.15 else b"v%d" % rng.randrange(10_000)

    for _ in range(rng.randint(1, 60)):
        op = rng.random()
        pid = rng.choice(pids)
        if op < 0.35:
            recs = [Record(rng.choice(keys), value(), T0) for _ in range(rng.randint(1, 3))]
            log.append(build_batch(recs, codec=rng.choice([C.NONE, C.ZSTD])), now_ms=T0)
        elif op < 0.75:
            _txn(log, pid, [(rng.choice(keys), value()) for _ in range(rng.randint(1, 3))], rng)
            open_txns.add(pid)
        elif pid in open_txns:
            log.append_control(rng.choice([CONTROL_COMMIT, CONTROL_ABORT]), pid, 0, 0, now_ms=T0)
            open_txns.discard(pid)
    if rng.random() < 0.5:
        # as the transaction layer does; the cleaner also finds open transactions itself
        firsts = []
        tracker: dict[int, int] = {}
        for seg in log.segments:
            for _, h in seg.batches():
                if h[5] & 0x20:
                    tracker.pop(h[9], None)
                elif h[5] & 0x10:
                    tracker.setdefault(h[9], h[0])
        firsts = list(tracker.values())
        log.set_first_unstable_offset(min(firsts) if firsts else None)
    want = latest_values(read_committed(log))
    log.compact(force=True)
    assert latest_values(read_committed(log)) == want
    now[0] += 2 * DAY  # past every delete horizon: tombstones and stamped markers may go
    log.compact(force=True)
    log.compact(force=True)
    assert latest_values(read_committed(log)) == want
    # the open transactions end now; what they wrote decides, nothing committed before is lost
    for pid in sorted(open_txns):
        log.append_control(rng.choice([CONTROL_COMMIT, CONTROL_ABORT]), pid, 0, 0, now_ms=T0)
    log.set_first_unstable_offset(None)
    want_end = latest_values(read_committed(log))
    _filler(log, 3)
    want_end.update({b"filler-%d" % i: b"x" * 40 for i in range(3)})
    log.compact(force=True)
    assert latest_values(read_committed(log)) == want_end
    log.close()
    log = PartitionLog.open(d, "t", 0, cfg, lambda: now[0], clean_shutdown=True)
    assert latest_values(read_committed(log)) == want_end
    log.close()
