"""One module per API. Each exposes `register(broker)`, adding its route to `broker.router`."""

from __future__ import annotations

import importlib
import logging

log = logging.getLogger("tidelog.server")

MODULES = [
    "api_versions",
    "metadata",
    "create_topics",
    "delete_topics",
    "create_partitions",
    "describe_configs",
    "alter_configs",
    "incremental_alter_configs",
    "describe_cluster",
]


def register_all(broker) -> None:
    from ..admin import TopicAdmin

    broker.admin = TopicAdmin(broker)
    for name in MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(broker)
