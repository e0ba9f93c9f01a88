"""A model of etcd for the simulation: the server's state (tests/etcd_model.py: one revision
counter, keys with create/mod revisions and versions, compare-and-swap transactions, an ordered
history for watches; here leases expire on virtual time) and, per simulated process, a client
behind the cluster code's `Store` interface that fails as a real one can:

- each call takes a random round trip; a process cut off from etcd, or an etcd that is down,
  answers nothing: after the client's timeout, StoreUnavailable (a read, or a write that was
  never sent) or OutcomeUnknown (a write that was sent: applied or not, at random);
- with `lost_outcomes` > 0, a write is sometimes applied while its answer is lost
  (OutcomeUnknown), or lost before it is applied (also OutcomeUnknown);
- watches deliver every event in revision order, each after a random lag (`watch_lag` per
  process can make one broker's view fall seconds behind); they break while etcd is down or
  unreachable and resume from the next revision, as the real client does;
- leases expire `ttl` seconds after their last keepalive heard by the server; when etcd comes
  back from an outage every lease gets its full TTL again (etcd's lessor does so on a new leader).
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

from etcd_model import EtcdData

from tidelog.cluster.store import (
    Compare,
    KeyValue,
    LeaseExpired,
    Op,
    OutcomeUnknown,
    StoreUnavailable,
    TxnResult,
    WatchEvent,
)

from .loop import Process, SimLoop


class EtcdServer(EtcdData):
    def __init__(self, loop: SimLoop, rng: random.Random) -> None:
        super().__init__()
        self.loop = loop
        self.context = contextvars.Context()  # etcd's own timers belong to no simulated broker
        self.rng = rng
        self.leases: dict[int, tuple[int, asyncio.TimerHandle]] = {}  # id -> (ttl, expiry timer)
        self._next_lease = 0x1000
        self._who = ""  # the process whose request is being applied
        self.up = True
        self.unreachable: set[str] = set()  # process names cut off from etcd
        self.lost_outcomes = 0.0  # probability that a write's outcome is lost
        # scripted faults: the answers of the next writes whose keys start with a prefix are lost
        # after the write is applied (prefix -> how many more)
        self.lose_answers: dict[str, int] = {}
        self.answer_delay: dict[str, float] = {}  # prefix -> seconds the answers of its writes take
        self.watch_lag: dict[str, float] = {}  # process name -> extra lag per event (seconds)
        self.writes: list[tuple[int, str, str, bytes]] = []  # (revision, who, key, value) of every put

    # ---- availability -----------------------------------------------------------------------------
    def reachable(self, who: str) -> bool:
        return self.up and who not in self.unreachable

    def go_down(self) -> None:
        self.up = False
        self._poke_up()

    def come_up(self) -> None:
        if self.up:
            return
        self.up = True
        for lease, (ttl, handle) in list(self.leases.items()):  # a new leader renews every lease
            handle.cancel()
            self.leases[lease] = (ttl, self.loop.call_later(ttl, self._expire, lease, context=self.context))
        self._poke_up()

    def set_reachable(self, who: str, reachable: bool) -> None:
        if reachable:
            self.unreachable.discard(who)
        else:
            self.unreachable.add(who)
        self._poke_up()

    def _poke_up(self) -> None:
        self._commit()  # wakes the watchers, which look again

    # ---- state ------------------------------------------------------------------------------------
    def written(self, kv: KeyValue) -> None:
        self.writes.append((kv.mod_revision, self._who, kv.key, kv.value))

    def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op], who: str) -> TxnResult:
        self._who = who
        return self.apply_txn(compares, success, failure)

    def grant(self, ttl: int) -> int:
        self._next_lease += 1
        lease = self._next_lease
        self.leases[lease] = (ttl, self.loop.call_later(ttl, self._expire, lease, context=self.context))
        return lease

    def keepalive(self, lease: int) -> int:
        got = self.leases.get(lease)
        if got is None:
            raise LeaseExpired(f"lease {lease:x} not found")
        ttl, handle = got
        handle.cancel()
        self.leases[lease] = (ttl, self.loop.call_later(ttl, self._expire, lease, context=self.context))
        return ttl

    def revoke(self, lease: int) -> None:
        got = self.leases.get(lease)
        if got is not None:
            got[1].cancel()
        self._expire(lease)

    def _expire(self, lease: int) -> None:
        if not self.up:  # the lessor is down with etcd: renewed when it returns
            return
        self.drop_lease(lease)

    def client(self, proc: Process, timeout_s: float = 2.0) -> EtcdClient:
        return EtcdClient(self, proc, timeout_s)


class EtcdClient:
    """What one process sees of etcd (the `Store` interface)."""

    def __init__(self, server: EtcdServer, proc: Process, timeout_s: float) -> None:
        self.server = server
        self.proc = proc
        self.timeout_s = timeout_s
        self.closed = False

    def _rtt(self) -> float:
        return self.server.rng.uniform(0.0003, 0.003)

    def _scripted_loss(self, keys: Sequence[str]) -> bool:
        for prefix, n in list(self.server.lose_answers.items()):
            if n > 0 and any(k.startswith(prefix) for k in keys):
                self.server.lose_answers[prefix] = n - 1
                return True
        return False

    async def _call(self, fn: Any, mutating: bool, keys: Sequence[str] = ()) -> Any:
        s = self.server
        if self.closed:
            raise StoreUnavailable("store closed")
        if not s.reachable(self.proc.name):
            if not s.up:  # nothing listens: refused at once, nothing sent
                await asyncio.sleep(self._rtt())
                raise StoreUnavailable("etcd: connection refused")
            await asyncio.sleep(self.timeout_s)  # the connection hangs
            raise StoreUnavailable("etcd: timed out connecting")
        half = self._rtt() / 2
        await asyncio.sleep(half)
        lost = mutating and s.lost_outcomes > 0 and s.rng.random() < s.lost_outcomes
        scripted = mutating and self._scripted_loss(keys)
        lost = lost or scripted
        applied = False
        if s.reachable(self.proc.name) and (scripted or not (lost and s.rng.random() < 0.5)):
            result = fn()  # may raise LeaseExpired: a definite answer (if it reaches us)
            applied = True
        if not lost and applied:
            await asyncio.sleep(
                half + max((d for p, d in s.answer_delay.items() if any(k.startswith(p) for k in keys)), default=0.0)
            )
            if s.reachable(self.proc.name) and not self.closed:
                return result
        await asyncio.sleep(self.timeout_s)
        if mutating:
            raise OutcomeUnknown(f"etcd: no answer within {self.timeout_s}s (applied: unknown)")
        raise StoreUnavailable(f"etcd: no answer within {self.timeout_s}s")

    # ---- Store ---------------------------------------------------------------------------------
    async def get(self, key: str) -> KeyValue | None:
        return await self._call(lambda: self.server.kv.get(key), False)  # type: ignore[no-any-return]

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        s = self.server
        return await self._call(  # type: ignore[no-any-return]
            lambda: (s.range(prefix, prefix=True), s.revision), False
        )

    async def put(self, key: str, value: bytes, lease: int = 0) -> int:
        res = await self.txn([], [Op.put(key, value, lease)])
        return res.revision

    async def delete(self, key: str) -> bool:
        existed = key in self.server.kv
        await self.txn([], [Op.delete(key)])
        return existed

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        mutating = any(o.kind != "get" for o in (*success, *failure))
        keys = [o.key for o in (*success, *failure) if o.kind != "get"]
        return await self._call(  # type: ignore[no-any-return]
            lambda: self.server.txn(compares, success, failure, self.proc.name), mutating, keys
        )

    async def grant(self, ttl_s: int) -> int:
        return await self._call(lambda: self.server.grant(ttl_s), True)  # type: ignore[no-any-return]

    async def keepalive(self, lease: int) -> int:
        return await self._call(lambda: self.server.keepalive(lease), False)  # type: ignore[no-any-return]

    async def revoke(self, lease: int) -> None:
        try:
            await self._call(lambda: self.server.revoke(lease), True)
        except LeaseExpired:
            pass

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[WatchEvent]:
        s = self.server
        i = 0
        next_rev = start_revision
        while not self.closed:
            if not s.reachable(self.proc.name):
                await s.changed.wait()
                continue
            while i < len(s.history) and s.reachable(self.proc.name):
                ev = s.history[i]
                if ev.kv.mod_revision < next_rev or not ev.kv.key.startswith(prefix):
                    i += 1
                    continue
                await asyncio.sleep(s.rng.uniform(0.0002, 0.002) + s.watch_lag.get(self.proc.name, 0.0))
                if not s.reachable(self.proc.name) or self.closed:
                    break  # the stream broke: resumes from next_rev
                i += 1
                next_rev = ev.kv.mod_revision
                yield ev
            if s.reachable(self.proc.name) and i >= len(s.history):
                await s.changed.wait()
        raise StoreUnavailable("store closed")

    async def close(self) -> None:
        self.closed = True
