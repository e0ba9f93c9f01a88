"""Security configuration keys, with Kafka's names, and how a listener's settings are looked up.

A listener's security protocol comes from `listener.security.protocol.map` (its name by
default). Its settings are read Kafka's way, the most specific first:
`listener.name.<listener>.<mechanism>.<key>`, `listener.name.<listener>.<key>`, `<key>`.
PLAIN users come from a JAAS `sasl.jaas.config` (`user_<name>="<password>"` options), e.g.
`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule
required user_admin="admin-secret";`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import BrokerConfig

log = logging.getLogger("tidelog.server")

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _str(s: str) -> str:
    return s.strip()


def _bool(s: str) -> bool:
    v = s.strip().lower()
    if v not in ("true", "false"):
        raise ValueError(f"not a boolean (true/false): {s!r}")
    return v == "true"


def _int0(s: str) -> int:
    v = int(s.strip())
    if v < 0:
        raise ValueError(f"{v} is below the minimum 0")
    return v


def _choice(*options: str) -> Callable[[str], str]:
    def parse(s: str) -> str:
        v = s.strip()
        if v.lower() not in [o.lower() for o in options]:
            raise ValueError(f"{v!r} is not one of {', '.join(options)}")
        return v

    return parse


def parse_protocol_map(s: str) -> dict[str, str]:
    out = {}
    for item in [p.strip() for p in s.split(",") if p.strip()]:
        name, sep, proto = item.partition(":")
        if not sep or proto.strip().upper() not in PROTOCOLS:
            raise ValueError(f"{item!r} is not LISTENER:PROTOCOL with a protocol of {', '.join(PROTOCOLS)}")
        out[name.strip().upper()] = proto.strip().upper()
    return out


def _protocol_map(s: str) -> str:
    parse_protocol_map(s)
    return s.strip()


def _mechanisms(s: str) -> str:
    for m in [x.strip() for x in s.split(",") if x.strip()]:
        if m not in SUPPORTED_MECHANISMS:
            raise ValueError(f"mechanism {m!r} is not supported (tidelog offers {', '.join(SUPPORTED_MECHANISMS)})")
    return s.strip()


SECURITY_KEYS: dict[str, tuple[Callable[[str], object], str | None]] = {
    "listener.security.protocol.map": (
        _protocol_map,
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
    ),
    "ssl.keystore.type": (_choice("PEM"), "PEM"),
    "ssl.keystore.location": (_str, None),
    "ssl.keystore.certificate.chain": (_str, None),
    "ssl.keystore.key": (_str, None),
    "ssl.keystore.password": (_str, None),
    "ssl.key.password": (_str, None),
    "ssl.truststore.type": (_choice("PEM"), "PEM"),
    "ssl.truststore.location": (_str, None),
    "ssl.truststore.certificates": (_str, None),
    "ssl.client.auth": (_choice("none", "requested", "required"), "none"),
    "ssl.enabled.protocols": (_str, "TLSv1.2,TLSv1.3"),
    "ssl.cipher.suites": (_str, None),
    "ssl.endpoint.identification.algorithm": (_str, "https"),
    "sasl.enabled.mechanisms": (_mechanisms, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"),
    "sasl.jaas.config": (_str, None),
    "sasl.mechanism.inter.broker.protocol": (_str, None),
    "security.inter.broker.protocol": (_str, None),
    "connections.max.reauth.ms": (_int0, "0"),
    "sasl.server.max.receive.size": (_int0, "524288"),
    "connection.failed.authentication.delay.ms": (_int0, "100"),
    "authorizer.class.name": (_str, ""),
    "allow.everyone.if.no.acl.found": (_bool, "false"),
    "super.users": (_str, ""),
}

PREFIX = "listener.name."


def is_listener_key(key: str) -> bool:
    return key.startswith(PREFIX)


def lookup(config: BrokerConfig, listener: str, key: str, mechanism: str | None = None) -> Any:
    """The value of `key` for this listener (and mechanism): prefixed raw value, else the global one."""
    base = f"{PREFIX}{listener.lower()}."
    candidates = ([f"{base}{mechanism.lower()}.{key}"] if mechanism else []) + [f"{base}{key}"]
    for k in candidates:
        if k in config.raw:
            parser = SECURITY_KEYS.get(key, (_str, None))[0]
            return parser(config.raw[k])
    return config[key] if key in SECURITY_KEYS else None


def listener_protocol(config: BrokerConfig, name: str) -> str:
    mapping = parse_protocol_map(config["listener.security.protocol.map"])
    proto = mapping.get(name.upper())
    if proto is None:
        raise ValueError(f"listener {name} has no entry in listener.security.protocol.map")
    return proto


_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def jaas_options(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    return {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _JAAS_OPTION.findall(text)}


def plain_users(config: BrokerConfig, listener: str) -> dict[str, str]:
    opts = jaas_options(lookup(config, listener, "sasl.jaas.config", "PLAIN"))
    return {k[len("user_") :]: v for k, v in opts.items() if k.startswith("user_")}


def enabled_mechanisms(config: BrokerConfig, listener: str) -> list[str]:
    value = lookup(config, listener, "sasl.enabled.mechanisms") or ""
    return [m.strip() for m in value.split(",") if m.strip()]


def validate(config: BrokerConfig) -> None:
    """Check every listener's protocol and settings; raises ValueError naming the key."""
    for key, value in config.raw.items():
        if not is_listener_key(key):
            continue
        rest = key[len(PREFIX) :].split(".", 1)
        if len(rest) != 2:
            raise ValueError(f"{key}: expected listener.name.<listener>.<key>")
        sub = rest[1]
        for mech in SUPPORTED_MECHANISMS:
            if sub.startswith(mech.lower() + "."):
                sub = sub[len(mech) + 1 :]
        parser = SECURITY_KEYS.get(sub, (None, None))[0]
        if parser is None:
            log.warning("unknown config key %r ignored (%r is not a per-listener key)", key, sub)
            continue
        try:
            parser(value)
        except ValueError as e:
            raise ValueError(f"invalid value {value!r} for {key}: {e}") from None
    for lst in config.listeners:
        listener_protocol(config, lst.name)
