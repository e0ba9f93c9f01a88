"""TLS server context for SSL and SASL_SSL listeners, from Kafka's `ssl.*` keys (PEM keystores).

`ssl.keystore.location` names a PEM file holding the private key and its certificate chain
(`ssl.key.password` decrypts an encrypted key); or `ssl.keystore.certificate.chain` and
`ssl.keystore.key` carry the PEM text inline. `ssl.truststore.location` / `.certificates` give the
CAs that client certificates are checked against when `ssl.client.auth` is `requested` or
`required`. `ssl.enabled.protocols` bounds the TLS versions.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.security_settings import lookup

if TYPE_CHECKING:
    from ...core.config import BrokerConfig

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    get: Callable[[str], Any] = lambda key: lookup(config, listener, key)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = [p.strip() for p in (get("ssl.enabled.protocols") or "").split(",") if p.strip()]
    versions = [_VERSIONS[p] for p in protocols if p in _VERSIONS]
    if not versions:
        raise ValueError(f"ssl.enabled.protocols {protocols} names none of {', '.join(_VERSIONS)}")
    ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
    password = get("ssl.key.password") or get("ssl.keystore.password")
    location = get("ssl.keystore.location")
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    if location:
        ctx.load_cert_chain(location, password=password)
    elif chain and key:
        _load_inline(ctx, chain, key, password)
    else:
        raise ValueError(
            f"listener {listener} uses TLS but neither ssl.keystore.location nor "
            "ssl.keystore.certificate.chain with ssl.keystore.key is set"
        )
    trust_file, trust_pem = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    if trust_file:
        ctx.load_verify_locations(cafile=trust_file)
    if trust_pem:
        ctx.load_verify_locations(cadata=trust_pem.replace("\\n", "\n"))
    mode = (get("ssl.client.auth") or "none").lower()
    ctx.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}[mode]
    if mode != "none" and not (trust_file or trust_pem):
        raise ValueError(f"ssl.client.auth={mode} on listener {listener} needs ssl.truststore.location")
    ciphers = get("ssl.cipher.suites")
    if ciphers:
        ctx.set_ciphers(":".join(c.strip() for c in ciphers.split(",")))
    return ctx


def _load_inline(ctx: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    # load_cert_chain reads files only: write the PEM text to a private temporary file, then remove it.
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(key.replace("\\n", "\n").strip() + "\n" + chain.replace("\\n", "\n").strip() + "\n")
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


def peer_principal(ssl_object: ssl.SSLObject | None) -> str:
    """Kafka's default SSL principal: `User:` + the client certificate's distinguished name (RFC 2253
    order, most specific first), or `User:ANONYMOUS` without a client certificate."""
    cert = ssl_object.getpeercert() if ssl_object is not None else None
    if not cert or "subject" not in cert:
        return "User:ANONYMOUS"
    names = {
        "commonName": "CN",
        "organizationName": "O",
        "organizationalUnitName": "OU",
        "countryName": "C",
        "localityName": "L",
        "stateOrProvinceName": "ST",
        "domainComponent": "DC",
        "userId": "UID",
    }
    rdns = [",".join(f"{names.get(k, k)}={v}" for k, v in rdn) for rdn in reversed(cert["subject"])]
    return "User:" + ",".join(rdns)


REGISTRY_LISTENER = "schema_registry"  # its keys: listener.name.schema_registry.ssl.*, else ssl.*


def registry_tls(config: BrokerConfig) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """The schema registry's HTTPS: its server context, and the client context a broker forwards
    to another's with (trusting the truststore's CAs, else the system's)."""
    server = server_context(config, REGISTRY_LISTENER)
    trust_file = lookup(config, REGISTRY_LISTENER, "ssl.truststore.location")
    trust_pem = lookup(config, REGISTRY_LISTENER, "ssl.truststore.certificates")
    client = ssl.create_default_context(cafile=trust_file or None)
    if trust_pem:
        client.load_verify_locations(cadata=trust_pem.replace("\\n", "\n"))
    return server, client
