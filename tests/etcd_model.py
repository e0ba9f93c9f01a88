"""etcd's data model, shared by the in-memory stand-ins of etcd in the tests (tests/cluster/
fake_store.py for unit tests, tests/sim/etcd.py for the simulation): one global revision bumped
once by every write (a transaction is one revision), per key its create and mod revisions and
version, compare-and-swap transactions that apply whole or not at all (a put bound to a lease that
does not exist fails the transaction: LeaseExpired), the expiry of a lease deleting its keys in
one revision, and the ordered history of events that watches replay. How a client reaches it
(answers, failures, timing) is each stand-in's own."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from tidelog.cluster.store import Compare, KeyValue, LeaseExpired, Op, TxnResult, WatchEvent


class EtcdData:
    def __init__(self) -> None:
        self.kv: dict[str, KeyValue] = {}
        self.revision = 1
        self.leases: dict[int, Any] = {}  # lease id -> the stand-in's own record of it
        self.history: list[WatchEvent] = []
        self.changed = asyncio.Event()  # set and replaced at every write: watchers wake and look

    def written(self, kv: KeyValue) -> None:
        """Called for every put (the simulation records who wrote what)."""

    def _put(self, key: str, value: bytes, lease: int, rev: int) -> None:
        old = self.kv.get(key)
        kv = KeyValue(key, value, old.create_revision if old else rev, rev, (old.version + 1) if old else 1, lease)
        self.kv[key] = kv
        self.history.append(WatchEvent("PUT", kv))
        self.written(kv)

    def _delete(self, key: str, rev: int, prefix: bool = False) -> int:
        keys = sorted(k for k in self.kv if (k.startswith(key) if prefix else k == key))
        for k in keys:
            del self.kv[k]
            self.history.append(WatchEvent("DELETE", KeyValue(k, b"", 0, rev)))
        return len(keys)

    def _commit(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def range(self, key: str, prefix: bool = False) -> list[KeyValue]:
        return sorted(
            (v for k, v in self.kv.items() if (k.startswith(key) if prefix else k == key)), key=lambda v: v.key
        )

    def apply_put(self, key: str, value: bytes, lease: int = 0) -> int:
        if lease and lease not in self.leases:
            raise LeaseExpired(f"etcdserver: requested lease not found ({lease:x})")
        self.revision += 1
        self._put(key, value, lease, self.revision)
        self._commit()
        return self.revision

    def apply_delete(self, key: str) -> bool:
        if key not in self.kv:
            return False
        self.revision += 1
        self._delete(key, self.revision)
        self._commit()
        return True

    def apply_txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op]) -> TxnResult:
        ok = all(c.holds(self.kv.get(c.key)) for c in compares)
        ops = success if ok else failure
        for o in ops:
            if o.kind == "put" and o.lease and o.lease not in self.leases:
                raise LeaseExpired(f"etcdserver: requested lease not found ({o.lease:x})")
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
                out.append(self.range(o.key, o.prefix))
        if writes:
            self._commit()
        return TxnResult(ok, self.revision, out)

    def drop_lease(self, lease: int) -> None:
        """The lease ends (revoked, or its TTL ran out): its keys go, in one revision."""
        if self.leases.pop(lease, None) is None:
            return
        keys = sorted(k for k, v in self.kv.items() if v.lease == lease)
        if keys:
            self.revision += 1
            for k in keys:
                self._delete(k, self.revision)
            self._commit()
