"""Basic authentication of registry requests against the broker's SCRAM users: a password is
right when it derives, with the salt and iterations stored for one of the user's mechanisms, the
stored key kept there (SCRAM keeps no password). Successful checks are remembered (by a hash of
the password, bounded) so a keep-alive client does not pay PBKDF2 on every request."""

from __future__ import annotations

import hashlib
import hmac

from ..core.scram import CredentialStore, ScramCredential


class ScramPasswords:
    MAX_REMEMBERED = 1024

    def __init__(self, credentials: CredentialStore) -> None:
        self.credentials = credentials
        self._ok: dict[tuple[str, bytes], ScramCredential] = {}

    def __call__(self, user: str, password: str) -> bool:
        mechs = self.credentials.users.get(user, {})
        token = (user, hashlib.sha256(password.encode()).digest())
        known = self._ok.get(token)
        if known is not None and known in mechs.values():
            return True
        for mechanism, cred in mechs.items():
            if hmac.compare_digest(self._derive(mechanism, cred, password), cred.stored_key):
                if len(self._ok) >= self.MAX_REMEMBERED:
                    self._ok.clear()
                self._ok[token] = cred
                return True
        return False

    @staticmethod
    def _derive(mechanism: str, cred: ScramCredential, password: str) -> bytes:
        return ScramCredential.from_password(mechanism, password, cred.iterations, cred.salt).stored_key
