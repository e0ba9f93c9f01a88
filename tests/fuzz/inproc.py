"""A real `Broker` listening on a loopback port, run in a background thread with its own event
loop, so fuzz tests can talk to it over TCP and still see its log records in process."""

from __future__ import annotations

import asyncio
import logging
import threading

from tidelog.core.config import load_config
from tidelog.server.broker import Broker


class Collector(logging.Handler):
    """Keeps every record at WARNING or above from the `tidelog` loggers."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def errors(self) -> list[logging.LogRecord]:
        return [r for r in self.records if r.levelno >= logging.ERROR or r.exc_info]


class InProcessBroker:
    def __init__(self, data_dir, overrides: dict[str, str] | None = None) -> None:
        conf = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data_dir), **(overrides or {})}
        self.config = load_config(None, [f"{k}={v}" for k, v in conf.items()])
        self.loop = asyncio.new_event_loop()
        self.broker: Broker | None = None
        self.port = 0
        self.collector = Collector()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> InProcessBroker:
        logging.getLogger("tidelog").addHandler(self.collector)
        self._thread.start()

        async def start():
            self.broker = Broker(self.config)
            await self.broker.start()
            return self.broker.bound_port()

        self.port = asyncio.run_coroutine_threadsafe(start(), self.loop).result(30)
        return self

    def call(self, fn, timeout: float = 30):
        """Run `fn()` on the broker's loop and return its result."""

        async def run():
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def stop(self) -> None:
        if self.broker is not None:
            asyncio.run_coroutine_threadsafe(self.broker.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        logging.getLogger("tidelog").removeHandler(self.collector)
