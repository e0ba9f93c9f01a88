"""Fuzzing every handler through a real socket: mutated client frames, pipelined and split at
random, sent to a real broker (in process, so that its log records are visible here).

Properties, for every example:
- the fuzzed connection gets answers or is closed, and a healthy connection opened before the
  fuzzing keeps answering ApiVersions promptly (no hang, no effect on other connections);
- no handler raises: nothing is logged at ERROR and no traceback is logged (a frame the broker
  cannot decode closes the connection with a WARNING, which is the intended outcome).
At the end a real client produces and consumes through the same broker.

More examples: `TIDELOG_FUZZ_EXAMPLES=20000`.
"""

import os
import random
import socket
import struct
import time

import pytest
from corpus import all_seeds, frame, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inproc import InProcessBroker

SEEDS = all_seeds()
EXAMPLES = int(os.environ.get("TIDELOG_FUZZ_EXAMPLES", "600")) // 3
SENTINEL_CORR = 0x5EED
API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, SENTINEL_CORR, 4) + b"fuzz"


@pytest.fixture(scope="module")
def fuzz_broker(tmp_path_factory):
    b = InProcessBroker(
        tmp_path_factory.mktemp("fuzz-tcp"),
        {
            "socket.request.max.bytes": str(1 << 20),
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "2",
        },
    ).start()
    yield b
    b.stop()


def read_frame(s: socket.socket) -> bytes | None:
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    head = exact(4)
    if head is None:
        return None
    return exact(struct.unpack(">i", head)[0])


def ask_api_versions(s: socket.socket, timeout: float = 10.0) -> bool:
    """Send ApiVersions v0 and read until its answer: True; the connection closed: False."""
    s.settimeout(timeout)
    s.sendall(frame(API_VERSIONS_V0))
    while True:
        resp = read_frame(s)
        if resp is None:
            return False
        if struct.unpack_from(">i", resp)[0] == SENTINEL_CORR:
            return True


def open_connections(b: InProcessBroker) -> int:
    """The connections the broker holds, counted on its own loop."""
    return b.call(lambda: len(b.broker.connections))


def drain(s: socket.socket, wait: float) -> None:
    s.settimeout(wait)
    try:
        while s.recv(65536):
            pass
    except (TimeoutError, ConnectionError):
        pass


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.integers(0, len(SEEDS) - 1), min_size=1, max_size=4),
    st.lists(st.booleans(), min_size=1, max_size=4),
    st.integers(1, 97),
    st.randoms(use_true_random=False),
)
def test_fuzzed_connections_leave_others_untouched(fuzz_broker, sentinel, picks, mutated, chunk, rnd):
    rng = random.Random(rnd.random())
    payloads = [
        mutate(SEEDS[p], rng, SEEDS[rng.randrange(len(SEEDS))]) if mutated[k % len(mutated)] else SEEDS[p]
        for k, p in enumerate(picks)
    ]
    stream = b"".join(frame(p) for p in payloads)
    errors_before = len(fuzz_broker.collector.errors())
    open_before = open_connections(fuzz_broker)
    with socket.create_connection(("127.0.0.1", fuzz_broker.port), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            for i in range(0, len(stream), chunk):
                s.sendall(stream[i : i + chunk])
        except ConnectionError:
            pass  # closed on an earlier bad frame
        drain(s, 0.05)
    t0 = time.monotonic()
    assert ask_api_versions(sentinel), "the healthy connection was closed"
    assert time.monotonic() - t0 < 10
    # a handler error is logged on the broker's thread, at the latest while it still holds the
    # fuzzed connection (closing it cancels what it had pending): wait until it let go of it
    deadline = time.monotonic() + 10
    while open_connections(fuzz_broker) > open_before:
        assert time.monotonic() < deadline, "the broker still holds the fuzzed connection 10 s after it closed"
        time.sleep(0.001)  # the poll interval of this wait
    errors = fuzz_broker.collector.errors()[errors_before:]  # this example's own (shrinks right)
    assert not errors, [r.getMessage() for r in errors] + [p[:64].hex() for p in payloads]


@pytest.fixture(scope="module")
def sentinel(fuzz_broker):
    s = socket.create_connection(("127.0.0.1", fuzz_broker.port), timeout=10)
    assert ask_api_versions(s)
    yield s
    s.close()


def test_broker_still_serves_real_clients_after_fuzzing(fuzz_broker, sentinel):
    from confluent_kafka import Consumer, Producer

    boot = f"127.0.0.1:{fuzz_broker.port}"
    p = Producer({"bootstrap.servers": boot, "acks": "all"})
    for i in range(10):
        p.produce("after-fuzz", value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": boot, "group.id": "after-fuzz", "auto.offset.reset": "earliest"})
    c.assign([__import__("confluent_kafka").TopicPartition("after-fuzz", 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        m = c.poll(1)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [b"v%d" % i for i in range(10)]
    assert ask_api_versions(sentinel)
    assert not fuzz_broker.collector.errors()
