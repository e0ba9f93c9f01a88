"""Where each broker's schema registry listens, kept in etcd (`<root>schema-registry/<node id>`
-> its URL), so a broker that is not the registry's primary can forward a write to the one that
is: the leader of the registry topic's partition 0, as the metadata cache knows it.

A broker publishes its URL once its registry listens (a put: the latest wins, a restarted broker
overwrites it; a stale one names a broker that leads nothing). `primary_url()` is None when the
partition has no live leader, this broker leads it, or etcd does not answer: the caller then
answers the request itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .store import StoreUnavailable

if TYPE_CHECKING:
    from .metadata import MetadataCache
    from .model import Keys
    from .store import Store

log = logging.getLogger("tidelog.cluster")


class RegistryDirectory:
    def __init__(
        self, store: Store, keys: Keys, cache: MetadataCache, node_id: int, topic: str, advertised_host: str
    ) -> None:
        """`advertised_host`: the host others reach this broker at, for a registry listening
        on every interface (0.0.0.0)."""
        self.store = store
        self.advertised_host = advertised_host
        self.prefix = keys.root + "schema-registry/"
        self.cache = cache
        self.node_id = node_id
        self.topic = topic

    async def publish(self, url: str) -> None:
        scheme, _, rest = url.partition("://")
        host, _, port = rest.rpartition(":")
        if host in ("0.0.0.0", "::", "[::]", ""):
            url = f"{scheme}://{self.advertised_host}:{port}"
        try:
            await self.store.put(f"{self.prefix}{self.node_id}", url.encode())
        except StoreUnavailable as e:
            log.warning("schema registry URL not published (etcd: %s): writes are not forwarded here", e)

    async def primary_url(self) -> str | None:
        st = self.cache.state(self.topic, 0)
        if st is None or st.leader < 0 or st.leader == self.node_id or st.leader not in self.cache.brokers:
            return None
        try:
            kv = await self.store.get(f"{self.prefix}{st.leader}")
        except StoreUnavailable:
            return None
        return kv.value.decode() if kv is not None else None
