"""Power-loss simulation on the files of a log directory.

A log dir is built once (three partitions, many small segments, indexes every few batches, an
aborted transaction in the txn index, both checkpoints), then for every example a copy of it is
damaged the way a power cut leaves files — the tail of one file cut off or overwritten with
garbage from a random byte on — and reopened by `LogManager` without a clean-shutdown marker.

Whatever the damage, the log opens, and:
- a damaged `.log` tail: every batch that ended before the damaged byte is still served, byte for
  byte; nothing after it is (no garbage is ever served); the truncation is logged;
- a damaged index, time index, txn index or checkpoint: every record is still there, offset and
  time lookups give the answers they gave before; aborted-transaction lookups never fail and
  return the undamaged entries (a damaged `.txnindex` keeps the entries before the damage).

Examples: TIDELOG_POWERLOSS_EXAMPLES (default 150, ~10 s with /dev/shm).
"""

import logging
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidelog.log import AbortedTxn, LogConfig, LogManager
from tidelog.log.manager import LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from tidelog.log.records import CONTROL_ABORT, Record, build_batch, iter_batches

T0 = 1_700_000_000_000
CFG = LogConfig(segment_bytes=1500, index_interval_bytes=100)
PARTITIONS = 3
EXAMPLES = int(os.environ.get("TIDELOG_POWERLOSS_EXAMPLES", "150"))
KINDS = ["log", "index", "timeindex", "txnindex", RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT]


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def batches(log):
    """(first, last, bytes) of every batch served by read(), in order."""
    out, off = [], log.log_start_offset
    while off < log.log_end_offset:
        f = log.read(off, 1 << 20)
        if f.records is None:
            break
        data = f.data
        for pos, h in iter_batches(data):
            size = 12 + h.batch_length
            out.append((h.base_offset, h.base_offset + h.last_offset_delta, bytes(data[pos : pos + size])))
        off = f.records.last_offset + 1
    return out


def lookups(log):
    by_time = {ts: log.offset_for_timestamp(ts) for ts in range(T0 - 1, T0 + 400, 13)}
    by_offset = {}
    for off in range(log.log_start_offset, log.log_end_offset, 5):
        r = log.read(off, 1).records
        by_offset[off] = (r.first_offset, r.last_offset)
    return by_time, by_offset


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """Where the copies live: /dev/shm when there is one (fsync-free: thousands of opens), else tmp."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        d = tempfile.mkdtemp(prefix="tidelog-powerloss-", dir="/dev/shm")
        yield Path(d)
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path_factory.mktemp("powerloss")


@pytest.fixture(scope="module")
def pristine_dir(scratch):
    d = scratch / "pristine" / "logs"
    m = LogManager([d], CFG, clock_ms=lambda: T0)
    rng = random.Random(7)
    for p in range(PARTITIONS):
        log = m.get_or_create("t", p)
        for i in range(60 + 10 * p):
            recs = [Record(b"k%d" % i, b"v" * rng.randint(0, 40), T0 + i * 5 + j) for j in range(1 + i % 3)]
            if i == 40:  # an aborted transaction: 2 transactional batches, then the ABORT marker
                first = log.log_end_offset
                log.append(build_batch(recs, producer_id=9, producer_epoch=0, base_sequence=0, transactional=True))
                log.append(
                    build_batch(recs, producer_id=9, producer_epoch=0, base_sequence=len(recs), transactional=True)
                )
                marker = log.append_control(CONTROL_ABORT, 9, 0, 0, now_ms=T0 + 300)
                log.append_aborted_txn(AbortedTxn(9, first, marker.last_offset, marker.last_offset + 1))
                continue
            log.append(build_batch(recs))
        log.flush()
        if p == 0:
            m.checkpoint()  # recovery points of the partitions written so far
    expected = {}
    for log in m.logs():
        expected[log.partition] = (batches(log), lookups(log), log.collect_aborted(0, log.log_end_offset))
    for log in m.logs():
        log.close()  # files as a crash after the last fsync leaves them: no clean-shutdown marker
    return d, expected


def damage(d, kind, partition, where, garble, rng):
    if kind in (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT):
        path = d / kind
    else:
        files = sorted((d / f"t-{partition}").glob(f"*.{kind}"))
        files = [f for f in files if f.stat().st_size > 0] or files
        path = files[-1] if kind == "log" or rng.random() < 0.7 else rng.choice(files)
    data = path.read_bytes()
    pos = min(int(where * len(data)), max(len(data) - 1, 0))
    if garble and data and kind == "txnindex":
        # No checksum: a plausible garbled entry is undetectable (as in Kafka), so this file gets
        # what file systems actually show after a power cut in an append-only file: zeros.
        path.write_bytes(data[:pos] + bytes(len(data) - pos))
    elif garble and data:
        tail = bytes(b ^ rng.randrange(1, 256) for b in data[pos:])
        path.write_bytes(data[:pos] + tail)
    else:
        path.write_bytes(data[:pos])
    return path, pos


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(KINDS), st.integers(0, PARTITIONS - 1), st.floats(0, 1), st.booleans(), st.randoms())
def test_power_loss_damage_is_truncated_and_only_it(pristine_dir, scratch, kind, partition, where, garble, rnd):
    src, expected = pristine_dir
    d = Path(tempfile.mkdtemp(dir=scratch)) / "logs"
    shutil.copytree(src, d)
    rng = random.Random(rnd.random())
    path, pos = damage(d, kind, partition, where, garble, rng)

    cap = Capture()
    logging.getLogger("tidelog").addHandler(cap)
    try:
        m = LogManager([d], CFG, clock_ms=lambda: T0)
        for log in m.logs():
            want_batches, (want_time, want_offset), want_aborted = expected[log.partition]
            got = batches(log)
            if kind == "log" and log.partition == partition:
                seg_base = int(path.name.split(".")[0])
                # every batch wholly before the damaged byte survives, byte for byte
                keep, seg_pos, boundaries = [], 0, {0}
                for first, last, raw in want_batches:
                    if first < seg_base:
                        keep.append((first, last, raw))
                        continue
                    if seg_pos + len(raw) <= pos:
                        keep.append((first, last, raw))
                    seg_pos += len(raw)
                    boundaries.add(seg_pos)
                assert got == keep, (path.name, pos, garble, len(got), len(keep))
                if garble or pos not in boundaries:  # a torn batch was left: it must be reported
                    assert any("truncated" in msg for msg in cap.messages), cap.messages
            else:
                assert got == want_batches, (kind, path.name, pos, garble)
                assert lookups(log) == (want_time, want_offset), (kind, path.name, pos, garble)
                aborted = log.collect_aborted(0, log.log_end_offset)
                if kind == "txnindex" and log.partition == partition:
                    # The log layer keeps the undamaged entries and drops the rest; the txn service
                    # re-adds entries for markers after its producer snapshot (txn.snapshots).
                    assert aborted == want_aborted[: len(aborted)], (path.name, pos, garble)
                else:
                    assert aborted == want_aborted, (kind, path.name, pos)
        m.close()
    finally:
        logging.getLogger("tidelog").removeHandler(cap)
        shutil.rmtree(d.parent, ignore_errors=True)
