"""ACLs on subjects through a real broker's registry listener (basic authentication against its
SCRAM users, the broker's authorizer): confluent-kafka's SchemaRegistryClient and Avro serdes
for an allowed and a denied user, a prefixed pattern and a DENY, the listing trimmed, a super
user, `tidelog schemas acl add|list|remove`; on three brokers, an ACL made through one broker
applies on every one and a write forwarded to the primary is authorized as its user."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from cluster_process import Cluster
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext
from registry_urls import registry_url

from tidelog.core.scram import CredentialStore, ScramCredential

pytestmark = pytest.mark.interop

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw"}
SECURE = {
    "schema.registry.authentication": "basic",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
}
ORDER = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "n", "type": "int"}]})


def add_users(data_dir: Path) -> None:
    """The SCRAM users, written as `tidelog users add --data-dir` does before the broker starts."""
    store = CredentialStore(data_dir)
    for user, password in USERS.items():
        store.put(user, "SCRAM-SHA-256", ScramCredential.from_password("SCRAM-SHA-256", password, 4096))
    store.save()


def client(url: str, user: str) -> SchemaRegistryClient:
    """A new client (no cache carried over from an earlier answer)."""
    return SchemaRegistryClient({"url": url, "basic.auth.user.info": f"{user}:{USERS[user]}", "max.retries": 0})


def schema_acl(url: str, user: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tidelog", "schemas", "acl", *args, "--url", url, "--user", f"{user}:{USERS[user]}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def wait_for(check, timeout: float = 60.0):
    """`check()`'s first true answer, asked again while it is false or fails (a registry not
    ready yet, an ACL not yet on this broker)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
        except (requests.RequestException, SchemaRegistryError):
            pass
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def refused(call) -> tuple[int, int]:
    """(HTTP status, error code) of a registry call that must fail."""
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return e.value.http_status_code, e.value.error_code


def test_acls_on_subjects_with_real_clients(fresh_registry_broker, tmp_path):
    add_users(tmp_path / "data0")
    url = fresh_registry_broker(SECURE).url
    assert requests.get(f"{url}/subjects").status_code == 401  # no credentials
    alice, bob, admin = client(url, "alice"), client(url, "bob"), client(url, "admin")
    assert refused(lambda: alice.register_schema("orders-value", Schema(ORDER, "AVRO"))) == (403, 40301)

    added = schema_acl(
        url, "admin", "add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Read",
        "--subject", "orders-", "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stdout.count("Added SUBJECT:PREFIXED:orders- (principal=User:alice") == 2
    denied = schema_acl(
        url, "admin", "add", "--deny-principal", "User:alice", "--operation", "All", "--subject", "orders-secret"
    )
    assert denied.returncode == 0, denied.stderr
    refusal = schema_acl(url, "alice", "list")  # listing ACLs needs Describe on the cluster
    assert refusal.returncode == 1 and "error code 40301" in refusal.stderr

    serializer = AvroSerializer(alice, ORDER)  # registers orders-value on first use (Write)
    data = serializer({"n": 7}, SerializationContext("orders", MessageField.VALUE))
    assert AvroDeserializer(alice)(data, SerializationContext("orders", MessageField.VALUE)) == {"n": 7}
    with pytest.raises(SchemaRegistryError) as e:  # bob may not read the schema its bytes name
        AvroDeserializer(bob)(data, SerializationContext("orders", MessageField.VALUE))
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301)
    assert refused(lambda: alice.register_schema("payments-value", Schema(ORDER, "AVRO"))) == (403, 40301)
    assert refused(lambda: alice.register_schema("orders-secret", Schema(ORDER, "AVRO"))) == (403, 40301)  # DENY

    assert admin.register_schema("payments-value", Schema('"string"', "AVRO")) > 0  # a super user
    assert admin.get_subjects() == ["orders-value", "payments-value"]
    assert alice.get_subjects() == ["orders-value"]  # what alice may describe
    assert bob.get_subjects() == []
    assert refused(lambda: alice.get_latest_version("payments-value")) == (403, 40301)
    assert refused(lambda: alice.set_compatibility(level="NONE")) == (403, 40301)  # the registry's, not a subject's

    granted = schema_acl(
        url, "admin", "add", "--allow-principal", "User:bob", "--operation", "Read", "--subject", "orders-value"
    )
    assert granted.returncode == 0, granted.stderr
    assert AvroDeserializer(client(url, "bob"))(data, SerializationContext("orders", MessageField.VALUE)) == {"n": 7}
    listed = schema_acl(url, "admin", "list", "--principal", "User:bob").stdout.splitlines()
    assert listed == ["SUBJECT:LITERAL:orders-value (principal=User:bob, host=*, operation=READ, permission=ALLOW)"]
    assert len(schema_acl(url, "admin", "list").stdout.splitlines()) == 4
    removed = schema_acl(url, "admin", "remove", "--subject", "orders-value", "--allow-principal", "User:bob")
    assert removed.returncode == 0 and removed.stdout.startswith("Removed SUBJECT:LITERAL:orders-value"), removed
    assert refused(lambda: client(url, "bob").get_latest_version("orders-value")) == (403, 40301)


def test_acls_on_a_cluster_and_a_forwarded_write(tmp_path):
    for node in (1, 2, 3):  # whichever broker seeds the cluster's security state has the users
        add_users(tmp_path / f"broker-{node}")
    extra = lambda _node_id, _port: {"schema.registry.listeners": "http://127.0.0.1:0"}
    # the PLAINTEXT listener is the brokers' own (replication: User:ANONYMOUS, a super user)
    cluster = Cluster(tmp_path, 3, {**SECURE, "super.users": "User:admin;User:ANONYMOUS"}, extra=extra).start()
    try:
        urls = {n: registry_url(b.log_path) for n, b in cluster.brokers.items()}
        admin = ("admin", USERS["admin"])
        wait_for(
            lambda: all(requests.get(f"{u}/subjects", auth=admin, timeout=5).status_code == 200 for u in urls.values())
        )
        acl = {"principal": "User:alice", "resource_type": "SUBJECT", "resource": "fw-", "pattern_type": "PREFIXED"}
        created = requests.post(
            f"{urls[1]}/security/acls", json=[acl | {"operation": "ALL", "permission": "ALLOW"}], auth=admin
        )
        assert created.status_code == 200, created.text

        def primary() -> int | None:
            """The broker that writes without forwarding (the others answer 503 to a request
            that says it was forwarded already)."""
            for n, u in urls.items():
                r = requests.post(
                    f"{u}/subjects/probe/versions", json={"schema": '"string"'}, auth=admin,
                    headers={"X-Tidelog-Forwarded": "1"}, timeout=10,
                )  # fmt: skip
                if r.status_code == 200:
                    return n
            return None

        follower = next(n for n in urls if n != wait_for(primary))
        alice = client(urls[follower], "alice")
        # the ACL reaches every broker through etcd; the follower checks, forwards, and the primary
        # checks again with alice's credentials
        assert wait_for(lambda: alice.register_schema("fw-value", Schema(ORDER, "AVRO"))) > 0
        assert refused(lambda: client(urls[follower], "bob").register_schema("fw-value", Schema('"int"', "AVRO"))) == (
            403,
            40301,
        )
        for u in urls.values():
            assert wait_for(lambda u=u: client(u, "alice").get_subjects() == ["fw-value"])
            assert client(u, "bob").get_subjects() == []
    finally:
        cluster.stop()
