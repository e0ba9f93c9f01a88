"""A Kafka protocol client over a plain or TLS socket that does SASL by hand (for tests that must
see exactly what the broker answers, or that it answers nothing)."""

from __future__ import annotations

import socket
import ssl
import struct

from tidelog.cli.client import ClientError, KafkaClient


def connect(port: int, ca: str | None = None, timeout: float = 10.0) -> KafkaClient:
    """A KafkaClient on 127.0.0.1:port (TLS when `ca` is given) that has sent nothing yet."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if ca is not None:
        ctx = ssl.create_default_context(cafile=ca)
        sock = ctx.wrap_socket(sock, server_hostname="127.0.0.1")
    client = KafkaClient.__new__(KafkaClient)
    client.sock, client.client_id, client.correlation, client.versions = sock, "tidelog-test", 0, {}
    return client


def api_versions(client: KafkaClient) -> dict[int, tuple[int, int]]:
    resp = client.request(18, {"client_software_name": "t", "client_software_version": "1"}, version=3)
    client.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    return client.versions


def sasl_plain(client: KafkaClient, user: str, password: str, handshake_version: int = 1, auth_version: int = 2):
    hs = client.request(17, {"mechanism": "PLAIN"}, version=handshake_version)
    if hs.error_code.value:
        return hs
    token = b"\x00" + user.encode() + b"\x00" + password.encode()
    if handshake_version == 0:
        client.sock.sendall(struct.pack(">i", len(token)) + token)
        size = struct.unpack(">i", client._recv(4))[0]
        return client._recv(size)
    return client.request(36, {"auth_bytes": token}, version=auth_version)


def closed_without_answer(client: KafkaClient) -> bool:
    try:
        data = client.sock.recv(1)
    except (ConnectionError, ssl.SSLError):
        return True
    return data == b""


__all__ = ["connect", "api_versions", "sasl_plain", "closed_without_answer", "ClientError"]
