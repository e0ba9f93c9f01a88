"""Each request handler gets the broker parts it uses and nothing else (issue 27): its module
declares `Deps`, a frozen dataclass whose fields are named after the broker's attributes, and
`handlers.register_all` binds the handler to a `Deps` built from them. These checks keep that
wiring honest where mypy cannot see it (the binding is by name):

- every handler module has `Deps` and a `handle(deps: Deps, ctx, request)`;
- no handler module names the whole `Broker`;
- every field of every `Deps` is an attribute of a broker built by the composition root, of the
  type the field declares.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import typing

import pytest

from tidelog.cluster.view import ClusterView, SingleNode
from tidelog.core.admin import TopicAdmin
from tidelog.core.config import BrokerConfig, load_config
from tidelog.core.dynamic_config import DynamicBrokerConfigs
from tidelog.core.features import Features
from tidelog.core.group_configs import GroupConfigs
from tidelog.core.partitions import Partitions
from tidelog.core.topics import TopicRegistry
from tidelog.groups import GroupCoordinator
from tidelog.server import handlers
from tidelog.server.broker import Broker
from tidelog.server.router import Router
from tidelog.server.security import Security
from tidelog.server.security.changes import SecurityChanges
from tidelog.share.coordinator import ShareCoordinator
from tidelog.share.manager import SharePartitions
from tidelog.txn.producer_states import ProducerStates
from tidelog.txn.service import TxnService

# what the handlers' `Deps` may name (their TYPE_CHECKING imports), to resolve the annotations
NAMES = {
    "asyncio": asyncio,
    "ClusterView": ClusterView,
    "TopicAdmin": TopicAdmin,
    "BrokerConfig": BrokerConfig,
    "DynamicBrokerConfigs": DynamicBrokerConfigs,
    "Features": Features,
    "Partitions": Partitions,
    "TopicRegistry": TopicRegistry,
    "GroupCoordinator": GroupCoordinator,
    "Router": Router,
    "Security": Security,
    "SecurityChanges": SecurityChanges,
    "ProducerStates": ProducerStates,
    "TxnService": TxnService,
    "GroupConfigs": GroupConfigs,
    "SharePartitions": SharePartitions,
    "ShareCoordinator": ShareCoordinator,
}
MODULES = handlers.modules()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    return Broker(load_config(None, [f"log.dirs={data}", "listeners=PLAINTEXT://127.0.0.1:0"]))


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_a_handler_declares_the_parts_it_uses(module):
    deps = module.Deps
    assert dataclasses.is_dataclass(deps) and deps.__dataclass_params__.frozen
    first = next(iter(inspect.signature(module.handle).parameters.values()))
    assert (first.name, first.annotation) == ("deps", "Deps")
    assert "Broker" not in vars(module) and "from ..broker import" not in inspect.getsource(module)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_each_part_is_the_brokers_part_of_that_name_and_type(module, broker):
    hints = typing.get_type_hints(module.Deps, globalns={**vars(module), **NAMES})
    for name, hint in hints.items():
        part = getattr(broker, name)
        if hint is ClusterView:  # a Protocol: the broker's view is one of its implementations
            assert isinstance(part, SingleNode)
        else:
            assert isinstance(part, hint), (module.__name__, name, hint, type(part))


def test_a_bound_handler_holds_its_parts_only(broker):
    """What the router calls is the handler with its `Deps`, not with the broker."""
    for module in MODULES:
        route = broker.router.routes[module.ROUTE.api_key]
        assert route.handle.args and isinstance(route.handle.args[0], module.Deps)
