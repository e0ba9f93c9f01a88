"""Producer ids unique across the cluster: blocks reserved in etcd by compare-and-swap.

`producer-ids` holds the first id no broker has reserved. A broker reserves [next, next + BLOCK)
by a transaction that compares the key's value it read; the next block is reserved in the
background once half of the current one is used, so `next_id()` stays synchronous. Ids are never
reused: a restart reserves a fresh block. `issued(pid)` is true for every id below the cluster's
reservation mark (a partition leader accepts producer ids other brokers handed out).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from .store import Compare, Op, Store

if TYPE_CHECKING:
    from .metadata import MetadataCache

log = logging.getLogger("tidelog.cluster")

BLOCK = 1000


class ProducerIdsExhausted(Exception):
    pass


class ClusterProducerIds:
    def __init__(self, store: Store, key: str, cache: MetadataCache) -> None:
        self.store = store
        self.key = key
        self.cache = cache
        self._blocks: list[tuple[int, int]] = []  # reserved, not yet used: [start, end)
        self._next = 0
        self._end = 0
        self._refill: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._reserve()
        self._take()

    async def _reserve(self) -> None:
        for _ in range(100):
            kv = await self.store.get(self.key)
            start = int(json.loads(kv.value)["next"]) if kv is not None else 0
            end = start + BLOCK
            cmp = Compare.create(self.key, 0) if kv is None else Compare.mod(self.key, kv.mod_revision)
            res = await self.store.txn([cmp], [Op.put(self.key, json.dumps({"next": end}).encode())])
            if res.succeeded:
                self._blocks.append((start, end))
                log.info("reserved producer ids %d-%d", start, end - 1)
                return
        raise ProducerIdsExhausted("could not reserve a producer id block (contention)")

    def _take(self) -> None:
        if self._blocks:
            self._next, self._end = self._blocks.pop(0)

    def next_id(self) -> int:
        if self._next >= self._end:
            self._take()
            if self._next >= self._end:
                self._maybe_refill()
                raise ProducerIdsExhausted("no producer id block reserved yet")
        pid = self._next
        self._next += 1
        if not self._blocks and self._end - self._next < BLOCK // 2:
            self._maybe_refill()
        return pid

    def _maybe_refill(self) -> None:
        if self._refill is None or self._refill.done():
            self._refill = asyncio.ensure_future(self._reserve_logged())

    async def _reserve_logged(self) -> None:
        try:
            await self._reserve()
        except Exception as e:  # noqa: BLE001 - retried at the next use
            log.warning("producer id block not reserved: %s", e)

    def issued(self, producer_id: int) -> bool:
        mark: int = max(self.cache.producer_ids_next, self._end)
        return 0 <= producer_id < mark
