"""Every control-plane route has a kio schema for each version it advertises (checked here, since
the router loads schemas lazily at first use)."""

import asyncio

from tidelog.core.config import load_config
from tidelog.server.broker import Broker
from tidelog.server.router import missing_schemas


def test_every_routed_control_version_has_a_schema(tmp_path):
    async def build():
        broker = Broker(load_config(None, [f"log.dirs={tmp_path}"]))
        assert len(broker.router.routes) > 20
        assert missing_schemas(broker.router) == []

    asyncio.run(build())
