"""The replica side of PartitionLog (log/replication.py, log/epochs.py) on real files: epoch
stamping, the leader epoch cache and its checkpoint, follower appends that copy the leader byte
for byte, the high watermark, and truncation (KIP-101 divergence) down to every index file."""

from __future__ import annotations

import struct
from pathlib import Path

from crc32c import crc32c
from loghelpers import T0, all_records, batch_of

from tidelog.log import LogConfig, PartitionLog
from tidelog.log.epochs import FILE as EPOCH_FILE
from tidelog.log.epochs import LeaderEpochCache
from tidelog.log.records import iter_batches

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


def open_at(path: Path, clock, config: LogConfig = SMALL) -> PartitionLog:
    return PartitionLog.open(path, "t", 0, config, clock)


def copy_all(leader: PartitionLog, follower: PartitionLog) -> None:
    """What a follower's fetcher does: read from its log end, append as follower."""
    while follower.log_end_offset < leader.log_end_offset:
        data = leader.read(follower.log_end_offset, 250, max_offset=leader.log_end_offset).data
        follower.append_as_follower(data)


def records(log: PartitionLog) -> list:
    """Every record up to the log end (a replicated log's reads stop at the high watermark)."""
    return all_records(log, to_end=True)


def dir_files(log: PartitionLog) -> dict[str, bytes]:
    out = {}
    for p in sorted(log.dir.iterdir()):
        if p.suffix in (".log", ".index", ".timeindex", ".txnindex") or p.name == EPOCH_FILE:
            out[p.name] = p.read_bytes()
    return out


def epochs_of(log: PartitionLog) -> list[int]:
    out = []
    for seg in log.segments:
        data = seg.log.pread(0, seg.size)
        for pos, _h in iter_batches(data):
            out.append(struct.unpack_from(">i", data, pos + 12)[0])
    return out


def test_epoch_cache_answers_like_kafka(tmp_path):
    c = LeaderEpochCache(tmp_path)
    assert c.end_offset_for(0, 10) == (-1, -1)
    assert c.assign(1, 0) and c.assign(3, 40) and c.assign(4, 70)
    assert not c.assign(4, 90)  # the latest epoch, later: already covered
    assert c.end_offset_for(4, 100) == (4, 100)  # latest epoch: the log end
    assert c.end_offset_for(3, 100) == (3, 70)
    assert c.end_offset_for(2, 100) == (1, 40)  # unknown epoch: the largest below, ending at the next start
    assert c.end_offset_for(0, 100) == (-1, -1)  # below every known epoch
    assert c.end_offset_for(9, 100) == (4, 100)
    assert LeaderEpochCache(tmp_path).entries() == [(1, 0), (3, 40), (4, 70)]  # persisted
    assert (tmp_path / EPOCH_FILE).read_text() == "0\n3\n1 0\n3 40\n4 70\n"  # Kafka's format
    c.truncate_from_end(50)
    assert c.entries() == [(1, 0), (3, 40)]
    c.truncate_from_start(45)
    assert c.entries() == [(3, 45)]
    assert c.assign(5, 45) and c.entries() == [(5, 45)]  # same start: replaced
    assert c.assign(6, 50) and c.assign(7, 50) and c.entries() == [(5, 45), (7, 50)]
    # an older epoch's batch at 50 (a follower of a leader that never wrote at 6 or 7 there):
    # the contradicting entries go, as Kafka's maybeTruncateNonMonotonicEntries; epoch 5 covers it
    assert c.assign(5, 50) and c.entries() == [(5, 45)]
    assert c.assign(2, 60) and c.entries() == [(2, 60)]  # everything newer, or starting at or past 60
    (tmp_path / EPOCH_FILE).write_text("0\n2\n5 45\n")  # torn
    assert len(LeaderEpochCache(tmp_path)) == 0


