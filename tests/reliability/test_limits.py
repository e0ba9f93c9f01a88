"""Limits that keep one client from starving the others, against a real broker process:
a client that pipelines Fetch requests and never reads the answers cannot grow the broker's
memory without bound (reading stops when its socket's write buffer is full, and at
`queued.max.requests`); `max.connections` refuses the extra connection and only it; a frame over
`socket.request.max.bytes` closes only its own connection (see also tests/server/test_bad_input.py).
"""

import os
import select
import socket
import struct
import time
import urllib.request

from broker_process import free_port
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from tcp_queues import tcp_queues

from tidelog.wire import fetch

TOPIC = "big"


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def api_versions_ok(port: int) -> bool:
    """A new connection gets an answer to ApiVersions (False: refused or closed unanswered)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            return answered(s)
        except ConnectionResetError:
            return False


def answered(s: socket.socket) -> bool:
    payload = struct.pack(">hhih", 18, 0, 77, -1)
    s.sendall(struct.pack(">i", len(payload)) + payload)
    return len(s.recv(4096)) >= 4  # the answer (b"": refused, closed unanswered)


def open_connections(metrics_port: int) -> int:
    """The broker's tidelog_connections gauge (-1 while its metrics listener does not answer)."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    except OSError:
        return -1
    return next(int(float(line.split()[1])) for line in text.splitlines() if line.startswith("tidelog_connections "))


def wait_until(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)  # the poll interval of this wait


def stopped_reading(broker_port: int, client: socket.socket) -> bool:
    """Whether the broker has stopped reading `client`: requests of ours wait unread in the
    broker's socket, and neither that nor what our socket still holds moves while the broker
    answers another connection (so its event loop ran, and did not read from us)."""
    client_port = client.getsockname()[1]

    def queues() -> tuple[tuple[int, int], tuple[int, int]]:
        ours, its = tcp_queues(client_port, broker_port), tcp_queues(broker_port, client_port)
        assert ours is not None and its is not None, "the broker closed the connection of the client that never reads"
        return ours, its

    before = queues()
    if before[1][1] == 0:  # nothing of ours unread by the broker
        return False
    assert api_versions_ok(broker_port), "the broker does not answer another client"
    return queues() == before


def fetch_frame(corr: int) -> bytes:
    req = fetch.FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=8 << 20,
        topics=[fetch.FetchRequestTopic(TOPIC, [fetch.FetchRequestPartition(0, 0, 8 << 20)])],
    )
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
    assert api_versions_ok(b.port)  # the broker's loop is past the Produce requests
    base = rss_kb(b.proc.pid)

    slow = socket.create_connection(("127.0.0.1", b.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.setblocking(False)
    sent = 0
    frames = b"".join(fetch_frame(i) for i in range(100))
    deadline = time.monotonic() + 20
    # 20000 requests (1.8 MB) for ~8 MB each: 160 GB of answers; until all are sent, or the
    # socket buffers are full and the broker has stopped reading them (that is the point)
    while sent < 200 * len(frames) and time.monotonic() < deadline:
        try:
            sent += slow.send(frames[sent % len(frames) :])
        except BlockingIOError:
            if stopped_reading(b.port, slow):
                break
            select.select([], [slow], [], 0.1)  # until the socket takes more, re-checking the above
    # The broker had its chance to take on our requests: it stopped reading us while it went on
    # serving others. What it took on it answered in the callback that read it (a Fetch with
    # data and max_wait_ms=0 is answered at once), so its memory for us is all taken by now.
    wait_until(lambda: stopped_reading(b.port, slow), 20, "the broker to stop reading a client that never reads")
    grown_mb = (rss_kb(b.proc.pid) - base) / 1024
    assert grown_mb < 150, f"broker RSS grew by {grown_mb:.0f} MB for one client that never reads"
    assert api_versions_ok(b.port)  # and everyone else is still served
    slow.close()
    print(f"slow reader: {sent} request bytes accepted, broker RSS +{grown_mb:.0f} MB")


def test_max_connections_refuses_only_the_extra_one(broker_factory):
    metrics_port = free_port()
    b = broker_factory({"max.connections": "4", "metrics.listener": f"127.0.0.1:{metrics_port}"})
    # four free slots: the connection that saw the broker start was closed, and the broker saw it
    wait_until(lambda: open_connections(metrics_port) == 0, 10, "no client connection open")
    held = [socket.create_connection(("127.0.0.1", b.port), timeout=10) for _ in range(4)]
    for s in held:  # each one admitted
        assert answered(s)
    extra = socket.create_connection(("127.0.0.1", b.port), timeout=10)
    try:
        assert extra.recv(1) == b""
    except ConnectionResetError:
        pass
    assert "max.connections reached" in b.log()
    assert answered(held[0])  # the admitted ones are still served
    held.pop().close()
    wait_until(lambda: open_connections(metrics_port) == 3, 10, "the broker to see one of the four close")
    assert api_versions_ok(b.port)  # a slot freed: a new connection is admitted
    for s in held:
        s.close()
