"""Bad input against a real broker process: each bad connection is closed or answered with an
error, and the broker keeps serving everyone else."""

import base64
import json
import random
import socket
import struct

from confluent_kafka.admin import AdminClient


def connect(broker) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    return s


def recv_frame(s: socket.socket) -> bytes:
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    size = struct.unpack(">i", exact(4))[0]
    return exact(size)


def is_closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def healthy(broker) -> bool:
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    return md.controller_id == 1


def test_oversized_frame_closes_connection_without_allocating(broker_factory):
    b = broker_factory({"socket.request.max.bytes": "1000"})
    s = connect(b)
    s.sendall(struct.pack(">i", 2_000_000_000))
    assert is_closed(s)
    assert "exceeds socket.request.max.bytes" in b.log()
    assert healthy(b)


def test_unknown_api_versions_version_gets_v0_error_body(broker):
    s = connect(broker)
    payload = struct.pack(">hhih", 18, 99, 7, 1) + b"c"
    s.sendall(struct.pack(">i", len(payload)) + payload)
    resp = recv_frame(s)
    corr, err, n = struct.unpack_from(">ihi", resp, 0)
    assert corr == 7 and err == 35 and n == 1
    assert struct.unpack_from(">hhh", resp, 10) == (18, 0, 4)


def test_unsupported_api_closes_connection(broker):
    s = connect(broker)
    payload = struct.pack(">hhih", 9999, 0, 1, -1)
    s.sendall(struct.pack(">i", len(payload)) + payload)
    assert is_closed(s)
    assert "unsupported api 9999" in broker.log()


def test_never_advertises_unimplemented_apis(broker):
    s = connect(broker)
    payload = struct.pack(">hhih", 18, 0, 1, -1)
    s.sendall(struct.pack(">i", len(payload)) + payload)
    resp = recv_frame(s)
    _, err, n = struct.unpack_from(">ihi", resp, 0)
    keys = {struct.unpack_from(">h", resp, 10 + 6 * i)[0] for i in range(n)}
    assert err == 0 and 18 in keys and 3 in keys
    assert 71 not in keys  # GetTelemetrySubscriptions is not implemented


def test_garbage_and_mutated_frames_never_crash(broker, captures_path):
    rng = random.Random(1234)
    frames = [base64.b64decode(json.loads(line)["frame_b64"]) for line in captures_path.read_text().splitlines()]
    frames = [f for f in frames if f[:2] not in (b"\x00\x00", b"\x00\x01", b"\x00\x02")]
    for _i in range(300):
        f = bytearray(rng.choice(frames))
        for _ in range(rng.randint(1, 6)):
            pos = rng.randrange(len(f))
            f[pos] = rng.randrange(256)
        if rng.random() < 0.3:
            f = f[: rng.randrange(len(f))]
        s = connect(broker)
        try:
            s.sendall(struct.pack(">i", len(f)) + bytes(f))
            s.settimeout(2)
            try:
                s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                pass
        finally:
            s.close()
    assert healthy(broker)
    assert "Traceback" not in broker.log_path.read_text()
