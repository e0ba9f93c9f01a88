"""A real `tidelog serve` with SASL_SSL, SSL (mutual TLS) and PLAINTEXT listeners, for the
security interop tests, and client settings for confluent-kafka and kafka-python."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from broker_process import BrokerProcess, free_port
from pki import Pki, make_pki

ADMIN = ("admin", "admin-secret")  # PLAIN user from the JAAS config, a super user
ALICE = ("alice", "alice-secret")  # SCRAM-SHA-512, created offline with `tidelog users add --data-dir`
BOB = ("bob", "bob-secret")  # PLAIN user, no ACLs unless a test grants them
JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
    'password="admin-secret" user_admin="admin-secret" user_bob="bob-secret";'
)


@dataclass
class SecureBroker:
    process: BrokerProcess
    pki: Pki
    sasl_port: int
    ssl_port: int
    plain_port: int

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def confluent(self, user=ALICE, mechanism="SCRAM-SHA-512", **extra) -> dict:
        return {
            "bootstrap.servers": self.sasl_bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": user[0],
            "sasl.password": user[1],
            "ssl.ca.location": str(self.pki.ca),
            **extra,
        }

    def kafka_python(self, user=ALICE, mechanism="SCRAM-SHA-512", **extra) -> dict:
        return {
            "bootstrap_servers": self.sasl_bootstrap,
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": user[0],
            "sasl_plain_password": user[1],
            "ssl_cafile": str(self.pki.ca),
            **extra,
        }

    def command_config(self, path: Path, user=ADMIN, mechanism="PLAIN") -> Path:
        path.write_text(
            "".join(f"{k}={v}\n" for k, v in self.confluent(user, mechanism).items() if k != "bootstrap.servers")
        )
        return path


def start_secure_broker(base: Path, overrides: dict | None = None) -> SecureBroker:
    pki = make_pki(base / "pki")
    data = base / "data"
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
            "--mechanism",
            "SCRAM-SHA-512",
        ],
        check=True,
        capture_output=True,
    )
    sasl, ssl_port, plain = free_port(), free_port(), free_port()
    settings = {
        "listeners": f"SASL_SSL://127.0.0.1:{sasl},SSL://127.0.0.1:{ssl_port},PLAINTEXT://127.0.0.1:{plain}",
        "ssl.keystore.location": str(pki.server),
        "ssl.truststore.location": str(pki.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "group.initial.rebalance.delay.ms": "0",
        **(overrides or {}),
    }
    process = BrokerProcess(data, settings, port=sasl).start()
    return SecureBroker(process, pki, sasl, ssl_port, plain)