def test_leader_stamps_epoch_outside_the_crc(tmp_path, clock):
    log = open_at(tmp_path, clock)
    log.append(batch_of(2, T0))
    log.set_leader_epoch(7)
    log.append(batch_of(2, T0))
    assert epochs_of(log) == [-1, 7]  # before any epoch: as the client sent it
    data = log.read(0, 1 << 20, max_offset=log.log_end_offset).data
    for pos, _h in iter_batches(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        crc = struct.unpack_from(">I", data, pos + 17)[0]
        assert crc32c(data[pos + 21 : pos + 12 + length]) == crc
    assert log.epoch_end(7) == (7, 4)
    assert log.epoch_end(6) == (-1, -1)


def test_follower_copy_is_byte_identical_across_segments(tmp_path, clock):
    leader = open_at(tmp_path / "a", clock)
    follower = open_at(tmp_path / "b", clock)
    follower.start_replication()
    leader.set_leader_epoch(1)
    for i in range(12):
        leader.append(batch_of(3, T0 + i))
        if i == 5:
            leader.set_leader_epoch(2)
    copy_all(leader, follower)
    assert len(leader.segments) > 2
    assert follower.log_end_offset == leader.log_end_offset == 36
    assert follower.epochs.entries() == [(1, 0), (2, 18)]
    # follower segments may roll at other points (it appends what one fetch brings); the
    # records, offsets and per-batch bytes are the same
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records(follower)] == [
        (r.offset, r.key, r.value, r.timestamp) for r in all_records(leader)
    ]
    a = b"".join(s.log.pread(0, s.size) for s in leader.segments)
    b = b"".join(s.log.pread(0, s.size) for s in follower.segments)
    assert a == b
    assert follower.high_watermark == 0  # a follower learns the HW from its leader
    assert follower.update_high_watermark(20) and follower.high_watermark == 20
    assert not follower.update_high_watermark(10) and follower.high_watermark == 20
    assert follower.read(0, 1 << 20).records.last_offset < 20  # reads stop at the HW
    assert follower.list_offset(-1) == (20, -1)


def test_truncate_rolls_back_segments_indexes_and_epochs(tmp_path, clock):
    ref = open_at(tmp_path / "ref", clock)
    log = open_at(tmp_path / "x", clock)
    log.start_replication()
    for lg in (ref, log):
        lg.set_leader_epoch(1)
        for i in range(6):
            lg.append(batch_of(3, T0 + i))
    log.set_leader_epoch(2)
    for i in range(8):
        log.append(batch_of(3, T0 + 100 + i))
    log.update_high_watermark(log.log_end_offset)
    assert len(log.segments) > len(ref.segments)
    assert log.truncate_to(19) == 18  # mid-batch: back to the start of the batch holding 19
    assert log.log_end_offset == 18 and log.high_watermark == 18
    assert log.epochs.entries() == [(1, 0)]
    # as Kafka: segments above the target go, the one holding it is cut (perhaps to empty)
    assert all(s.base_offset <= 18 for s in log.segments)
    assert _same_entries(log, ref)
    assert log.offset_for_timestamp(T0 + 100) is None
    assert log.offset_for_timestamp(T0 + 5) == (15, T0 + 5)
    # it goes on as a log should, and survives a restart
    log.set_leader_epoch(3)
    log.append(batch_of(2, T0 + 200))
    assert log.epochs.entries() == [(1, 0), (3, 18)]
    log.close()
    again = open_at(tmp_path / "x", clock)
    assert again.log_end_offset == 20 and [r.offset for r in records(again)][-2:] == [18, 19]
    assert again.epochs.entries() == [(1, 0), (3, 18)]


def _same_entries(a: PartitionLog, b: PartitionLog) -> bool:
    """Same segments, .log files identical, index files equal in their written entries (an
    active segment's are preallocated)."""
    sega = [s for s in a.segments if s.size]
    segb = [s for s in b.segments if s.size]
    if [s.base_offset for s in sega] != [s.base_offset for s in segb]:
        return False
    for sa, sb in zip(sega, segb):
        if sa.log.pread(0, sa.size) != sb.log.pread(0, sb.size) or sa.txn_index.entries != sb.txn_index.entries:
            return False
    for sa, sb in zip(sega, segb):
        for ia, ib in ((sa.offset_index, sb.offset_index), (sa.time_index, sb.time_index)):
            ia_entries = [ia.entry(i) for i in range(ia.entries)]
            ib_entries = [ib.entry(i) for i in range(ib.entries)]
            if ia_entries != ib_entries:
                return False
    return True


