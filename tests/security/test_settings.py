"""Security configuration: Kafka's keys, per-listener overrides, JAAS users, TLS contexts."""

from __future__ import annotations

import ssl
import sys
from pathlib import Path

import pytest

from tidelog.core.config import ConfigError, load_config
from tidelog.core.security_settings import jaas_options, lookup, plain_users
from tidelog.server.security import Security

sys.path.insert(0, str(Path(__file__).parent))
from pki import make_pki


def cfg(tmp_path, *items):
    return load_config(None, [f"log.dirs={tmp_path / 'data'}", *items])


@pytest.mark.parametrize(
    "item,message",
    [
        ("listener.security.protocol.map=PLAINTEXT:TLS", "LISTENER:PROTOCOL"),
        ("listeners=EXTERNAL://127.0.0.1:9", "no entry in listener.security.protocol.map"),
        ("sasl.enabled.mechanisms=GSSAPI", "not supported"),
        ("listener.name.x.ssl.client.auth=maybe", "ssl.client.auth"),
        ("connections.max.reauth.ms=-5", "connections.max.reauth.ms"),
    ],
)
def test_invalid_settings_refuse_to_start(tmp_path, item, message):
    with pytest.raises(ConfigError, match=message):
        cfg(tmp_path, item)


def test_unknown_per_listener_key_is_warned_about_like_any_other(tmp_path, caplog):
    c = cfg(tmp_path, "listener.name.sasl_ssl.bogus.key=1", "bogus.global.key=2")
    assert c is not None
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("listener.name.sasl_ssl.bogus.key" in m and "ignored" in m for m in warned), warned
    assert any("bogus.global.key" in m and "ignored" in m for m in warned), warned


def test_per_listener_session_settings_take_effect(tmp_path):
    c = cfg(
        tmp_path,
        "listeners=CLIENT2://127.0.0.1:0,TLS13://127.0.0.1:0",
        "listener.security.protocol.map=CLIENT2:SASL_PLAINTEXT,TLS13:SASL_PLAINTEXT",
        "connections.max.reauth.ms=1000",
        "listener.name.client2.connections.max.reauth.ms=60000",
        "listener.name.client2.sasl.server.max.receive.size=4096",
        "listener.name.client2.connection.failed.authentication.delay.ms=7",
    )
    sec = Security(c)
    a, b = sec.listeners["CLIENT2"], sec.listeners["TLS13"]
    assert (a.reauth_ms, a.max_receive_size, a.failed_auth_delay_ms) == (60000, 4096, 7)
    assert (b.reauth_ms, b.max_receive_size, b.failed_auth_delay_ms) == (1000, 524288, 100)


def test_listener_names_with_digits(tmp_path):
    c = cfg(
        tmp_path,
        "listeners=CLIENT2://127.0.0.1:0,TLS13://127.0.0.1:0",
        "listener.security.protocol.map=CLIENT2:PLAINTEXT,TLS13:PLAINTEXT",
    )
    assert [lst.name for lst in c.listeners] == ["CLIENT2", "TLS13"]


def test_secret_files_are_private(tmp_path):
    import os
    import stat

    from tidelog.core.acls import AclStore
    from tidelog.core.scram import CredentialStore

    d = tmp_path / "sec"
    d.mkdir()
    (d / "tidelog-acls.json").write_text("[]")
    os.chmod(d / "tidelog-acls.json", 0o644)
    creds = CredentialStore(d)
    from tidelog.core.scram import ScramCredential

    creds.put("alice", "SCRAM-SHA-256", ScramCredential.from_password("SCRAM-SHA-256", "secret"))
    creds.save()
    acls = AclStore(d)  # a world-readable file found at start is narrowed
    acls._changed()
    for name in ("tidelog-scram.json", "tidelog-acls.json"):
        assert stat.S_IMODE((d / name).stat().st_mode) == 0o600, name


def test_custom_listener_names_and_lookups(tmp_path):
    c = cfg(
        tmp_path,
        "listeners=INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms=SCRAM-SHA-512",
        "listener.name.external.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        'listener.name.external.plain.sasl.jaas.config=x.PlainLoginModule required user_a="p\\"q" user_b="r";',
    )
    assert lookup(c, "EXTERNAL", "sasl.enabled.mechanisms") == "PLAIN,SCRAM-SHA-256"
    assert lookup(c, "INTERNAL", "sasl.enabled.mechanisms") == "SCRAM-SHA-512"
    assert plain_users(c, "EXTERNAL") == {"a": 'p"q', "b": "r"}
    sec = Security(c)
    assert sec.listeners["EXTERNAL"].sasl and not sec.listeners["INTERNAL"].sasl
    assert sec.listeners["EXTERNAL"].mechanisms == ["PLAIN", "SCRAM-SHA-256"]


def test_jaas_options():
    text = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s;e=c";'
    assert jaas_options(text) == {"username": "admin", "password": "s;e=c"}
    assert jaas_options(None) == {}


def test_tls_contexts(tmp_path):
    pki = make_pki(tmp_path / "pki")
    c = cfg(
        tmp_path,
        "listeners=SSL://127.0.0.1:0",
        f"ssl.keystore.location={pki.server}",
        f"ssl.truststore.location={pki.ca}",
        "ssl.client.auth=required",
        "ssl.enabled.protocols=TLSv1.3",
    )
    ctx = Security(c).ssl_context("SSL")
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.minimum_version == ssl.TLSVersion.TLSv1_3
    key, chain = (tmp_path / "pki" / "server.key").read_text(), (tmp_path / "pki" / "server.pem").read_text()
    inline = cfg(
        tmp_path, "listeners=SSL://127.0.0.1:0", f"ssl.keystore.certificate.chain={chain}", f"ssl.keystore.key={key}"
    )
    assert Security(inline).ssl_context("SSL").verify_mode == ssl.CERT_NONE
    with pytest.raises(ValueError, match="ssl.keystore.location"):
        Security(cfg(tmp_path, "listeners=SASL_SSL://127.0.0.1:0"))
    with pytest.raises(ValueError, match="truststore"):
        Security(
            cfg(
                tmp_path,
                "listeners=SSL://127.0.0.1:0",
                f"ssl.keystore.location={pki.server}",
                "ssl.client.auth=requested",
            )
        )
