"""SCRAM (RFC 5802, RFC 7677) arithmetic and the salted credential store.

The broker never keeps a password: a SCRAM credential is (salt, iterations, StoredKey,
ServerKey), from which it can check a client's proof and prove itself, as Kafka stores them.
Credentials live in `tidelog-scram.json` in the data directory (base64 fields), rewritten
atomically on every change; AlterUserScramCredentials and `tidelog users` manage them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .private_files import narrow_mode, write_private_json

FILE_NAME = "tidelog-scram.json"
# Kafka's wire numbering of the mechanisms in Describe/AlterUserScramCredentials.
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
BY_NUMBER = {num: name for name, (num, _) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


def digest_name(mechanism: str) -> str:
    return MECHANISMS[mechanism][1]


def hmac_(digest: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, digest).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(digest_name(mechanism), password.encode(), salt, iterations)


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted(cls, mechanism: str, salt: bytes, iterations: int, salted: bytes) -> ScramCredential:
        d = digest_name(mechanism)
        client_key = hmac_(d, salted, b"Client Key")
        return cls(salt, iterations, hashlib.new(d, client_key).digest(), hmac_(d, salted, b"Server Key"))

    @classmethod
    def from_password(
        cls, mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
    ) -> ScramCredential:
        salt = salt if salt is not None else os.urandom(24)
        return cls.from_salted(mechanism, salt, iterations, salted_password(mechanism, password, salt, iterations))

    def to_json(self) -> dict[str, Any]:
        b64: Callable[[bytes], str] = lambda b: base64.b64encode(b).decode()
        return {
            "salt": b64(self.salt),
            "iterations": self.iterations,
            "stored_key": b64(self.stored_key),
            "server_key": b64(self.server_key),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ScramCredential:
        dec = base64.b64decode
        return cls(dec(d["salt"]), int(d["iterations"]), dec(d["stored_key"]), dec(d["server_key"]))


class CredentialStore:
    """user -> mechanism -> ScramCredential, persisted in the data directory."""

    def __init__(self, data_dir: Path | None) -> None:
        self.path = Path(data_dir) / FILE_NAME if data_dir is not None else None
        self.users: dict[str, dict[str, ScramCredential]] = {}
        if self.path is not None and self.path.exists():
            narrow_mode(self.path)
            for user, mechs in json.loads(self.path.read_text()).items():
                self.users[user] = {m: ScramCredential.from_json(c) for m, c in mechs.items()}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.users.get(user, {}).get(mechanism)

    def put(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        self.users.setdefault(user, {})[mechanism] = credential

    def delete(self, user: str, mechanism: str) -> bool:
        mechs = self.users.get(user)
        if not mechs or mechanism not in mechs:
            return False
        del mechs[mechanism]
        if not mechs:
            del self.users[user]
        return True

    @staticmethod
    def credential(fields: dict[str, Any]) -> ScramCredential:
        """A credential from its JSON form (`ScramCredential.to_json`)."""
        return ScramCredential.from_json(fields)

    def replace(self, users: dict[str, dict[str, ScramCredential]]) -> None:
        """Cluster mode: the cluster's credentials, as etcd holds them now."""
        if users != self.users:
            self.users = users
            self.save()

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {u: {m: c.to_json() for m, c in sorted(ms.items())} for u, ms in sorted(self.users.items())}
        write_private_json(self.path, data)
