"""The narrow interface the cluster code uses to reach its coordination store (etcd).

Only what Kafka's ZooKeeper-era design needs: keys with revisions (create_revision,
mod_revision, version), multi-key transactions with compare-and-swap (`txn`), leases for
ephemeral keys, and ordered watches that resume from a revision. `EtcdStore` (etcd.py) speaks to
etcd; anything with the same semantics can stand in for it.

`LeaseKeeper` keeps one lease alive and tells its owner, once, when etcd says it is lost (a
keepalive refused: the lease expired). While etcd is unreachable nothing is reported (the broker
keeps its last known state; acks=all still needs every ISR member, so nothing is acknowledged by
fewer replicas) and `valid()` is false once no keepalive succeeded for a whole TTL: no ISR change
is attempted meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger("tidelog.cluster")


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int = 1
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Compare:
    key: str
    target: str  # "value" | "create" | "mod" | "version"
    op: str  # "==" | "!=" | "<" | ">"
    value: int | bytes

    @classmethod
    def mod(cls, key: str, revision: int) -> Compare:
        return cls(key, "mod", "==", revision)

    @classmethod
    def create(cls, key: str, revision: int) -> Compare:
        """create_revision == revision; 0 means the key is absent."""
        return cls(key, "create", "==", revision)

    @classmethod
    def value_is(cls, key: str, value: bytes) -> Compare:
        return cls(key, "value", "==", value)

    def holds(self, kv: KeyValue | None) -> bool:
        """etcd's verdict on this compare against the key as it is (`kv`; None when absent, whose
        value is empty and whose revisions and version are 0): what the in-memory models of etcd
        in the tests evaluate."""
        actual: int | bytes
        if self.target == "value":
            actual = kv.value if kv else b""
        elif self.target == "create":
            actual = kv.create_revision if kv else 0
        elif self.target == "mod":
            actual = kv.mod_revision if kv else 0
        else:
            actual = kv.version if kv else 0
        if self.op == "==":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        if isinstance(actual, bytes) or isinstance(self.value, bytes):
            raise ValueError(f"compare {self.op} needs a revision or version, not a value")
        return actual < self.value if self.op == "<" else actual > self.value


@dataclass(frozen=True, slots=True)
class Op:
    kind: str  # "put" | "delete" | "get"
    key: str
    value: bytes = b""
    lease: int = 0
    prefix: bool = False

    @classmethod
    def put(cls, key: str, value: bytes, lease: int = 0) -> Op:
        return cls("put", key, value, lease)

    @classmethod
    def delete(cls, key: str) -> Op:
        return cls("delete", key)

    @classmethod
    def delete_prefix(cls, prefix: str) -> Op:
        return cls("delete", prefix, prefix=True)

    @classmethod
    def get(cls, key: str) -> Op:
        return cls("get", key)

    @classmethod
    def get_prefix(cls, prefix: str) -> Op:
        return cls("get", prefix, prefix=True)


@dataclass(frozen=True, slots=True)
class TxnResult:
    succeeded: bool
    revision: int
    responses: list[list[KeyValue]] = field(default_factory=list)  # one list per op (gets fill theirs)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # "PUT" | "DELETE"
    kv: KeyValue  # for DELETE: the key and the deletion's mod_revision, value b""


class StoreUnavailable(Exception):
    """The store did not answer in time (or the watch cannot resume). Raised by a read, or by a
    write that surely never reached the store (no connection) or that it refused: nothing was
    changed."""


class OutcomeUnknown(StoreUnavailable):
    """A write (put, delete, txn with writes, lease grant or revoke) was sent but no answer came
    back, or the store answered that it could not confirm it in time (etcd: "request timed out"):
    it may or may not have been applied. Never retried by the store (a retried compare-and-swap
    would then "fail" against its own first attempt); the caller reads back what it wrote to
    learn which (committed / refused / unknown: `read back, never assume`)."""


class LeaseExpired(Exception):
    """The store no longer has this lease."""


class Store(Protocol):
    async def get(self, key: str) -> KeyValue | None: ...
    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]: ...
    async def put(self, key: str, value: bytes, lease: int = 0) -> int: ...
    async def delete(self, key: str) -> bool: ...
    async def txn(
        self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()
    ) -> TxnResult: ...
    async def grant(self, ttl_s: int) -> int: ...
    async def keepalive(self, lease: int) -> int: ...
    async def revoke(self, lease: int) -> None: ...
    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[WatchEvent]: ...
    async def close(self) -> None: ...


COMMITTED, NOT_WRITTEN, UNKNOWN = "committed", "not written", "unknown"


async def put_if(store: Store, compares: Sequence[Compare], key: str, value: bytes, lease: int = 0) -> tuple[str, int]:
    """Put `value` at `key` if `compares` hold: (COMMITTED, its revision); (NOT_WRITTEN, the
    key's mod revision now, or 0 when not read) - the compare failed, or the write was lost; or
    (UNKNOWN, 0). An answer that did not come is resolved by reading the key back (`read back,
    never assume`, `read_back`); UNKNOWN only when the read fails too."""
    try:
        res = await store.txn(compares, [Op.put(key, value, lease)])
        return (COMMITTED if res.succeeded else NOT_WRITTEN), (res.revision if res.succeeded else 0)
    except OutcomeUnknown as e:
        log.info("%s: %s; reading it back", key, e)
    return await read_back(store, key, value, lease)


async def read_back(store: Store, key: str, value: bytes, lease: int = 0) -> tuple[str, int]:
    """Whether a put of `value` at `key` is what etcd holds: (COMMITTED, its revision) when our
    value is there (or an identical one: the same state either way); (NOT_WRITTEN, the key's mod
    revision now, 0 when absent) when another value is; (UNKNOWN, 0) when etcd does not answer."""
    try:
        kv = await store.get(key)
    except StoreUnavailable:
        return UNKNOWN, 0
    if kv is not None and kv.value == value and (not lease or kv.lease == lease):
        return COMMITTED, kv.mod_revision
    return NOT_WRITTEN, kv.mod_revision if kv is not None else 0


def prefix_end(prefix: str) -> bytes:
    """etcd's range_end for "every key starting with prefix"."""
    b = bytearray(prefix.encode())
    for i in range(len(b) - 1, -1, -1):
        if b[i] < 0xFF:
            b[i] += 1
            return bytes(b[: i + 1])
    return b"\x00"


class LeaseKeeper:
    """Keeps the broker's etcd lease alive. `on_lost` is called when etcd says the lease is gone;
    `on_restored` when a keepalive succeeds after a whole TTL without one (`valid()` was False:
    what waited for a sure lease, such as loading a coordinator, may go ahead)."""

    def __init__(
        self,
        store: Store,
        ttl_s: int,
        on_lost: Callable[[], None] | None = None,
        on_restored: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.lease = 0
        self.on_lost = on_lost
        self.on_restored = on_restored
        self._last_ok = 0.0
        self._warned = False
        self._stopped = False
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is not None:  # a restart after a loss: one keeper, for the newest lease
            self._task.cancel()
        self._stopped = False
        asked = time.monotonic()
        self.lease = await self.store.grant(self.ttl_s)
        self._last_ok = asked
        self._task = asyncio.ensure_future(self._keep())

    def valid(self) -> bool:
        """Whether the lease is surely still alive in etcd (a keepalive succeeded within the TTL)."""
        return self.lease != 0 and time.monotonic() - self._last_ok < self.ttl_s

    async def _keep(self) -> None:
        every = self.ttl_s / 3
        while True:
            await asyncio.sleep(every)
            if self._stopped or not self.lease:
                return
            sent = time.monotonic()
            try:
                await self.store.keepalive(self.lease)
                was_valid = self.valid()
                self._last_ok = sent
                if not was_valid and self.on_restored is not None:
                    self.on_restored()
            except LeaseExpired:
                self._lost("expired")
                return
            except StoreUnavailable as e:
                # etcd away: keep serving the last known state (no ISR change can be written,
                # so acks=all waits: the safe direction); only etcd saying the lease is gone
                # ends it
                if time.monotonic() - self._last_ok >= self.ttl_s and not self._warned:
                    self._warned = True
                    log.warning("etcd unreachable for a whole session (%s): serving the last known state", e)
                continue
            self._warned = False

    def _lost(self, why: str) -> None:
        if self._stopped:
            return
        log.warning("lease %x lost: %s", self.lease, why)
        self.lease = 0
        if self.on_lost is not None:
            self.on_lost()

    async def stop(self) -> None:
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.lease:
            lease, self.lease = self.lease, 0
            await self.store.revoke(lease)
