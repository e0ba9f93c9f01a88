"""`tidelog dump-log` on segments written by a real `tidelog serve` (and, for .txnindex, by the log
engine's own transaction-marker calls), then on files damaged on purpose. About 10 s."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.log import PartitionLog
from tidelog.log.records import CONTROL_ABORT, CONTROL_COMMIT, Record, build_batch
from tidelog.log.txnindex import AbortedTxn

pytestmark = pytest.mark.interop

BATCH = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .* compresscodec: (\w+) crc: \d+ isvalid: (\w+)$"
)


def dump(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tidelog", "dump-log", *map(str, args)], capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def segments(tmp_path_factory):
    """A stopped broker's data dir: topic `dumped`, 60 gzip records in 6 produce calls, small
    segments and an index entry for every batch."""
    from broker_process import BrokerProcess

    b = BrokerProcess(
        tmp_path_factory.mktemp("dump") / "data", {"log.segment.bytes": "400", "log.index.interval.bytes": "0"}
    ).start()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("dumped", num_partitions=1, replication_factor=1)])["dumped"].result(10)
    p = Producer({"bootstrap.servers": b.bootstrap, "compression.type": "gzip", "linger.ms": 20})
    errors = []
    for call in range(6):
        for i in range(10):
            n = call * 10 + i
            p.produce(
                "dumped",
                key=b"key-%d" % n,
                value=b"value-%d" % n,
                headers=[("h", b"%d" % n)],
                timestamp=1_700_000_000_000 + n,
                on_delivery=lambda e, m: e and errors.append(e),
            )
        p.flush(10)
    assert not errors
    running = dump(*sorted((b.data_dir / "dumped-0").glob("*.index")))  # active index is preallocated
    b.stop()
    return b.data_dir / "dumped-0", running


def test_batches_and_records_of_every_segment(segments):
    d, _ = segments
    logs = sorted(d.glob("*.log"))
    assert len(logs) >= 3  # 400-byte segments, ~190-byte batches
    batches, records = [], []
    for f in logs:
        res = dump(f, "--print-data-log")
        assert res.returncode == 0, res.stdout + res.stderr
        lines = res.stdout.splitlines()
        assert lines[0] == f"Dumping {f}" and lines[1] == f"Log starting offset: {int(f.stem)}"
        for line in lines[2:]:
            m = BATCH.match(line)
            if m:
                batches.append(m.groups())
            else:
                assert line.startswith("| offset: ")
                records.append(line)
    assert [int(b[2]) for b in batches] == [10] * 6
    assert [(int(b[0]), int(b[1])) for b in batches] == [(10 * i, 10 * i + 9) for i in range(6)]
    assert {b[3] for b in batches} == {"gzip"} and {b[4] for b in batches} == {"true"}
    assert len(records) == 60
    assert records[42] == (
        "| offset: 42 CreateTime: 1700000000042 keySize: 6 valueSize: 8 sequence: -1 "
        "headerKeys: [h] key: key-42 payload: value-42 headers: h=42"
    )


def test_index_files_are_consistent_with_their_logs(segments):
    d, running = segments
    assert running.returncode == 0 and "Mismatches" not in running.stdout, running.stdout
    for f in sorted(d.glob("*.index")):
        res = dump(f)
        assert res.returncode == 0, res.stdout
        entries = [line for line in res.stdout.splitlines() if line.startswith("offset: ")]
        assert entries, res.stdout  # index.interval.bytes=0: entries after the first batch
        res = dump(f.with_suffix(".timeindex"))
        assert res.returncode == 0 and "timestamp: 17000000000" in res.stdout, res.stdout
        assert dump(f, "--verify-index-only").stdout.strip().endswith("consistent with " + f.with_suffix(".log").name)


def test_damaged_files_are_reported(segments, tmp_path):
    d, _ = segments
    src = sorted(d.glob("*.log"))[0]
    for suffix in (".log", ".index", ".timeindex"):
        (tmp_path / (src.stem + suffix)).write_bytes(src.with_suffix(suffix).read_bytes())
    log, index, tindex = (tmp_path / (src.stem + s) for s in (".log", ".index", ".timeindex"))

    data = bytearray(log.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records: its CRC no longer matches
    log.write_bytes(bytes(data) + b"\x00" * 30)  # and a torn tail
    res = dump(log)
    assert res.returncode == 1
    assert BATCH.match(res.stdout.splitlines()[2]).group(5) == "false"
    assert "Found 30 invalid bytes at the end of" in res.stdout

    raw = bytearray(index.read_bytes())
    assert len(raw) >= 8
    raw[4:8] = (int.from_bytes(raw[4:8], "big") + 1).to_bytes(4, "big")  # position off by one
    index.write_bytes(bytes(raw))
    res = dump(index)
    assert res.returncode == 1 and "is not the start of a batch" in res.stdout

    raw = bytearray(tindex.read_bytes())
    raw[0:8] = (int.from_bytes(raw[0:8], "big") + 5).to_bytes(8, "big")  # timestamp off
    tindex.write_bytes(bytes(raw))
    res = dump(tindex)
    assert res.returncode == 1 and "Found timestamp mismatch" in res.stdout


def test_transaction_markers_and_txnindex(tmp_path):
    log = PartitionLog.open(tmp_path, "txn", 0)
    t = 1_700_000_000_000
    log.append_raw(
        build_batch([Record(b"a", b"1", t)], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    )
    log.append_raw(
        build_batch([Record(b"b", b"2", t)], producer_id=8, producer_epoch=0, base_sequence=0, transactional=True)
    )
    log.append_control(CONTROL_ABORT, 7, 0, 3, now_ms=t)
    log.append_aborted_txn(AbortedTxn(7, 0, 2, 1))
    log.append_control(CONTROL_COMMIT, 8, 0, 3, now_ms=t)
    log.close()
    seg = tmp_path / "txn-0" / ("0" * 20)
    res = dump(seg.with_suffix(".log"), "--deep-iteration")
    assert res.returncode == 0, res.stdout
    assert re.search(
        r"^baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 7 "
        r"producerEpoch: 0 partitionLeaderEpoch: -?\d+ isTransactional: true isControl: false",
        res.stdout,
        re.M,
    )
    assert re.search(r"baseOffset: 2 .*isTransactional: true isControl: true", res.stdout)
    markers = re.findall(r"^\| offset: (\d+) .* endTxnMarker: (\w+) coordinatorEpoch: 3$", res.stdout, re.M)
    assert markers == [("2", "ABORT"), ("3", "COMMIT")]
    txn = seg.with_suffix(".txnindex")
    res = dump(txn)
    assert res.returncode == 0, res.stdout
    assert "version: 0 producerId: 7 firstOffset: 0 lastOffset: 2 lastStableOffset: 1" in res.stdout
    # an entry naming the COMMIT marker (offset 3) of producer 8 as an abort is inconsistent
    txn.write_bytes(
        txn.read_bytes()
        + bytes.fromhex("0000")
        + (8).to_bytes(8, "big")
        + (1).to_bytes(8, "big")
        + (3).to_bytes(8, "big")
        + (4).to_bytes(8, "big")
    )
    res = dump(txn)
    assert res.returncode == 1 and "offset 3 is not an ABORT marker of producer 8" in res.stdout


def test_not_a_segment_file(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("x")
    assert dump(f).returncode == 2
    assert dump(tmp_path / "missing.log").returncode == 2


def test_producer_snapshot_of_a_real_broker(tmp_path):
    """An idempotent producer's state, snapshotted by the broker at clean shutdown."""
    from broker_process import BrokerProcess

    from tidelog.cli.client import KafkaClient

    b = BrokerProcess(tmp_path / "data").start()
    try:
        with KafkaClient(b.bootstrap) as c:
            assert 22 in c.versions, "InitProducerId must be routed"
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("snap", num_partitions=1, replication_factor=1)])["snap"].result(10)
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 20})
        for i in range(5):
            p.produce("snap", b"v%d" % i)
        assert p.flush(10) == 0
    finally:
        b.stop()
    snaps = sorted((b.data_dir / "snap-0").glob("*.snapshot"))
    assert snaps, list((b.data_dir / "snap-0").iterdir())
    res = dump(snaps[-1])
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [line for line in res.stdout.splitlines() if line.startswith("producerId: ")]
    assert len(lines) == 1
    assert re.match(
        r"producerId: \d+ producerEpoch: 0 coordinatorEpoch: -?\d+ currentTxnFirstOffset: None "
        r"lastTimestamp: \d+ firstSequence: 0 lastSequence: 4 lastOffset: 4 offsetDelta: 4 ",
        lines[0],
    )
