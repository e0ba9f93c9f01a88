"""SASL_SSL and SSL listeners against real clients and raw frames: confluent-kafka and kafka-python
with SCRAM-SHA-512 and PLAIN (aiokafka with SCRAM), wrong credentials, plaintext clients on TLS
ports, nothing served before authentication, the pre-auth frame bound, SaslHandshake v0 raw
tokens, mutual TLS principals. About 70 s."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaException

sys.path.insert(0, str(Path(__file__).parent.parent / "security"))

from rawclient import ClientError, api_versions, closed_without_answer, connect, sasl_plain
from secure_broker import ADMIN, ALICE, BOB, start_secure_broker

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    b = start_secure_broker(tmp_path_factory.mktemp("secure"))
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(b.confluent(ADMIN, "PLAIN"))
    grants = [
        AclBinding(
            rt, "sasl-", ResourcePatternType.PREFIXED, f"User:{user}", "*", AclOperation.ALL, AclPermissionType.ALLOW
        )
        for rt in (ResourceType.TOPIC, ResourceType.GROUP)
        for user in (ALICE[0], BOB[0])
    ]
    for fut in admin.create_acls(grants, request_timeout=20).values():
        fut.result()
    yield b
    b.process.stop()


def _confluent_round_trip(conf: dict, topic: str) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    p = Producer(conf)
    for i in range(5):
        p.produce(topic, value=f"m{i}".encode())
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"sasl-g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 5 and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return got


@pytest.mark.parametrize("user,mechanism", [(ALICE, "SCRAM-SHA-512"), (BOB, "PLAIN")])
def test_confluent_kafka_over_sasl_ssl(secure, user, mechanism):
    topic = f"sasl-ck-{mechanism.lower()}"
    assert _confluent_round_trip(secure.confluent(user, mechanism), topic) == [f"m{i}".encode() for i in range(5)]


@pytest.mark.parametrize("user,mechanism", [(ALICE, "SCRAM-SHA-512"), (BOB, "PLAIN")])
def test_kafka_python_over_sasl_ssl(secure, user, mechanism):
    from kafka import KafkaConsumer, KafkaProducer

    topic = f"sasl-kp-{mechanism.lower()}"
    conf = secure.kafka_python(user, mechanism)
    producer = KafkaProducer(**conf)
    for i in range(5):
        producer.send(topic, f"k{i}".encode()).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(
        topic, group_id=f"sasl-kp-{mechanism.lower()}", auto_offset_reset="earliest", consumer_timeout_ms=15000, **conf
    )
    values = [m.value for _, m in zip(range(5), consumer)]
    consumer.close()
    assert values == [f"k{i}".encode() for i in range(5)]


@pytest.mark.parametrize(
    "user,mechanism",
    [
        (("alice", "wrong"), "SCRAM-SHA-512"),
        (("nobody", "x"), "SCRAM-SHA-512"),
        (("bob", "wrong"), "PLAIN"),
        (ALICE, "SCRAM-SHA-256"),
    ],
)
def test_wrong_credentials_are_refused(secure, user, mechanism, caplog):
    """Wrong password, unknown user, and a user with no credential for that mechanism."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

    errors = []
    admin = AdminClient({**secure.confluent(user, mechanism), "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=2)
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        admin.poll(0.5)  # error_cb is served from poll
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert any("Authentication failed" in e.str() for e in errors), errors
    # kafka-python retries the bootstrap until its deadline; each attempt fails with error 58
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaTimeoutError

    caplog.clear()
    with pytest.raises(KafkaTimeoutError):
        KafkaAdminClient(**secure.kafka_python(user, mechanism), bootstrap_timeout_ms=2000)
    assert any(
        isinstance(getattr(r, "msg", None), str) and "SaslAuthenticationFailedError" in r.getMessage()
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records][-5:]


def test_sasl_authentication_failed_code_then_close(secure):
    client = connect(secure.sasl_port, str(secure.pki.ca))
    resp = sasl_plain(client, "bob", "not-bobs")
    assert resp.error_code.value == 58  # SASL_AUTHENTICATION_FAILED
    assert closed_without_answer(client)


def test_plaintext_client_on_tls_port_is_refused(secure):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": secure.sasl_bootstrap, "security.protocol": "PLAINTEXT"})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    for port in (secure.sasl_port, secure.ssl_port):
        client = connect(port)
        with pytest.raises((ClientError, ConnectionError, OSError, ValueError)):
            api_versions(client)


def test_every_api_needs_authentication_first(secure):
    """No routed API but ApiVersions and SASL answers before authentication: the connection closes.
    The same frames after authentication get answers, so they are well-formed."""
    from tidelog.wire.schemas import request_schema

    versions = api_versions(connect(secure.sasl_port, str(secure.pki.ca)))
    assert {17, 36, 18} <= set(versions)
    admin = connect(secure.sasl_port, str(secure.pki.ca))
    assert sasl_plain(admin, *ADMIN).error_code.value == 0
    admin.versions = versions
    checked = []
    for key, (lo, hi) in sorted(versions.items()):
        if key in (17, 18, 36):
            continue
        version = max(v for v in range(lo, hi + 1) if request_schema(key, v) is not None)
        body = {"topics": [], "acks": 1, "timeout_ms": 1000} if key == 0 else {}
        client = connect(secure.sasl_port, str(secure.pki.ca))
        with pytest.raises(ClientError, match="closed"):
            client.request(key, body, version=version)
        if key != 0:  # an empty Produce (acks=1) is answered; Produce itself is covered by the clients
            admin.request(key, body, version=version)
        checked.append(key)
    assert len(checked) >= 25, checked


def test_large_frames_refused_before_authentication(secure):
    """sasl.server.max.receive.size (512 KiB) bounds a frame until the client is authenticated."""
    import struct

    client = connect(secure.sasl_port, str(secure.pki.ca))
    client.sock.sendall(struct.pack(">i", 600_000) + b"\x00" * 1024)
    assert closed_without_answer(client)
    ok = connect(secure.sasl_port, str(secure.pki.ca))
    ok.sock.sendall(struct.pack(">i", 400_000) + b"\x00" * 1024)  # under the bound: waits for the rest
    ok.sock.settimeout(1.0)
    with pytest.raises(TimeoutError):
        ok.sock.recv(1)


def test_handshake_v0_raw_tokens(secure):
    client = connect(secure.sasl_port, str(secure.pki.ca))
    assert sasl_plain(client, *BOB, handshake_version=0) == b""
    md = client.request(3, {"topics": None, "allow_auto_topic_creation": False}, version=9)
    assert md.brokers[0].port == secure.sasl_port
    bad = connect(secure.sasl_port, str(secure.pki.ca))
    with pytest.raises(ClientError):
        sasl_plain(bad, "bob", "wrong", handshake_version=0)


def test_unsupported_mechanism(secure):
    client = connect(secure.sasl_port, str(secure.pki.ca))
    resp = client.request(17, {"mechanism": "GSSAPI"}, version=1)
    assert resp.error_code.value == 33  # UNSUPPORTED_SASL_MECHANISM
    assert set(resp.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}


def test_mutual_tls_listener_principal_from_certificate(secure):
    """The SSL listener requires a client certificate; its DN is the principal (no ACL -> refused)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    base = {
        "bootstrap.servers": f"127.0.0.1:{secure.ssl_port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(secure.pki.ca),
    }
    errors = []
    no_cert = AdminClient({**base, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        no_cert.list_topics(timeout=3)
    with_cert = AdminClient(
        {
            **base,
            "ssl.certificate.location": str(secure.pki.client_cert),
            "ssl.key.location": str(secure.pki.client_key),
        }
    )
    md = with_cert.list_topics(timeout=10)
    assert md.topics == {}  # User:CN=client,O=tidelog may describe nothing
    assert md.brokers[1].port == secure.ssl_port  # each listener advertises itself
    admin = AdminClient(secure.confluent(ADMIN, "PLAIN"))
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    for fut in admin.create_acls(
        [
            AclBinding(
                ResourceType.TOPIC,
                "sasl-mtls",
                ResourcePatternType.LITERAL,
                "User:CN=client,O=tidelog",
                "*",
                AclOperation.ALL,
                AclPermissionType.ALLOW,
            )
        ]
    ).values():
        fut.result()
    from confluent_kafka import Producer

    p = Producer(
        {
            **base,
            "ssl.certificate.location": str(secure.pki.client_cert),
            "ssl.key.location": str(secure.pki.client_key),
        }
    )
    p.produce("sasl-mtls", b"x")
    assert p.flush(20) == 0
    assert "sasl-mtls" in with_cert.list_topics(timeout=10).topics


def test_aiokafka_over_sasl_ssl_scram(secure):
    import asyncio
    import ssl

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        ctx = ssl.create_default_context(cafile=str(secure.pki.ca))
        common = {
            "bootstrap_servers": secure.sasl_bootstrap,
            "security_protocol": "SASL_SSL",
            "ssl_context": ctx,
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": ALICE[0],
            "sasl_plain_password": ALICE[1],
        }
        producer = AIOKafkaProducer(**common)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait("sasl-aio", f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("sasl-aio", group_id="sasl-aio", auto_offset_reset="earliest", **common)
        await consumer.start()
        try:
            got = []
            while len(got) < 3:
                got.append((await asyncio.wait_for(consumer.getone(), 30)).value)
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == [b"a0", b"a1", b"a2"]
