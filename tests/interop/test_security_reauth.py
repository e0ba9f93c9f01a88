"""KIP-368 re-authentication on a SASL_PLAINTEXT listener with connections.max.reauth.ms: the
lifetime is announced, clients re-authenticate on the same connection (confluent-kafka,
kafka-python, and by hand), the principal cannot change, and an expired session is closed.
About 20 s."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "security"))

from broker_process import BrokerProcess, free_port
from rawclient import ClientError, closed_without_answer, connect, sasl_plain
from secure_broker import ALICE, JAAS

pytestmark = pytest.mark.interop
LIFETIME_MS = 1500


@pytest.fixture(scope="module")
def reauth_broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("reauth") / "data"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog",
            "users",
            "add",
            "--data-dir",
            str(data),
            "--user",
            ALICE[0],
            "--password",
            ALICE[1],
        ],
        check=True,
        capture_output=True,
    )
    port = free_port()
    b = BrokerProcess(
        data,
        {
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "connections.max.reauth.ms": str(LIFETIME_MS),
        },
        port=port,
    ).start()
    yield b
    b.stop()


def _metadata(client):
    return client.request(3, {"topics": None, "allow_auto_topic_creation": False}, version=9)


def test_lifetime_reauth_and_expiry_by_hand(reauth_broker):
    client = connect(reauth_broker.port)
    resp = sasl_plain(client, "bob", "bob-secret")
    assert resp.error_code.value == 0
    assert resp.session_lifetime.total_seconds() * 1000 == LIFETIME_MS
    assert sasl_plain(client, "bob", "bob-secret").error_code.value == 0  # re-authentication, same connection
    _metadata(client)
    asked = time.monotonic()
    assert sasl_plain(client, "bob", "bob-secret", auth_version=0).error_code.value == 0  # v0 carries no lifetime
    answered = time.monotonic()  # the session ends LIFETIME_MS after a moment between the two
    lifetime = LIFETIME_MS / 1000
    with pytest.raises(ClientError, match="closed"):
        while True:  # requests are served until the session ends, the first one after it closes
            sent = time.monotonic()
            _metadata(client)
            assert sent <= answered + lifetime, f"served {sent - answered:.2f} s after the re-authentication"
            time.sleep(0.05)  # the poll interval of this wait
    assert time.monotonic() - asked > lifetime  # not closed before the session ended


def test_principal_cannot_change(reauth_broker):
    client = connect(reauth_broker.port)
    assert sasl_plain(client, "bob", "bob-secret").error_code.value == 0
    assert sasl_plain(client, "admin", "admin-secret").error_code.value == 58
    assert closed_without_answer(client)


def test_real_clients_keep_working_across_reauthentication(reauth_broker):
    from confluent_kafka import Producer
    from kafka import KafkaProducer

    log_start = len(reauth_broker.log_path.read_text())
    ck = Producer(
        {
            "bootstrap.servers": reauth_broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": ALICE[0],
            "sasl.password": ALICE[1],
        }
    )
    kp = KafkaProducer(
        bootstrap_servers=reauth_broker.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="bob",
        sasl_plain_password="bob-secret",
    )
    errors = []
    deadline = time.monotonic() + 3 * LIFETIME_MS / 1000
    n = 0
    while time.monotonic() < deadline:
        ck.produce("reauth", f"{n}".encode(), on_delivery=lambda err, msg: err and errors.append(err))
        kp.send("reauth", f"{n}".encode()).get(timeout=20)
        ck.flush(20)
        n += 1
        time.sleep(0.2)
    kp.close()
    assert not errors and n > 5
    log = reauth_broker.log_path.read_text()[log_start:]
    assert "SASL session expired" not in log and "closing connection" not in log, log[-2000:]


def test_per_listener_lifetime_on_a_listener_named_with_digits(tmp_path):
    """listener.name.<l>.connections.max.reauth.ms applies to that listener only (was ignored:
    lifetime 0), on listeners named with digits (were refused at start)."""
    data = tmp_path / "data"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog",
            "users",
            "add",
            "--data-dir",
            str(data),
            "--user",
            ALICE[0],
            "--password",
            ALICE[1],
        ],
        check=True,
        capture_output=True,
    )
    port, port2 = free_port(), free_port()
    b = BrokerProcess(
        data,
        {
            "listeners": f"CLIENT2://127.0.0.1:{port},TLS13://127.0.0.1:{port2}",
            "listener.security.protocol.map": "CLIENT2:SASL_PLAINTEXT,TLS13:SASL_PLAINTEXT",
            "listener.name.client2.plain.sasl.jaas.config": JAAS,
            "listener.name.tls13.plain.sasl.jaas.config": JAAS,
            "listener.name.client2.connections.max.reauth.ms": "4321",
        },
        port=port,
    ).start()
    try:
        one = sasl_plain(connect(port), "bob", "bob-secret")
        two = sasl_plain(connect(port2), "bob", "bob-secret")
        assert one.error_code.value == 0 and two.error_code.value == 0
        assert one.session_lifetime.total_seconds() * 1000 == 4321
        assert two.session_lifetime.total_seconds() == 0
        import stat

        assert stat.S_IMODE((data / "tidelog-scram.json").stat().st_mode) == 0o600
    finally:
        b.stop()
