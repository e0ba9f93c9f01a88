"""An in-memory stand-in for etcd behind the cluster code's `Store` interface, with etcd's
semantics where the cluster code relies on them: one global revision bumped by every write
(a txn is one revision), create_revision / mod_revision / version per key, compare-and-swap
transactions, leases whose keys vanish when they are revoked or expire (`expire(lease)`, so
tests choose the moment), and watches that deliver every event after a revision, in order.
For unit tests; the integration tests run the real etcd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from tidelog.cluster.store import Compare, KeyValue, LeaseExpired, Op, StoreUnavailable, TxnResult, WatchEvent


class FakeStore:
    def __init__(self) -> None:
        self.kv: dict[str, KeyValue] = {}
        self.revision = 1
        self.leases: dict[int, int] = {}  # id -> ttl
        self._next_lease = 100
        self.history: list[WatchEvent] = []
        self._changed = asyncio.Event()
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
        return sorted((v for k, v in self.kv.items() if k.startswith(prefix)), key=lambda v: v.key), self.revision

    # -- writes --------------------------------------------------------------------------------
    def _put(self, key: str, value: bytes, lease: int, rev: int) -> None:
        if lease and lease not in self.leases:
            raise LeaseExpired(f"lease {lease} not found")
        old = self.kv.get(key)
        kv = KeyValue(key, value, old.create_revision if old else rev, rev, (old.version + 1) if old else 1, lease)
        self.kv[key] = kv
        self.history.append(WatchEvent("PUT", kv))

    def _delete(self, key: str, rev: int, prefix: bool = False) -> int:
        keys = [k for k in self.kv if (k.startswith(key) if prefix else k == key)]
        for k in keys:
            del self.kv[k]
            self.history.append(WatchEvent("DELETE", KeyValue(k, b"", 0, rev)))
        return len(keys)

    def _commit(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def put(self, key: str, value: bytes, lease: int = 0) -> int:
        self._check()
        self.revision += 1
        self._put(key, value, lease, self.revision)
        self._commit()
        return self.revision

    async def delete(self, key: str) -> bool:
        self._check()
        if key not in self.kv:
            return False
        self.revision += 1
        self._delete(key, self.revision)
        self._commit()
        return True

    def _holds(self, c: Compare) -> bool:
        kv = self.kv.get(c.key)
        actual: int | bytes
        if c.target == "value":
            actual = kv.value if kv else b""
        elif c.target == "create":
            actual = kv.create_revision if kv else 0
        elif c.target == "mod":
            actual = kv.mod_revision if kv else 0
        else:
            actual = kv.version if kv else 0
        return {"==": actual == c.value, "!=": actual != c.value,
                "<": actual < c.value, ">": actual > c.value}[c.op]  # type: ignore[operator]

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        self._check()
        ok = all(self._holds(c) for c in compares)
        ops = success if ok else failure
        writes = any(o.kind in ("put", "delete") for o in ops)
        if writes:
            self.revision += 1
        out: list[list[KeyValue]] = []
        for o in ops:
            if o.kind == "put":
                self._put(o.key, o.value, o.lease, self.revision)
                out.append([])
            elif o.kind == "delete":
                self._delete(o.key, self.revision, o.prefix)
                out.append([])
            else:
                out.append(sorted((v for k, v in self.kv.items() if (k.startswith(o.key) if o.prefix else k == o.key)),
                                  key=lambda v: v.key))
        if writes:
            self._commit()
        return TxnResult(ok, self.revision, out)

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
        if self.leases.pop(lease, None) is None:
            return
        keys = [k for k, v in self.kv.items() if v.lease == lease]
        if keys:
            self.revision += 1
            for k in keys:
                self._delete(k, self.revision)
            self._commit()

    # -- watch ---------------------------------------------------------------------------------
    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[WatchEvent]:
        i = 0
        while True:
            while i < len(self.history):
                ev = self.history[i]
                i += 1
                if ev.kv.mod_revision >= start_revision and ev.kv.key.startswith(prefix):
                    yield ev
            await self._changed.wait()

    async def close(self) -> None:
        pass
