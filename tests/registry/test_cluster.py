"""The schema registry on a three-broker cluster (one etcd, real processes): every broker serves
reads; the leader of `_schemas-0` is the primary and the others forward writes to it (asked not
to forward, with X-Tidelog-Forwarded, they answer 503, error 50004, which confluent-kafka's
client, given every broker's URL, fails over on); after the primary dies another broker leads
the partition and registrations go on with the same ids."""

from __future__ import annotations

import json
import time

import pytest
import requests
from cluster_process import Cluster
from registry_urls import registry_url

pytestmark = pytest.mark.interop


def schema(n: int) -> str:
    fields = [{"name": f"f{i}", "type": "int", "default": 0} for i in range(n)]
    return json.dumps({"type": "record", "name": "R", "fields": fields})


def start_cluster(base, overrides: dict[str, str], scheme: str = "http") -> tuple[Cluster, dict[int, str]]:
    """Three brokers, each with a registry on a port the kernel picks; their URLs."""
    extra = lambda _node_id, _port: {"schema.registry.listeners": f"{scheme}://127.0.0.1:0"}
    c = Cluster(base, 3, overrides, extra=extra).start()
    return c, {i: registry_url(b.log_path) for i, b in c.brokers.items()}


@pytest.fixture
def registry_cluster(tmp_path):
    c, urls = start_cluster(tmp_path, {"offsets.topic.replication.factor": "3"})
    try:
        yield c, urls
    finally:
        c.stop()


def wait_for(check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
        except (requests.RequestException, KeyError, ValueError):
            pass
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def primary_of(urls: dict[int, str], n: int) -> int | None:
    """The broker whose registry accepts a registration (the others answer 503: 50004, not the
    primary, or 50002, not replicated in time); None while none does."""
    for node, url in urls.items():
        r = requests.post(
            f"{url}/subjects/c/versions", json={"schema": schema(n)}, headers={"X-Tidelog-Forwarded": "1"}, timeout=10
        )
        if r.status_code == 200:
            return node
        assert r.status_code == 503 and r.json()["error_code"] in (50004, 50002), r.text
    return None


def test_primary_followers_and_failover(registry_cluster):
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    cluster, urls = registry_cluster
    wait_for(lambda: all(requests.get(f"{u}/subjects", timeout=5).status_code == 200 for u in urls.values()))
    primary = wait_for(lambda: primary_of(urls, 1))
    followers = [n for n in urls if n != primary]
    first = requests.get(f"{urls[primary]}/subjects/c/versions/1").json()
    for n in followers:  # every broker reads what the primary wrote
        got = wait_for(lambda n=n: requests.get(f"{urls[n]}/subjects/c/versions/1").json().get("id") and True)
        assert got and requests.get(f"{urls[n]}/subjects/c/versions/1").json() == first
    # an identical schema is answered anywhere; a client with every URL fails over to the primary
    assert requests.post(f"{urls[followers[0]]}/subjects/c/versions", json={"schema": schema(1)}).json() == {
        "id": first["id"]
    }
    client = SchemaRegistryClient({"url": urls[followers[1]]})  # a follower forwards to the primary
    second = client.register_schema("c", Schema(schema(2), "AVRO"))
    assert second == first["id"] + 1
    unforwarded = requests.post(
        f"{urls[followers[0]]}/subjects/d/versions", json={"schema": schema(1)}, headers={"X-Tidelog-Forwarded": "1"}
    )
    assert (unforwarded.status_code, unforwarded.json()["error_code"]) == (503, 50004)
    several = SchemaRegistryClient({"url": f"{urls[followers[0]]},{urls[primary]}", "max.retries": 0})
    assert several.register_schema("e", Schema(schema(1), "AVRO")) == first["id"]  # same schema, same id

    cluster.brokers[primary].kill()
    survivors = {n: urls[n] for n in followers}
    new_primary = wait_for(lambda: primary_of(survivors, 3))
    assert new_primary in followers
    assert requests.get(f"{urls[new_primary]}/subjects/c/versions").json() == [1, 2, 3]
    third = requests.get(f"{urls[new_primary]}/subjects/c/versions/3").json()["id"]
    assert third == second + 1  # ids go on from the old primary's
    other = next(n for n in followers if n != new_primary)
    forwarded = requests.post(f"{urls[other]}/subjects/c/versions", json={"schema": schema(4)})
    assert forwarded.json() == {"id": third + 1}


def test_a_broker_without_a_replica_forwards_reads_and_writes(tmp_path):
    cluster, urls = start_cluster(tmp_path, {"schema.registry.topic.replication.factor": "2"})
    try:
        wait_for(lambda: all(requests.get(f"{u}/subjects", timeout=5).status_code == 200 for u in urls.values()))
        ids = {
            n: requests.post(f"{u}/subjects/f/versions", json={"schema": schema(n)}).json()["id"]
            for n, u in urls.items()
        }
        assert sorted(ids.values()) == [1, 2, 3]  # every broker wrote, through the primary
        for u in urls.values():
            assert wait_for(lambda u=u: requests.get(f"{u}/subjects/f/versions").json() == [1, 2, 3])

        def without_replica() -> list[int]:
            unforwarded = {"X-Tidelog-Forwarded": "1"}
            return [n for n, u in urls.items() if requests.get(f"{u}/subjects", headers=unforwarded).status_code == 503]

        without = wait_for(lambda: len(without_replica()) == 1 and without_replica())
        assert len(without) == 1  # two replicas: one broker holds none, and answers through the primary
    finally:
        cluster.stop()


def test_forwarding_over_https(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
    from pki import make_pki

    pki = make_pki(tmp_path / "pki")
    tls = {
        "listener.name.schema_registry.ssl.keystore.location": str(pki.server),
        "listener.name.schema_registry.ssl.truststore.location": str(pki.ca),
    }
    cluster, urls = start_cluster(tmp_path / "c", tls, scheme="https")
    try:
        ca = str(pki.ca)
        wait_for(
            lambda: all(requests.get(f"{u}/subjects", verify=ca, timeout=5).status_code == 200 for u in urls.values())
        )
        ids = [
            requests.post(f"{u}/subjects/t/versions", json={"schema": schema(n)}, verify=ca).json()["id"]
            for n, u in urls.items()
        ]
        assert ids == [1, 2, 3]  # two of them forwarded to the primary, over TLS
    finally:
        cluster.stop()
