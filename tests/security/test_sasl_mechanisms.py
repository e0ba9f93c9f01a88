"""PLAIN and SCRAM exchanges, sans IO: RFC 7677's SCRAM-SHA-256 example byte for byte, a
SCRAM-SHA-512 client computed here, and every way an exchange must fail."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from tidelog.core.scram import CredentialStore, ScramCredential
from tidelog.server.security.sasl import PlainServer, SaslFailure, ScramServer

RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def rfc_store(tmp_path=None) -> CredentialStore:
    store = CredentialStore(tmp_path)
    store.put("user", "SCRAM-SHA-256", ScramCredential.from_password("SCRAM-SHA-256", "pencil", 4096, RFC_SALT))
    return store


def test_rfc7677_example_both_directions():
    server = ScramServer("SCRAM-SHA-256", rfc_store(), nonce=lambda: RFC_SERVER_NONCE)
    first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert not server.complete
    final = server.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.username == "user"
    with pytest.raises(SaslFailure):
        server.step(b"c=biws")  # nothing after DONE


def _client_final(mechanism: str, password: str, client_first_bare: str, server_first: str) -> tuple[str, bytes]:
    digest = "sha512" if mechanism.endswith("512") else "sha256"
    attrs = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(digest, client_key).digest(), auth, digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    server_sig = hmac.new(hmac.new(salted, b"Server Key", digest).digest(), auth, digest).digest()
    return f"{without_proof},p={base64.b64encode(proof).decode()}", b"v=" + base64.b64encode(server_sig)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_round_trip_and_wrong_password(tmp_path, mechanism):
    store = CredentialStore(tmp_path)
    store.put("al,i=ce", mechanism, ScramCredential.from_password(mechanism, "secret", 4096))
    store.save()
    store = CredentialStore(tmp_path)  # read back from tidelog-scram.json
    assert "secret" not in (tmp_path / "tidelog-scram.json").read_text()
    for password, ok in (("secret", True), ("wrong", False)):
        server = ScramServer(mechanism, store)
        bare = "n=al=2Ci=3Dce,r=abcdef"
        server_first = server.step(f"n,,{bare}".encode()).decode()
        final, expected = _client_final(mechanism, password, bare, server_first)
        if ok:
            assert server.step(final.encode()) == expected
            assert server.username == "al,i=ce"
        else:
            with pytest.raises(SaslFailure, match="invalid credentials"):
                server.step(final.encode())
            assert not server.complete


@pytest.mark.parametrize(
    "first,final,match",
    [
        (b"n,,n=nobody,r=x", None, "invalid credentials"),
        (b"p=tls-unique,,n=user,r=x", None, "channel binding"),
        (b"n,,r=x", None, "lacks"),
        (b"n,,n=user,r=", None, "non-empty r="),  # RFC 5802: the client nonce is required
        (b"n,,n=us=er,r=x", None, "username"),
        (b"n,a=other,n=user,r=x", None, "authorization id"),
        (b"n,,n=user,r=x", b"c=biws,r=x-not-the-nonce,p=AAAA", "nonce"),
        (b"n,,n=user,r=x", b"c=biws,r=x%s", "lacks p="),
        (b"\xff\xfe", None, "invalid SCRAM"),
    ],
)
def test_scram_malformed_or_unknown(first, final, match):
    server = ScramServer("SCRAM-SHA-256", rfc_store(), nonce=lambda: "s")
    if final is None:
        with pytest.raises(SaslFailure, match=match):
            server.step(first)
        return
    server.step(first)
    with pytest.raises(SaslFailure, match=match):
        server.step(final.replace(b"%s", b"s"))


def test_scram_channel_binding_header_must_match():
    server = ScramServer("SCRAM-SHA-256", rfc_store(), nonce=lambda: RFC_SERVER_NONCE)
    server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(SaslFailure, match="channel binding"):
        server.step(b"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA")


@pytest.mark.parametrize(
    "token,user,error",
    [
        (b"\x00admin\x00admin-secret", "admin", None),
        (b"admin\x00admin\x00admin-secret", "admin", None),
        (b"other\x00admin\x00admin-secret", None, "authorization id"),
        (b"\x00admin\x00wrong", None, "Invalid username or password"),
        (b"\x00ghost\x00admin-secret", None, "Invalid username or password"),
        (b"\x00\x00x", None, "username not specified"),
        (b"\x00admin", None, "invalid SASL/PLAIN"),
    ],
)
def test_plain(token, user, error):
    server = PlainServer({"admin": "admin-secret"})
    if error:
        with pytest.raises(SaslFailure, match=error):
            server.step(token)
        assert not server.complete
    else:
        assert server.step(token) == b""
        assert server.complete and server.username == user
