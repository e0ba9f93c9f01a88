"""The registry over HTTPS (`schema.registry.listeners=https://...`), with the TLS keys of the
`schema_registry` listener name, while the Kafka listener stays PLAINTEXT."""

from __future__ import annotations

import json
import ssl
import sys
import urllib.request
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from registry_urls import registry_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))

from pki import make_pki  # tests/security is not a package: on the path above

pytestmark = pytest.mark.interop


def test_https_listener(tmp_path):
    pki = make_pki(tmp_path / "pki")
    overrides = {
        "schema.registry.listeners": "https://127.0.0.1:0",
        "listener.name.schema_registry.ssl.keystore.location": str(pki.server),
    }
    b = BrokerProcess(tmp_path / "data", overrides).start()
    port = int(registry_url(b.log_path).rpartition(":")[2])
    try:
        client = SchemaRegistryClient({"url": f"https://127.0.0.1:{port}", "ssl.ca.location": str(pki.ca)})
        assert client.register_schema("tls-value", Schema('"string"', "AVRO")) == 1
        context = ssl.create_default_context(cafile=str(pki.ca))
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/subjects", context=context, timeout=10) as r:
            assert json.loads(r.read()) == ["tls-value"]
        with pytest.raises(OSError):  # plain HTTP is not served there
            urllib.request.urlopen(f"http://127.0.0.1:{port}/subjects", timeout=5).read()
    finally:
        b.stop()
