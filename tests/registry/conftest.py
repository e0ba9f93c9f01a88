"""A real `tidelog serve` process with the schema registry listener, for the registry's tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from registry_urls import registry_url


@dataclass
class RegistryBroker:
    broker: BrokerProcess

    @property
    def url(self) -> str:
        """The registry's URL now (a restart binds a new port)."""
        return registry_url(self.broker.log_path)

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap


def start_registry_broker(data_dir: Path, overrides: dict[str, str] | None = None) -> RegistryBroker:
    """A broker whose registry listens on a port the kernel picks (see `registry_urls`)."""
    b = BrokerProcess(data_dir, {"schema.registry.listeners": "http://127.0.0.1:0", **(overrides or {})})
    return RegistryBroker(b.start())


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory):
    rb = start_registry_broker(tmp_path_factory.mktemp("registry") / "data")
    yield rb
    rb.broker.stop()


@pytest.fixture
def fresh_registry_broker(tmp_path):
    started: list[RegistryBroker] = []

    def make(overrides: dict[str, str] | None = None) -> RegistryBroker:
        rb = start_registry_broker(tmp_path / f"data{len(started)}", overrides)
        started.append(rb)
        return rb

    yield make
    for rb in started:
        rb.broker.stop()
