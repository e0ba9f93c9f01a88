"""Limits that keep one client from starving the others, against a real broker process:
a client that pipelines Fetch requests and never reads the answers cannot grow the broker's
memory without bound (reading stops when its socket's write buffer is full, and at
`queued.max.requests`); `max.connections` refuses the extra connection and only it; a frame over
`socket.request.max.bytes` closes only its own connection (see also tests/server/test_bad_input.py).
"""

import os
import socket
import struct
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.wire import fetch

TOPIC = "big"


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def api_versions_ok(port: int) -> bool:
    payload = struct.pack(">hhih", 18, 0, 77, -1)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        head = s.recv(4)
        return len(head) == 4


def fetch_frame(corr: int) -> bytes:
    req = fetch.FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, topics=[
        fetch.FetchRequestTopic(TOPIC, [fetch.FetchRequestPartition(0, 0, 8 << 20)])])
    body = b"".join(bytes(c) for c in fetch.encode_request(req, 11))
    payload = struct.pack(">hhih", 1, 11, corr, 4) + b"slow" + body
    return struct.pack(">i", len(payload)) + payload


def test_a_client_that_never_reads_cannot_grow_broker_memory(broker_factory):
    b = broker_factory({"queued.max.requests": "50"})
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(20)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 20, "compression.type": "none"})
    for _i in range(800):
        p.produce(TOPIC, os.urandom(10_000), partition=0)
        p.poll(0)
    assert p.flush(30) == 0  # ~8 MB: each Fetch answer is ~8 MB
    time.sleep(0.5)
    base = rss_kb(b.proc.pid)

    slow = socket.create_connection(("127.0.0.1", b.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.setblocking(False)
    sent = 0
    frames = b"".join(fetch_frame(i) for i in range(100))
    deadline = time.monotonic() + 20
    # 20000 requests (1.8 MB, more than socket buffers hold) for ~8 MB each: 160 GB of answers
    while sent < 200 * len(frames) and time.monotonic() < deadline:
        try:
            sent += slow.send(frames[sent % len(frames):])
        except BlockingIOError:
            time.sleep(0.05)  # the broker stopped reading us: that is the point
    time.sleep(2)
    grown_mb = (rss_kb(b.proc.pid) - base) / 1024
    assert grown_mb < 150, f"broker RSS grew by {grown_mb:.0f} MB for one client that never reads"
    assert api_versions_ok(b.port)  # and everyone else is still served
    slow.close()
    print(f"slow reader: {sent} request bytes accepted, broker RSS +{grown_mb:.0f} MB")


def test_max_connections_refuses_only_the_extra_one(broker_factory):
    b = broker_factory({"max.connections": "4"})
    held = [socket.create_connection(("127.0.0.1", b.port), timeout=10) for _ in range(4)]
    time.sleep(0.3)
    extra = socket.create_connection(("127.0.0.1", b.port), timeout=10)
    try:
        assert extra.recv(1) == b""
    except ConnectionResetError:
        pass
    assert "max.connections reached" in b.log()
    payload = struct.pack(">hhih", 18, 0, 5, -1)
    held[0].sendall(struct.pack(">i", len(payload)) + payload)
    assert len(held[0].recv(4096)) > 10  # the admitted ones are served
    held.pop().close()
    time.sleep(0.3)
    assert api_versions_ok(b.port)  # a slot freed: a new connection is admitted
    for s in held:
        s.close()
