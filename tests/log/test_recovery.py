"""Crash recovery: torn tails at every byte, corrupt batches, lost or corrupt indexes,
and the LogManager's clean-shutdown marker and checkpoints."""

import logging
import random
import shutil

import pytest
from loghelpers import T0, all_records, batch_of

from tidelog.log import LogConfig, LogManager, PartitionLog
from tidelog.log.manager import CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_CHECKPOINT, read_checkpoint
from tidelog.log.records import Record, build_batch
from tidelog.log.segment import LogSegment

CFG = LogConfig(segment_bytes=700, index_interval_bytes=50)


def build(path, n=30):
    log = PartitionLog.open(path, "t", 0, CFG, lambda: T0)
    rng = random.Random(1)
    sizes = []
    for i in range(n):
        b = build_batch(
            [Record(b"k%d" % i, b"v" * rng.randint(0, 30), T0 + rng.randint(0, 100)) for _ in range(1 + i % 3)]
        )
        sizes.append((log.log_end_offset, len(b)))
        log.append(b)
    log.flush()
    return log, sizes


def crash_copy(log, dest):
    """The directory as a crash would leave it: files copied while the log is open."""
    shutil.copytree(log.dir, dest / log.dir.name)


def test_truncated_at_every_byte_of_last_batch(tmp_path, caplog):
    log, sizes = build(tmp_path / "src")
    expected = all_records(log)
    last_base, last_size = sizes[-1]
    seg_path = log.segments[-1].log.path
    full = seg_path.stat().st_size
    crash_copy(log, tmp_path / "img")
    log.close()
    caplog.set_level(logging.WARNING, logger="tidelog.log")
    for cut in range(full - last_size, full):
        d = tmp_path / f"c{cut}"
        shutil.copytree(tmp_path / "img", d)
        with open(d / "t-0" / seg_path.name, "r+b") as f:
            f.truncate(cut)
        rec = PartitionLog.open(d, "t", 0, CFG, lambda: T0)
        assert rec.log_end_offset == last_base
        got = all_records(rec)
        assert [(r.offset, r.key, r.value) for r in got] == [
            (r.offset, r.key, r.value) for r in expected if r.offset < last_base
        ]
        # the log goes on from there
        assert rec.append(batch_of(1, T0)).first_offset == last_base
        rec.close()
        shutil.rmtree(d)
    assert any("truncated" in m for m in caplog.messages)


def test_corrupt_batch_in_middle_segment_truncates_and_drops_later(tmp_path, caplog):
    log, sizes = build(tmp_path / "src")
    expected = all_records(log)
    segs = log.segments
    victim = segs[1]
    crash_copy(log, tmp_path)
    log.close()
    # flip a byte inside the third batch of segment 1
    path = tmp_path / "t-0" / victim.log.path.name
    data = bytearray(path.read_bytes())
    from tidelog.log.records import iter_batches

    batches = list(iter_batches(data))
    pos, h = batches[2]
    data[pos + 70] ^= 0xFF
    path.write_bytes(data)
    caplog.set_level(logging.WARNING, logger="tidelog.log")
    rec = PartitionLog.open(tmp_path, "t", 0, CFG, lambda: T0, recovery_point=0)
    cut = h.base_offset
    assert rec.log_end_offset == cut and len(rec.segments) == 2
    assert [r.offset for r in all_records(rec)] == [r.offset for r in expected if r.offset < cut]
    assert any("deleting segment" in m for m in caplog.messages)
    rec.close()


def test_recovery_point_skips_older_segments(tmp_path, monkeypatch):
    log, _ = build(tmp_path / "src")
    crash_copy(log, tmp_path)
    rp = log.segments[-2].base_offset + 1
    log.close()
    checked = []
    orig = LogSegment.recover

    def spy(self):
        checked.append(self.base_offset)
        return orig(self)

    monkeypatch.setattr(LogSegment, "recover", spy)
    rec = PartitionLog.open(tmp_path, "t", 0, CFG, lambda: T0, recovery_point=rp)
    assert checked == [s.base_offset for s in rec.segments[-2:]]
    rec.close()


@pytest.mark.parametrize("damage", ["delete", "garbage", "odd_size", "zeros"])
def test_lost_or_corrupt_indexes_are_rebuilt(tmp_path, damage):
    log, _ = build(tmp_path)
    expected = all_records(log)
    lookups = {ts: log.offset_for_timestamp(ts) for ts in range(T0 - 1, T0 + 102, 7)}
    log.close()
    rng = random.Random(3)
    for p in sorted((tmp_path / "t-0").glob("*index")):
        if damage == "delete":
            p.unlink()
        elif damage == "garbage":
            p.write_bytes(bytes(rng.randrange(256) for _ in range(96)))
        elif damage == "odd_size":
            p.write_bytes(p.read_bytes() + b"\x01\x02\x03")
        else:
            p.write_bytes(b"\0" * 96)
    rec = PartitionLog.open(tmp_path, "t", 0, CFG, lambda: T0, clean_shutdown=True)
    assert [(r.offset, r.value) for r in all_records(rec)] == [(r.offset, r.value) for r in expected]
    for off in range(0, rec.log_end_offset, 3):
        f = rec.read(off, 1)
        assert f.records.first_offset <= off <= f.records.last_offset
    assert {ts: rec.offset_for_timestamp(ts) for ts in lookups} == lookups
    rec.close()


