"""An in-memory stand-in for etcd behind the cluster code's `Store` interface, with etcd's
semantics where the cluster code relies on them: one global revision bumped by every write
(a txn is one revision), create_revision / mod_revision / version per key, compare-and-swap
transactions, leases whose keys vanish when they are revoked or expire (`expire(lease)`, so
tests choose the moment), and watches that deliver every event after a revision, in order.
For unit tests; the integration tests run the real etcd. The data model is tests/etcd_model.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from etcd_model import EtcdData

from tidelog.cluster.store import Compare, KeyValue, LeaseExpired, Op, StoreUnavailable, TxnResult, WatchEvent


class FakeStore(EtcdData):
    def __init__(self) -> None:
        super().__init__()
        self.leases: dict[int, int] = {}  # id -> ttl
        self._next_lease = 100
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("fake etcd is down")

    # -- reads ---------------------------------------------------------------------------------
    async def get(self, key: str) -> KeyValue | None:
        self._check()
        return self.kv.get(key)

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        self._check()
        return self.range(prefix, prefix=True), self.revision

    # -- writes --------------------------------------------------------------------------------
    async def put(self, key: str, value: bytes, lease: int = 0) -> int:
        self._check()
        return self.apply_put(key, value, lease)

    async def delete(self, key: str) -> bool:
        self._check()
        return self.apply_delete(key)

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        self._check()
        return self.apply_txn(compares, success, failure)

    # -- leases --------------------------------------------------------------------------------
    async def grant(self, ttl_s: int) -> int:
        self._check()
        self._next_lease += 1
        self.leases[self._next_lease] = ttl_s
        return self._next_lease

    async def keepalive(self, lease: int) -> int:
        self._check()
        if lease not in self.leases:
            raise LeaseExpired(f"lease {lease} not found")
        return self.leases[lease]

    async def revoke(self, lease: int) -> None:
        self._check()
        self.expire(lease)

    def expire(self, lease: int) -> None:
        """The lease ends (revoked, or its TTL ran out): its keys go in one revision."""
        self.drop_lease(lease)

    # -- watch ---------------------------------------------------------------------------------
    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[WatchEvent]:
        i = 0
        while True:
            while i < len(self.history):
                ev = self.history[i]
                i += 1
                if ev.kv.mod_revision >= start_revision and ev.kv.key.startswith(prefix):
                    yield ev
            await self.changed.wait()

    async def close(self) -> None:
        pass
