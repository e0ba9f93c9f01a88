"""Fetch v4+ sends segment bytes with os.sendfile: the bytes on the wire are the segment file's,
responses stay in request order when a large one has to wait for a slow reader, and old
versions (down-converted) and TLS-less small fetches still work."""

from __future__ import annotations

import socket
import struct
import time

from confluent_kafka import Producer
from tcp_queues import tcp_queues

from tidelog.wire import fetch as codec

_I32 = struct.Struct(">i")


def _request(api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    head = struct.pack(">hhih", api_key, version, correlation, 4) + b"test"
    return _I32.pack(len(head) + len(body)) + head + body


def _fetch_body(topic: str, offset: int, max_bytes: int, version: int) -> bytes:
    req = codec.FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=max_bytes,
        topics=[
            codec.FetchRequestTopic(
                topic=topic,
                partitions=[
                    codec.FetchRequestPartition(partition=0, fetch_offset=offset, partition_max_bytes=max_bytes)
                ],
            )
        ],
    )
    return b"".join(bytes(c) for c in codec.encode_request(req, version))


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(min(1 << 20, n - len(buf)))
            assert chunk, "connection closed"
            buf += chunk
        return bytes(buf)

    (size,) = _I32.unpack(exactly(4))
    return exactly(size)


def _tcp_queues(local_port: int, remote_port: int) -> tuple[int, int]:
    queues = tcp_queues(local_port, remote_port)
    assert queues is not None, f"no TCP socket from {local_port} to {remote_port}: the broker closed the connection"
    return queues


def wait_until_stalled(broker_port: int, client: socket.socket, timeout: float = 30.0) -> None:
    """Until the broker's answer fills both sockets' buffers and waits: what it sent is queued
    unread in ours, more waits unacknowledged in its own, and neither moves while it answers
    another connection (so its event loop ran and could not send us more: it waits for
    writability)."""
    ours = client.getsockname()[1]
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        before = last = (_tcp_queues(broker_port, ours)[0], _tcp_queues(ours, broker_port)[1])
        if before[0] > 0 and before[1] > 0:
            with socket.create_connection(("127.0.0.1", broker_port), timeout=10) as other:
                other.sendall(_request(18, 0, 99, b""))
                assert _I32.unpack_from(_read_frame(other))[0] == 99
            last = (_tcp_queues(broker_port, ours)[0], _tcp_queues(ours, broker_port)[1])
            if last == before:
                return
        time.sleep(0.05)  # the poll interval of this wait
    raise AssertionError(f"the broker's answer did not stall within {timeout} s (unacknowledged, unread: {last})")


def _produce(bootstrap: str, topic: str, n: int, size: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, (b"%08d" % i) * (size // 8))
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(30) == 0


def test_large_fetch_is_the_segment_bytes_and_keeps_order_with_a_slow_reader(broker):
    topic = "zc"
    _produce(broker.bootstrap, topic, 12_000, 1024)  # ~12 MiB in one segment
    segment = (broker.data_dir / f"{topic}-0" / ("0" * 20 + ".log")).read_bytes()
    with socket.create_connection(("127.0.0.1", broker.port)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        # A large fetch, then another fetch and an ApiVersions, pipelined; read nothing until the
        # broker's socket is full and the sendfile has to wait for writability.
        s.sendall(
            _request(1, 11, 1, _fetch_body(topic, 0, 64 << 20, 11))
            + _request(1, 11, 2, _fetch_body(topic, 5000, 4096, 11))
            + _request(18, 0, 3, b"")
        )
        wait_until_stalled(broker.port, s)
        first, second, third = _read_frame(s), _read_frame(s), _read_frame(s)
    assert [_I32.unpack_from(f)[0] for f in (first, second, third)] == [1, 2, 3]
    resp = codec.decode_response(memoryview(first)[4:], 11)
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0 and part.high_watermark == 12_000
    assert bytes(part.records[0]) == segment
    resp2 = codec.decode_response(memoryview(second)[4:], 11)
    data = bytes(resp2.responses[0].partitions[0].records[0])
    assert 0 < len(data) and segment.find(data) > 0  # whole batches from the file


def test_old_fetch_versions_still_convert(broker):
    topic = "zc-old"
    _produce(broker.bootstrap, topic, 100, 100)
    with socket.create_connection(("127.0.0.1", broker.port)) as s:
        s.sendall(
            _request(1, 3, 7, _fetch_body(topic, 0, 1 << 20, 3)) + _request(1, 4, 8, _fetch_body(topic, 0, 1 << 20, 4))
        )
        old, new = _read_frame(s), _read_frame(s)
    assert _I32.unpack_from(old)[0] == 7 and _I32.unpack_from(new)[0] == 8
    recs_old = bytes(codec.decode_response(memoryview(old)[4:], 3).responses[0].partitions[0].records[0])
    recs_new = bytes(codec.decode_response(memoryview(new)[4:], 4).responses[0].partitions[0].records[0])
    assert recs_old[16] == 1  # magic 1 message set
    assert recs_new[16] == 2  # v2 batches, as on disk
