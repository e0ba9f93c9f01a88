"""Forged frames against a real `tidelog serve` process: one bad frame must cost one connection,
never the process."""

import socket
import struct

# CreateTopics v7 (kafka-python) with the topics array count forged to 0xFFFFFFFF, and Metadata v4
# (kcat) with an int32 count of 0x7FFFFFFF: each used to make kio's native reader request tens of
# GiB and abort the broker.
FORGED = [
    "001300070000000300126b61666b612d707974686f6e2d61646d696e00ffffffff0f396135620000000200010101000b74"
    "3338396135626f7574000000020001010100000027100000",
    "0003000400000003000c6b6361742d70726f647563657fffffff00",
    "00090006000000080015636f6e666c75656e742d6b61666b612d67726f75700009672d303939343064ffffffff0f393430"
    "6405000000000000000100000002000000030000",
]


def test_forged_array_counts_close_the_connection_not_the_broker(broker):
    for h in FORGED:
        payload = bytes.fromhex(h)
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
            s.sendall(struct.pack(">i", len(payload)) + payload)
            try:
                assert s.recv(4096) == b""
            except ConnectionResetError:
                pass
        assert broker.proc.poll() is None, broker.log()
    assert broker.log().count("cannot decode api") == len(FORGED)
    # and it still answers
    payload = struct.pack(">hhih", 18, 0, 9, -1)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        assert len(s.recv(4096)) > 10