def test_manager_clean_shutdown_and_checkpoints(tmp_path, monkeypatch):
    woken = []
    m = LogManager([tmp_path], CFG, clock_ms=lambda: T0, on_append=lambda t, p: woken.append((t, p)))
    a = m.get_or_create("orders", 0)
    b = m.get_or_create("my-topic", 3)
    for _ in range(10):
        a.append(batch_of(2, T0))
    b.append(batch_of(1, T0))
    assert woken[-1] == ("my-topic", 3) and len(woken) == 11
    a.delete_records(5)
    m.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    text = (tmp_path / RECOVERY_POINT_CHECKPOINT).read_text().splitlines()
    assert text[:2] == ["0", "2"] and "orders 0 20" in text and "my-topic 3 1" in text
    monkeypatch.setattr(LogSegment, "recover", lambda self: pytest.fail("clean start must not recover"))
    m2 = LogManager([tmp_path], CFG, clock_ms=lambda: T0)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    a2 = m2.get("orders", 0)
    assert (a2.log_start_offset, a2.log_end_offset) == (5, 20)
    assert m2.get("my-topic", 3).log_end_offset == 1
    monkeypatch.undo()
    # crash: no close; a torn tail is cut off at the next start
    a2.append(batch_of(2, T0))
    a2.flush()
    m2.checkpoint()
    seg = a2.segments[-1].log.path
    with open(seg, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x16\x00\x00\x01\x00torn")
    m3 = LogManager([tmp_path], CFG, clock_ms=lambda: T0)
    assert m3.get("orders", 0).log_end_offset == 22
    assert read_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT)[("orders", 0)] == 22
    assert m3.delete("my-topic", 3) and not (tmp_path / "my-topic-3").exists()
    m3.close()


def test_many_segments_open_fast(tmp_path):
    import time

    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(segment_bytes=200), lambda: T0)
    for _ in range(1000):
        log.append(batch_of(2, T0))
    n = len(log.segments)
    log.close()
    t = time.perf_counter()
    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(segment_bytes=200), lambda: T0, clean_shutdown=True)
    elapsed = time.perf_counter() - t
    assert n >= 500 and log.log_end_offset == 2000
    assert elapsed < 2.0
    assert sum(1 for s in log.segments if s.offset_index.is_open) <= 1  # indexes opened lazily
    log.close()


def build_rising(path, n=40):
    """Batches whose timestamps mostly rise (a producer's clock), with one jump back."""
    log = PartitionLog.open(path, "t", 0, CFG, lambda: T0)
    for i in range(n):
        ts = T0 + (i * 10 if i != n // 2 else 5)
        log.append(build_batch([Record(b"k%d" % i, b"v" * 20, ts + j) for j in range(1 + i % 3)]))
    log.flush()
    return log


def test_time_index_cut_to_whole_entries_is_rebuilt_below_the_recovery_point(tmp_path):
    """A closed segment's .timeindex cut to fewer whole entries looks well formed, but its last
    entry is then not the segment's largest timestamp; without a check, time lookups and
    retention would use it. Opened after a clean shutdown (nothing recovered), every cut is
    caught and the lookups answer as before."""
    log = build_rising(tmp_path / "src")
    lookups = {ts: log.offset_for_timestamp(ts) for ts in range(T0 - 1, T0 + 420, 3)}
    log.close()
    closed = sorted((tmp_path / "src" / "t-0").glob("*.timeindex"))[:-1]
    assert len(closed) >= 3
    for path in closed:
        entries = path.stat().st_size // 12
        assert entries >= 2, path
        for keep in range(entries):
            d = tmp_path / f"cut-{path.stem}-{keep}"
            shutil.copytree(tmp_path / "src", d)
            cut = d / "t-0" / path.name
            cut.write_bytes(cut.read_bytes()[: keep * 12])
            rec = PartitionLog.open(d, "t", 0, CFG, lambda: T0, clean_shutdown=True)
            assert {ts: rec.offset_for_timestamp(ts) for ts in lookups} == lookups, (path.name, keep)
            rec.close()


@pytest.mark.parametrize(
    "raw",
    [
        b"0\n1\nt 0 6\r",  # the final newline garbled into whitespace
        b"0\n1\nt 0 6",  # cut before the final newline
        b"0\n2\nt 0 6\n",  # cut after a whole line
        b"0\n1\nt 0 6\nt 1 2\n",  # more entries than announced
        b"0\n1\nt  0 6\n",
        b"0\n1\nt 0 -6\n",
        b"0\n1\nt 0 06\n",
        b"0\n1\nt\x00 0 6\n",
        b"0\n1\n\xff 0 6\n",
        b"1\n1\nt 0 6\n",
        b"0\n 1\nt 0 6\n",
        b"0\n2\nt 0 6\nt 0 7\n",
    ],
)
def test_damaged_checkpoint_is_refused_whole(tmp_path, raw, caplog):
    """A checkpoint is replaced atomically, so damage means something else went wrong: the file
    is ignored (recovery then checks from offset 0) rather than half-believed."""
    path = tmp_path / RECOVERY_POINT_CHECKPOINT
    path.write_bytes(raw)
    with caplog.at_level(logging.WARNING, logger="tidelog"):
        assert read_checkpoint(path) == {}
    assert "malformed checkpoint" in caplog.text


def test_checkpoint_round_trip(tmp_path):
    from tidelog.log.manager import write_checkpoint

    entries = {("orders", 0): 22, ("a.b-c_d", 12): 0, ("__consumer_offsets", 49): 10**15}
    write_checkpoint(tmp_path / "cp", entries)
    assert read_checkpoint(tmp_path / "cp") == entries
    write_checkpoint(tmp_path / "empty", {})
    assert (tmp_path / "empty").read_bytes() == b"0\n0\n"
    assert read_checkpoint(tmp_path / "empty") == {}
