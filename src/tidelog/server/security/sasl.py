"""Server side of the SASL mechanisms tidelog offers: PLAIN (RFC 4616) and SCRAM (RFC 5802/7677).

Each mechanism is a sans-IO exchange: `step(client_token) -> server_token`, raising `SaslFailure`
on bad credentials or a malformed message; `complete` turns true and `username` is set once the
client is authenticated. SCRAM is two round trips:

    state     client sends                        server answers           next state
    START     n,,n=user,r=cnonce                  r=cnonce+snonce,s=..,i=  FIRST_SENT
    FIRST_SENT c=biws,r=cnonce+snonce,p=proof     v=server-signature       DONE
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import os
from collections.abc import Callable

from ...core.scram import CredentialStore, digest_name, hmac_


class SaslFailure(Exception):
    """Authentication failed; the message is safe to send to the client."""


class PlainServer:
    def __init__(self, users: dict[str, str]) -> None:
        self.users = users
        self.complete = False
        self.username: str | None = None

    def step(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("PLAIN exchange already complete")
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslFailure("invalid SASL/PLAIN message")
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise SaslFailure("invalid SASL/PLAIN message") from None
        if not user:
            raise SaslFailure("Authentication failed: username not specified")
        if authzid and authzid != user:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        expected = self.users.get(user)
        # compare_digest on both branches so that unknown users take as long as wrong passwords
        ok = hmac.compare_digest(password.encode(), (expected or "\x00invalid").encode())
        if expected is None or not ok:
            raise SaslFailure("Authentication failed: Invalid username or password")
        self.username = user
        self.complete = True
        return b""


class _ScramState(enum.Enum):
    START = "start"
    FIRST_SENT = "first-sent"
    DONE = "done"
    FAILED = "failed"


def _attrs(msg: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in msg.split(","):
        if len(item) < 2 or item[1] != "=":
            raise SaslFailure(f"invalid SCRAM attribute {item[:16]!r}")
        out.setdefault(item[0], item[2:])
    return out


def _unescape(name: str) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise SaslFailure("invalid SCRAM username")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    def __init__(
        self,
        mechanism: str,
        store: CredentialStore,
        nonce: Callable[[], str] = lambda: base64.b64encode(os.urandom(18)).decode(),
    ) -> None:
        self.mechanism = mechanism
        self.digest = digest_name(mechanism)
        self.store = store
        self._nonce = nonce
        self.state = _ScramState.START
        self.complete = False
        self.username: str | None = None

    def step(self, token: bytes) -> bytes:
        handler = {_ScramState.START: self._first, _ScramState.FIRST_SENT: self._final}.get(self.state)
        if handler is None:
            raise SaslFailure(f"unexpected SCRAM message in state {self.state.value}")
        try:
            out = handler(token.decode())
        except SaslFailure:
            self.state = _ScramState.FAILED
            raise
        except (UnicodeDecodeError, ValueError) as e:
            self.state = _ScramState.FAILED
            raise SaslFailure(f"invalid SCRAM message: {e}") from None
        return out.encode()

    def _first(self, msg: str) -> str:
        # gs2-header: "n," or "y," (no channel binding), optional "a=authzid", ","
        flag, authzid, bare = msg.split(",", 2)
        if flag not in ("n", "y"):
            raise SaslFailure("SCRAM channel binding is not supported")
        a = _attrs(bare)
        if "n" not in a or not a.get("r"):
            raise SaslFailure("SCRAM client-first-message lacks n= or a non-empty r=")
        user = _unescape(a["n"])
        if authzid and _unescape(authzid[2:]) != user:
            raise SaslFailure("Authentication failed: authorization id differs from the username")
        self._gs2 = f"{flag},{authzid},"
        self._cred = self.store.get(user, self.mechanism)
        if self._cred is None:
            raise SaslFailure(
                f"Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.mechanism}"
            )
        self.username = user
        self._nonce_full = a["r"] + self._nonce()
        self._server_first = (
            f"r={self._nonce_full},s={base64.b64encode(self._cred.salt).decode()},i={self._cred.iterations}"
        )
        self._client_first_bare = bare
        self.state = _ScramState.FIRST_SENT
        return self._server_first

    def _final(self, msg: str) -> str:
        without_proof, sep, proof_b64 = msg.rpartition(",p=")
        if not sep:
            raise SaslFailure("SCRAM client-final-message lacks p=")
        a = _attrs(without_proof)
        if a.get("r") != self._nonce_full:
            raise SaslFailure("SCRAM nonce mismatch")
        if base64.b64decode(a.get("c", "")) != self._gs2.encode():
            raise SaslFailure("SCRAM channel binding mismatch")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        cred = self._cred
        assert cred is not None  # set by the client-first message
        signature = hmac_(self.digest, cred.stored_key, auth_message)
        proof = base64.b64decode(proof_b64, validate=True)
        client_key = bytes(x ^ y for x, y in zip(proof, signature))
        if len(proof) != len(signature) or not hmac.compare_digest(
            hashlib.new(self.digest, client_key).digest(), cred.stored_key
        ):
            raise SaslFailure(
                f"Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.mechanism}"
            )
        self.state = _ScramState.DONE
        self.complete = True
        return "v=" + base64.b64encode(hmac_(self.digest, cred.server_key, auth_message)).decode()
