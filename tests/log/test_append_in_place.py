"""A writable memoryview (the server's request frame) is appended in place: same log as a copy."""

from tidelog.log import LogConfig, PartitionLog
from tidelog.log.records import Record, build_batch


def test_writable_view_and_bytes_give_the_same_log(tmp_path):
    batch = build_batch([Record(b"k%d" % i, b"v%d" % i, 1_700_000_000_000 + i) for i in range(10)])
    a = PartitionLog.open(tmp_path / "a", "t", 0, LogConfig())
    b = PartitionLog.open(tmp_path / "b", "t", 0, LogConfig())
    for _ in range(3):
        a.append(batch)
        frame = bytearray(b"header" + batch)
        info = b.append(memoryview(frame)[6:])
        assert info.num_records == 10
    assert a.read(0, 1 << 20).data == b.read(0, 1 << 20).data
    assert b.read(20, 1 << 20).records.first_offset == 20
    a.close()
    b.close()