def test_divergent_logs_converge_by_leader_epoch(tmp_path, clock):
    """KIP-101: the old leader wrote at epoch 1 past what the new leader (epoch 2) has; after
    OffsetForLeaderEpoch it truncates to the divergence point and copies the new leader."""
    old = open_at(tmp_path / "old", clock)
    new = open_at(tmp_path / "new", clock)
    for lg in (old, new):
        lg.start_replication()
    old.set_leader_epoch(1)
    for i in range(4):
        old.append(batch_of(2, T0 + i))
    copy_all(old, new)  # new has offsets 0..7 at epoch 1
    for i in range(3):
        old.append(batch_of(2, T0 + 10 + i, key_prefix=b"lost"))  # never replicated
    new.set_leader_epoch(2)
    for i in range(5):
        new.append(batch_of(2, T0 + 20 + i, key_prefix=b"won"))
    assert old.log_end_offset == 14 and new.log_end_offset == 18
    epoch, end = new.epoch_end(old.latest_epoch())  # the follower asks for its latest epoch
    assert (epoch, end) == (1, 8)
    target = min(end, old.end_offset_for_epoch(epoch), old.log_end_offset)
    old.truncate_to(target)
    copy_all(new, old)
    a = b"".join(s.log.pread(0, s.size) for s in new.segments)
    b = b"".join(s.log.pread(0, s.size) for s in old.segments)
    assert a == b
    assert old.epochs.entries() == new.epochs.entries() == [(1, 0), (2, 8)]
    assert not any(r.key.startswith(b"lost") for r in records(old))


def test_a_follower_forgets_epochs_it_led_without_writing(tmp_path, clock):
    """Simulation seed 5664 of issue 26. Broker A leads epochs 1 and 2 from offset 4 without
    writing (its cache: 2 -> 4); B, elected instead (an eligible leader replica), holds
    offsets 4..7 of epoch 0 and leads epoch 3 from 8. A follows and copies 4..7 (epoch 0): its
    cache must drop the epochs that wrote nothing there, or its next OffsetForLeaderEpoch (at a
    new leader epoch 4) finds epoch 0 ending at 4 in its own cache and truncates 4..7 - records
    committed, below its high watermark."""
    a = open_at(tmp_path / "a", clock)
    b = open_at(tmp_path / "b", clock)
    for lg in (a, b):
        lg.start_replication()
    b.set_leader_epoch(0)
    for i in range(4):
        b.append(batch_of(2, T0 + i))
    a.append_as_follower(b.read(0, 1000, max_offset=4).data)  # A has 0..3, B 0..7
    a.set_leader_epoch(1)
    a.set_leader_epoch(2)
    assert a.epochs.entries() == [(0, 0), (2, 4)]  # epoch 2 replaced epoch 1 (same start)
    b.set_leader_epoch(3)
    epoch, end = b.epoch_end(a.latest_epoch())
    assert (epoch, end) == (0, 8)  # nothing to truncate: A's 0..3 are B's
    copy_all(b, a)
    assert a.epochs.entries() == [(0, 0)]
    b.set_leader_epoch(4)
    epoch, end = b.epoch_end(a.latest_epoch())
    target = min(end, a.end_offset_for_epoch(epoch), a.log_end_offset)
    assert target == 8, f"A would truncate to {target}, below records it holds and B has committed"


def test_truncate_fully_restarts_the_log(tmp_path, clock):
    log = open_at(tmp_path, clock)
    log.start_replication()
    log.set_leader_epoch(1)
    for i in range(5):
        log.append(batch_of(3, T0 + i))
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    assert len(log.segments) == 1 and log.segments[0].base_offset == 100
    assert len(log.epochs) == 0
    leader = open_at(tmp_path / "leader", clock)
    leader.truncate_fully_and_start_at(100)
    leader.set_leader_epoch(4)
    leader.append(batch_of(2, T0))
    copy_all(leader, log)
    assert [r.offset for r in records(log)] == [100, 101]
    log.close()
    again = open_at(tmp_path, clock)
    assert (again.log_start_offset, again.log_end_offset) == (100, 102)
