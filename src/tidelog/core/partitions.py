"""The broker's partitions: the log engine's `LogManager` kept in step with the topic registry,
plus what the data path needs around it — long-poll wake-ups, group commit, and the periodic
retention and compaction work.

Every access to a partition's log from a handler goes through `Partitions.get`, so the rest of
the server never depends on how logs are opened or laid out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..log.config import LogConfig
from ..log.manager import LogManager
from .flusher import GroupCommit
from .topic_config import log_config
from .waiters import Waiters

if TYPE_CHECKING:
    from ..log.log import PartitionLog
    from .admin import TopicAdmin
    from .config import BrokerConfig
    from .topics import Topic

log = logging.getLogger("tidelog.server")


class Partitions:
    def __init__(
        self, config: BrokerConfig, admin: TopicAdmin, hosts: Callable[[str, int], bool] = lambda topic, partition: True
    ) -> None:
        """`hosts(topic, partition)`: whether this broker holds a replica of the partition (a
        single node holds every one; in a cluster the assignment in etcd says)."""
        self.config = config
        self.registry = admin.registry
        self.topic_defaults = admin.topic_defaults
        self.waiters = Waiters()
        self.group_commit = GroupCommit()
        self.manager = LogManager(
            config.log_dirs[:1], LogConfig(), topic_config=self._topic_config, on_append=self.notify
        )
        self._tasks: list[asyncio.Task[None]] = []
        admin.listeners.append(self._on_topic_event)
        self.hosts = hosts
        self._closed = False  # stop() ran: no log is opened again (a late request finds none)

    # ---- lookup --------------------------------------------------------------------------
    def _topic_config(self, name: str) -> LogConfig | None:
        topic = self.registry.get(name)
        return None if topic is None else self.config_for(topic)

    def config_for(self, topic: Topic) -> LogConfig:
        return log_config(self.topic_defaults, topic.configs)

    def get(self, topic_name: str, partition: int) -> PartitionLog | None:
        """The partition's log, or None when the topic or partition does not exist, or once the
        logs are closed: a long poll woken by the shutdown must not open a log again (it would
        be a fresh, unreplicated copy answering a follower with its log end as the high
        watermark - simulation seed 1801 of issue 26)."""
        topic = self.registry.get(topic_name)
        if (
            self._closed
            or topic is None
            or not 0 <= partition < topic.partitions
            or not self.hosts(topic_name, partition)
        ):
            return None
        plog = self.manager.get(topic_name, partition)
        if plog is None:
            plog = self.manager.get_or_create(topic_name, partition, self.config_for(topic))
        return plog

    def notify(self, topic_name: str, partition: int) -> None:
        self.waiters.notify((topic_name, partition))

    # ---- registry events -----------------------------------------------------------------
    def _on_topic_event(self, event: str, topic: Topic) -> None:
        if event in ("created", "partitions"):
            cfg = self.config_for(topic)
            for p in range(topic.partitions):
                if self.hosts(topic.name, p):
                    self.manager.get_or_create(topic.name, p, cfg)
        elif event == "deleted":
            self.manager.delete_topic(topic.name)
            for p in range(topic.partitions):
                self.notify(topic.name, p)
        elif event == "configs":
            self.manager.update_topic_config(topic.name, self.config_for(topic))

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        t0 = time.monotonic()
        for topic in list(self.registry.topics.values()):
            cfg = self.config_for(topic)
            for p in range(topic.partitions):
                if self.hosts(topic.name, p):
                    self.manager.get_or_create(topic.name, p, cfg)
        log.info("opened %d partition logs in %.0f ms", len(list(self.manager.logs())), (time.monotonic() - t0) * 1000)
        self._tasks.append(asyncio.ensure_future(self._housekeeping()))

    async def _housekeeping(self) -> None:
        """Retention every `log.retention.check.interval.ms`; time-based flushes (`flush.ms`);
        recovery points checkpointed every `log.flush.offset.checkpoint.interval.ms`, so a crash
        after a long uptime re-checks only what was appended since the last checkpoint."""
        retention_every = self.config["log.retention.check.interval.ms"] / 1000
        checkpoint_every = self.config["log.flush.offset.checkpoint.interval.ms"] / 1000
        next_retention = time.monotonic() + retention_every
        next_checkpoint = time.monotonic() + checkpoint_every
        while True:
            await asyncio.sleep(min(1.0, retention_every, checkpoint_every))
            try:
                for plog in self.manager.logs_due_for_flush():
                    await self.group_commit.flush(plog)
                if time.monotonic() >= next_checkpoint:
                    next_checkpoint = time.monotonic() + checkpoint_every
                    self.manager.checkpoint()
                if time.monotonic() >= next_retention:
                    next_retention = time.monotonic() + retention_every
                    self.run_retention()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("housekeeping pass failed")

    def run_retention(self) -> int:
        deleted = self.manager.apply_retention(int(time.time() * 1000))
        for plog in self.manager.logs():
            if plog.config.compact:
                plog.compact()
        return deleted

    def stop(self) -> None:
        self._closed = True
        for t in self._tasks:
            t.cancel()
        self.waiters.shutdown()
        self.manager.close()
