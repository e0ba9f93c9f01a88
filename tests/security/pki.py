"""Test certificates made with the openssl command: a CA, a server certificate for 127.0.0.1 /
localhost, and a client certificate (CN=client) for mutual TLS."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pki:
    ca: Path  # CA certificate (PEM): the clients' ssl.ca.location, the broker's truststore
    server: Path  # server private key + certificate chain (PEM keystore)
    client_cert: Path
    client_key: Path


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path) -> Pki:
    d.mkdir(parents=True, exist_ok=True)
    _run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=tidelog-test-ca",
        cwd=d,
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subj, ext in (
        ("server", "/CN=localhost", ["-extfile", "san.ext"]),
        ("client", "/O=tidelog/CN=client", []),
    ):
        _run(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subj,
            cwd=d,
        )
        _run(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.pem",
            "-days",
            "2",
            *ext,
            cwd=d,
        )
    (d / "server-keystore.pem").write_text((d / "server.key").read_text() + (d / "server.pem").read_text())
    return Pki(d / "ca.pem", d / "server-keystore.pem", d / "client.pem", d / "client.key")
