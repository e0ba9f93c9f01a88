"""A pytest plugin loaded into confluent-kafka-python's integration suite (`-p confluent_adapter`)
so that every fixture of it talks to the tidelog broker the peer test started.

The suite's `kafka_cluster` fixture already uses an existing cluster when `BROKERS` is set (its
ByoFixture); its `sasl_cluster` fixture always starts a trivup cluster (SASL PLAIN, user
`sasl_user`). Here `create_sasl_cluster` of its conftest is replaced by one that answers a
ByoFixture for tidelog's SASL_PLAINTEXT listener (`TIDELOG_SASL_BOOTSTRAP`), with that user, and
trivup itself by a stub that refuses to start anything: no Kafka is downloaded or started.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

SASL_USER = ("sasl_user", "sasl_user")  # the suite's trivup SASL cluster's user (`sasl_users`)


class _NoTrivup:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("confluent_adapter: the suite runs against tidelog; trivup clusters are not started")


def _stub_trivup() -> None:
    for name in ("trivup", "trivup.clusters", "trivup.clusters.KafkaCluster"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["trivup.clusters.KafkaCluster"].KafkaCluster = _NoTrivup  # type: ignore[attr-defined]


_stub_trivup()


def tidelog_sasl_cluster(conf: dict | None = None) -> Any:
    """The suite's SASL cluster: tidelog's SASL_PLAINTEXT listener (trivup's `conf` does not apply)."""
    from tests.integration.cluster_fixture import ByoFixture

    bootstrap = os.environ.get("TIDELOG_SASL_BOOTSTRAP", "")
    if not bootstrap:
        raise RuntimeError("confluent_adapter: TIDELOG_SASL_BOOTSTRAP (a SASL_PLAINTEXT listener) is not set")
    return ByoFixture(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": SASL_USER[0],
            "sasl.password": SASL_USER[1],
        }
    )


def pytest_plugin_registered(plugin: object) -> None:
    if getattr(plugin, "__name__", "") == "tests.integration.conftest":
        plugin.create_sasl_cluster = tidelog_sasl_cluster  # type: ignore[attr-defined]
