"""The creation of streams groups' missing internal topics (repartition and changelog topics), which
Kafka's broker does after a StreamsGroupHeartbeat found them missing (its AutoTopicCreationManager):
in the background, each topic once at a time, with the partition count, replication factor and
configs the topology's configuration decided; a topic whose creation failed is not tried again,
and its error is told, for a while (twice the group's heartbeat interval)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

if TYPE_CHECKING:
    from ..core.admin import TopicAdmin
    from .streams_topology import InternalTopic

log = logging.getLogger("tidelog.groups")


class InternalTopics:
    def __init__(self, admin: TopicAdmin, spawn: Callable[[Coroutine[Any, Any, Any]], None]) -> None:
        self.admin = admin
        self.spawn = spawn
        self._creating: set[str] = set()
        self._errors: dict[str, tuple[str, float]] = {}  # topic -> (error name, until, monotonic)

    def create(self, topics: dict[str, InternalTopic], ttl_s: float) -> None:
        now = time.monotonic()
        for name, topic in topics.items():
            failed = self._errors.get(name)
            if name in self._creating or (failed is not None and failed[1] > now):
                continue
            self._creating.add(name)
            self.spawn(self._create(topic, ttl_s))

    async def _create(self, topic: InternalTopic, ttl_s: float) -> None:
        rf = topic.replication_factor or -1
        try:
            code, message = self.admin.check_create(topic.name, topic.partitions, rf, topic.configs)
            if not code:
                code, message, _ = await self.admin.create_topic(topic.name, topic.partitions, rf, topic.configs)
            if code and code != E.topic_already_exists.value:
                log.warning("streams: internal topic %s not created: %s (%s)", topic.name, E(code).name, message)
                self._errors[topic.name] = (E(code).name.upper(), time.monotonic() + ttl_s)
            else:
                self._errors.pop(topic.name, None)
                log.info("streams: internal topic %s created (%d partitions)", topic.name, topic.partitions)
        finally:
            self._creating.discard(topic.name)

    def errors(self, names: list[str]) -> list[tuple[str, str]]:
        """(topic, error) of the topics whose creation failed recently."""
        now = time.monotonic()
        return [(n, e[0]) for n in names if (e := self._errors.get(n)) is not None and e[1] > now]
