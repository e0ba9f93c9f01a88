"""Disk full, on a real size-limited file system: the broker's log dir is a small tmpfs (needs
root to mount; skipped otherwise), nearly filled by a ballast file.

Produce then gets KAFKA_STORAGE_ERROR (nothing half-written stays in the log), every record that
was acknowledged is still served, byte for byte and at contiguous offsets, the broker keeps
running and answering, and once the ballast is deleted, produce works again at the next offset.
"""

import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

TOPIC = "full"


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount tmpfs: {r.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def produce(boot, values):
    """Produce each value (acks=all, no retries); returns [(value, error code or offset)]."""
    p = Producer(
        {
            "bootstrap.servers": boot,
            "acks": "all",
            "retries": 0,
            "enable.idempotence": False,
            "message.timeout.ms": 10000,
            "linger.ms": 0,
            "batch.num.messages": 1,
        }
    )
    out = []

    def done(err, msg):
        out.append((msg.value(), ("err", err.code()) if err else ("ok", msg.offset())))

    for v in values:
        p.produce(TOPIC, v, partition=0, on_delivery=done)
        p.poll(0)
    p.flush(30)
    return out


def consume_all(boot, n_expected):
    c = Consumer(
        {
            "bootstrap.servers": boot,
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "check.crcs": True,
        }
    )
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got, deadline = [], time.monotonic() + 30
    while len(got) < n_expected and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append((m.offset(), m.value()))
    # nothing beyond what was acknowledged
    extra = c.poll(1.0)
    c.close()
    assert extra is None or extra.error() is not None, f"unacknowledged record served: {extra.offset()}"
    return got


def test_disk_full_refuses_writes_keeps_reads_and_recovers(broker_factory, small_disk):
    b = broker_factory(
        {
            "log.dirs": str(small_disk),
            "offsets.topic.num.partitions": "1",
            "log.flush.interval.messages": "1",
            "num.partitions": "1",
        }
    )
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(20)
    free = os.statvfs(small_disk)
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 400 * 1024))  # leave ~400 KiB

    values = [b"%05d-" % i + os.urandom(20 * 1024).hex().encode()[: 20 * 1024] for i in range(60)]
    results = produce(b.bootstrap, values)
    acked = [(r[1], v) for v, r in results if r[0] == "ok"]
    refused = [r[1] for v, r in results if r[0] == "err"]
    assert acked, "nothing fitted before the disk filled"
    assert refused and set(refused) == {KafkaError.KAFKA_STORAGE_ERROR}, refused
    assert b.proc.poll() is None, b.log()
    assert "No space left on device" in b.log()

    # reads keep working: every acknowledged record, contiguous offsets, nothing else
    assert consume_all(b.bootstrap, len(acked)) == [(i, v) for i, (_o, v) in enumerate(acked)]
    assert [o for o, _v in acked] == list(range(len(acked)))

    # space returns: writes resume at the next offset
    ballast.unlink()
    more = produce(b.bootstrap, [b"after-%d" % i for i in range(5)])
    assert [r for _v, r in more] == [("ok", len(acked) + i) for i in range(5)], more
    got = consume_all(b.bootstrap, len(acked) + 5)
    assert [v for _o, v in got] == [v for _o, v in acked] + [b"after-%d" % i for i in range(5)]

    # and what is on disk survives a restart
    b.restart()
    assert consume_all(b.bootstrap, len(acked) + 5) == got


def fill(mnt, leave: int = 0):
    st = os.statvfs(mnt)
    ballast = mnt / f"ballast-{uuid.uuid4().hex}"
    ballast.write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))
    return ballast


def test_full_disk_in_process_log_and_indexes(small_disk):
    """In process: an append on a full disk raises KAFKA_STORAGE_ERROR and leaves the log as it
    was; index pages are never touched unbacked (that used to kill the process with SIGBUS); once
    space returns, appends continue and every lookup is right."""
    from tidelog.log import LogConfig, PartitionLog
    from tidelog.log.errors import KAFKA_STORAGE_ERROR, LogError
    from tidelog.log.index import OffsetIndex
    from tidelog.log.records import Record, build_batch

    idx = OffsetIndex(small_disk / "x.index", 0, 1 << 20)
    idx.open(preallocate=True)
    idx.append(1, 100)
    ballast = fill(small_disk)
    for i in range(2, 3000):  # crosses several pages of the mapping
        idx.append(i, i * 100)
    assert 1 <= idx.entries < 3000 and idx.lookup(2999)[0] <= 2999
    idx.close()
    ballast.unlink()

    log = PartitionLog.open(small_disk, "t", 0, LogConfig(index_interval_bytes=64), lambda: 1_700_000_000_000)
    for i in range(20):
        log.append(build_batch([Record(b"k", b"v%d" % i, 1_700_000_000_000 + i)]))
    ballast = fill(small_disk, leave=0)
    size, leo = log.size, log.log_end_offset
    with pytest.raises(LogError) as e:
        for i in range(200):
            log.append(build_batch([Record(b"k", os.urandom(3000), 1_700_000_000_100 + i)]))
    assert e.value.error_code == KAFKA_STORAGE_ERROR
    leo_full, size_full = log.log_end_offset, log.size
    assert leo_full >= leo and size_full >= size
    assert [log.read(o, 1).records.first_offset for o in range(leo_full)] == list(range(leo_full))
    ballast.unlink()
    info = log.append(build_batch([Record(b"k", b"after", 1_700_000_000_500)]))
    assert info.first_offset == leo_full
    assert log.read(leo_full, 1 << 20).records.last_offset == leo_full
    assert log.offset_for_timestamp(1_700_000_000_500) == (leo_full, 1_700_000_000_500)
    log.close()
