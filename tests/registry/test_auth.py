"""Basic authentication against the broker's SCRAM users (schema.registry.authentication=basic)."""

from __future__ import annotations

import pytest
import requests
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

pytestmark = pytest.mark.interop


def test_basic_auth_against_scram_users(fresh_registry_broker):
    rb = fresh_registry_broker({"schema.registry.authentication": "basic"})
    admin = AdminClient({"bootstrap.servers": rb.bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion("alice", info, b"s3cret")]).values():
        f.result(10)
    r = requests.get(f"{rb.url}/subjects")
    assert r.status_code == 401 and r.json()["error_code"] == 40101
    assert requests.get(f"{rb.url}/subjects", auth=("alice", "wrong")).status_code == 401
    assert requests.get(f"{rb.url}/subjects", auth=("bob", "s3cret")).status_code == 401
    client = SchemaRegistryClient({"url": rb.url, "basic.auth.user.info": "alice:s3cret"})
    assert client.register_schema("auth-value", Schema('"string"', "AVRO")) == 1
    with pytest.raises(SchemaRegistryError) as e:
        SchemaRegistryClient({"url": rb.url, "basic.auth.user.info": "alice:nope"}).get_subjects()
    assert e.value.http_status_code == 401
