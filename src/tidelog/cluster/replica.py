"""Each local partition's replica role and, on the leader, Kafka's ISR bookkeeping.

Roles follow the partition state in etcd (`apply`): the broker named leader leads with that
leader epoch (batches it appends are stamped with it); the other replicas follow, fetching from
the leader; a partition with no leader is offline here.

On the leader (Kafka's ISR protocol):
- each follower's log end offset is the offset of its latest fetch; a follower is caught up when
  it fetched at the leader's log end offset, and its caught-up time is kept;
- the high watermark is the smallest log end offset in the ISR and never moves back;
- a follower that is not in the ISR joins it once it has fetched up to the high watermark and to
  the start of the current epoch; an ISR follower not caught up for `replica.lag.time.max.ms`
  leaves it. Both are compare-and-swap writes of the partition state; the leader's own copy of
  the ISR changes only when the write succeeded (a shrink counts once committed, KIP-497);
- acks=all produce requests wait until the high watermark passes their last offset; they fail with
  NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR falls below `min.insync.replicas` while waiting,
  NOT_LEADER_OR_FOLLOWER when leadership moves, REQUEST_TIMED_OUT at their timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode as E

from .model import PartitionState
from .store import Compare, Op, Store

log = logging.getLogger("tidelog.cluster")

LEADER, FOLLOWER, OFFLINE = "leader", "follower", "offline"


@dataclass
class Waiter:
    offset: int  # answered when the high watermark is above this offset
    future: asyncio.Future[int]


@dataclass
class Replica:
    topic: str
    partition: int
    plog: Any
    role: str = OFFLINE
    state: PartitionState | None = None
    follower_leo: dict[int, int] = field(default_factory=dict)
    caught_up_at: dict[int, float] = field(default_factory=dict)
    isr_write_pending: bool = False
    # KIP-497's maximal ISR: a follower being added counts for the HW from the moment its
    # expansion is asked until it is written, so the HW never passes a replica etcd may already
    # list as in sync (else it could be elected without records acknowledged meanwhile)
    pending_isr: tuple[int, ...] = ()
    waiters: list[Waiter] = field(default_factory=list)
    epoch_start: int = 0
    draining: bool = False  # controlled shutdown: no more appends, followers still served

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch if self.state is not None else -1

    @property
    def isr(self) -> tuple[int, ...]:
        return self.state.isr if self.state is not None else ()

    def fail_waiters(self, code: int) -> None:
        for w in self.waiters:
            if not w.future.done():
                w.future.set_result(code)
        self.waiters.clear()


class ReplicaManager:
    def __init__(self, node_id: int, store: Store, keys: Any, cache: Any, partitions: Any, config: Any,
                 lease_valid: Callable[[], bool], min_isr: Callable[[str], int]) -> None:
        self.node_id = node_id
        self.store = store
        self.keys = keys
        self.cache = cache
        self.partitions = partitions
        self.lease_valid = lease_valid
        self.min_isr = min_isr  # topic -> its min.insync.replicas (topic config, else the broker's)
        self.replicas: dict[tuple[str, int], Replica] = {}
        self.fetchers: Any = None  # FetcherManager, set by the node
        self.lag_max_s = config["replica.lag.time.max.ms"] / 1000
        self.isr_shrinks = 0
        self.isr_expands = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lost_logged: dict[tuple[str, int], int] = {}

    # ---- roles ------------------------------------------------------------------------------
    def apply(self, topic: str, partition: int) -> None:
        """Make the local role match the partition's state in the cache."""
        state = self.cache.state(topic, partition)
        replicas = self.cache.replicas(topic, partition)
        key = (topic, partition)
        if self.node_id not in replicas or state is None:
            r = self.replicas.pop(key, None)
            if r is not None:
                r.fail_waiters(E.not_leader_or_follower.value)
                if self.fetchers is not None:
                    self.fetchers.remove(topic, partition)
            a = self.cache.topics.get(topic)
            if a is not None and 0 <= partition < a.partitions and self.node_id not in replicas \
                    and self.partitions.manager.get(topic, partition) is not None:
                # reassigned away (now, or while this broker was down): its copy goes, as Kafka's
                # StopReplica with deletion
                self.partitions.manager.delete(topic, partition)
                if self.fetchers is not None:
                    self.fetchers.txn.forget(topic, partition)
                log.info("%s-%d: no longer a replica here: local copy deleted", topic, partition)
            return
        plog = self.partitions.get(topic, partition)
        if plog is None:
            return
        r = self.replicas.get(key)
        if r is None:
            r = self.replicas[key] = Replica(topic, partition, plog)
        plog.replicated = True
        old = r.state
        r.plog = plog
        if state.leader == self.node_id:
            if r.role != LEADER or old is None or old.leader_epoch != state.leader_epoch:
                self._become_leader(r, state)
            else:
                r.state = state
                self._sync_followers(r, replicas)
                self.maybe_advance_hw(r)
                self._check_min_isr(r)
        elif state.leader >= 0:
            if r.role != FOLLOWER or old is None or old.leader_epoch != state.leader_epoch or old.leader != state.leader:
                self._become_follower(r, state)
            else:
                r.state = state
        else:
            r.state = state
            if r.role != OFFLINE:
                log.info("%s-%d: offline (no leader)", topic, partition)
            r.role = OFFLINE
            r.fail_waiters(E.not_leader_or_follower.value)
            if self.fetchers is not None:
                self.fetchers.remove(topic, partition)

    # ---- controlled shutdown -----------------------------------------------------------------
    async def hand_over_all(self, timeout_s: float = 5.0) -> int:
        """Before this broker stops: every partition it leads stops taking appends, its followers
        catch up to its log end, and the first live in-sync follower (assignment order) is made
        leader at the next epoch (a compare-and-swap, as the leader's own ISR changes), this
        broker leaving the ISR. Partitions without such a follower stay (they go offline with the
        registration, as before). Returns how many were handed over."""
        led = [r for r in self.replicas.values() if r.role == LEADER and r.state is not None]
        for r in led:
            r.draining = True
        deadline = time.monotonic() + timeout_s
        moved = 0
        for r in led:
            for _attempt in range(5):  # a concurrent ISR change or election: retried on the newer state
                handed = await self._hand_over(r, deadline)
                if handed is not None:
                    moved += handed
                    break
                await asyncio.sleep(0.05)  # the watch brings the state that won
        return moved

    async def _hand_over(self, r: Replica, deadline: float) -> int | None:
        """1 when handed over, 0 when there is no successor (or etcd is away), None when the
        compare-and-swap lost to another write (to retry)."""
        st = r.state
        if st is None or r.role != LEADER:
            return 0
        live = self.cache.brokers
        successors = [b for b in self.cache.replicas(r.topic, r.partition)
                      if b != self.node_id and b in st.isr and b in live]
        if not successors:
            return 0
        successor = successors[0]
        leo = r.plog.log_end_offset
        while r.follower_leo.get(successor, -1) < leo and time.monotonic() < deadline:
            await asyncio.sleep(0.02)  # its fetches are still served
        st = r.state if r.state is not None else st
        new = PartitionState(successor, st.leader_epoch + 1, tuple(b for b in st.isr if b != self.node_id),
                             st.controller_epoch)
        key = self.keys.partition(r.topic, r.partition)
        try:
            res = await self.store.txn([Compare.mod(key, st.version)], [Op.put(key, new.encode())])
        except Exception as e:  # noqa: BLE001 - etcd away: the partition fails over at session expiry
            log.warning("%s-%d: leadership not handed over: %s", r.topic, r.partition, e)
            return 0
        if not res.succeeded:
            return None
        r.role = OFFLINE
        r.fail_waiters(E.not_leader_or_follower.value)
        return 1

    def _become_leader(self, r: Replica, state: PartitionState) -> None:
        if self.fetchers is not None:
            self.fetchers.remove(r.topic, r.partition)
        r.state = state
        r.role = LEADER
        r.draining = False
        r.plog.set_leader_epoch(state.leader_epoch)
        r.epoch_start = r.plog.log_end_offset
        now = time.monotonic()
        r.follower_leo = {b: -1 for b in self.cache.replicas(r.topic, r.partition) if b != self.node_id}
        r.caught_up_at = {b: now for b in r.follower_leo}
        log.info("%s-%d: leader at epoch %d from offset %d, isr %s", r.topic, r.partition, state.leader_epoch,
                 r.epoch_start, list(state.isr))
        self.maybe_advance_hw(r)

    def _sync_followers(self, r: Replica, replicas: tuple[int, ...]) -> None:
        """The followers tracked follow the assignment (a reassignment adds and removes some)."""
        want = {b for b in replicas if b != self.node_id}
        if want == set(r.follower_leo):
            return
        now = time.monotonic()
        for b in want - set(r.follower_leo):
            r.follower_leo[b] = -1
            r.caught_up_at[b] = now
        for b in set(r.follower_leo) - want:
            r.follower_leo.pop(b, None)
            r.caught_up_at.pop(b, None)

    def _become_follower(self, r: Replica, state: PartitionState) -> None:
        r.fail_waiters(E.not_leader_or_follower.value)
        r.state = state
        r.role = FOLLOWER
        r.follower_leo.clear()
        log.info("%s-%d: following %d at epoch %d", r.topic, r.partition, state.leader, state.leader_epoch)
        if self.fetchers is not None:
            self.fetchers.add(r.topic, r.partition, state.leader, state.leader_epoch)

    def stop_leading_all(self) -> None:
        """The lease is gone: another broker may be leading these partitions already."""
        for r in self.replicas.values():
            if r.role == LEADER:
                log.warning("%s-%d: lease lost, no longer acting as leader", r.topic, r.partition)
                r.role = OFFLINE
                r.fail_waiters(E.not_leader_or_follower.value)

    # ---- questions from the data path ---------------------------------------------------------
    def leader(self, topic: str, partition: int) -> Replica | None:
        r = self.replicas.get((topic, partition))
        return r if r is not None and r.role == LEADER else None

    # ---- the leader's bookkeeping ------------------------------------------------------------
    def on_follower_fetch(self, r: Replica, follower: int, fetch_offset: int) -> None:
        if follower not in r.follower_leo:
            return
        leo = r.plog.log_end_offset
        r.follower_leo[follower] = fetch_offset
        if fetch_offset >= leo:
            r.caught_up_at[follower] = time.monotonic()
        if follower not in r.isr:
            if (fetch_offset >= r.plog.high_watermark and fetch_offset >= r.epoch_start
                    and not r.isr_write_pending and not r.pending_isr):
                r.pending_isr = tuple(r.isr) + (follower,)  # counts for the HW from now on
                self._spawn(self._change_isr(r, r.pending_isr, "expand"))
        else:
            self.maybe_advance_hw(r)

    def maybe_advance_hw(self, r: Replica) -> None:
        if r.role != LEADER:
            return
        leos = [r.plog.log_end_offset]
        for b in set(r.isr) | set(r.pending_isr):
            if b != self.node_id:
                leos.append(r.follower_leo.get(b, -1))
        hw = min(leos)
        if hw >= 0 and r.plog.update_high_watermark(hw):
            self.partitions.notify(r.topic, r.partition)
        self._complete_waiters(r)

    def _complete_waiters(self, r: Replica) -> None:
        if not r.waiters:
            return
        hw = r.plog.high_watermark
        # as Kafka's DelayedProduce: reaching the HW with an ISR below min.insync.replicas is
        # NOT_ENOUGH_REPLICAS_AFTER_APPEND (the HW moved because the ISR shrank, not because
        # enough replicas have the batch)
        code = 0 if len(r.isr) >= self.min_isr(r.topic) else E.not_enough_replicas_after_append.value
        keep = []
        for w in r.waiters:
            if w.future.done():
                continue
            if w.offset < hw:
                w.future.set_result(code)
            else:
                keep.append(w)
        r.waiters = keep

    def _check_min_isr(self, r: Replica) -> None:
        if r.waiters and len(r.isr) < self.min_isr(r.topic):
            r.fail_waiters(E.not_enough_replicas_after_append.value)

    async def wait_replicated(self, r: Replica, last_offset: int, timeout_s: float) -> int:
        """0 once the high watermark passes `last_offset`, else the error code to answer."""
        if len(r.isr) < self.min_isr(r.topic):
            return E.not_enough_replicas_after_append.value
        if r.plog.high_watermark > last_offset:
            return 0
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        r.waiters.append(Waiter(last_offset, fut))
        self.maybe_advance_hw(r)
        try:
            code = await asyncio.wait_for(asyncio.shield(fut), timeout_s)
        except asyncio.TimeoutError:
            return E.request_timed_out.value
        return code

    def check_isr_lag(self) -> None:
        """Shrink the ISR of every led partition with followers not caught up for too long."""
        now = time.monotonic()
        for r in list(self.replicas.values()):
            if r.role != LEADER or r.isr_write_pending:
                continue
            leo = r.plog.log_end_offset
            lagging = [b for b in r.isr if b != self.node_id
                       and r.follower_leo.get(b, -1) < leo and now - r.caught_up_at.get(b, now) > self.lag_max_s]
            if lagging:
                self._spawn(self._change_isr(r, tuple(b for b in r.isr if b not in lagging), "shrink"))

    async def _change_isr(self, r: Replica, isr: tuple[int, ...], why: str) -> None:
        state = r.state
        if state is None or r.role != LEADER or not self.lease_valid():
            r.pending_isr = ()
            return
        r.isr_write_pending = True
        try:
            new = PartitionState(state.leader, state.leader_epoch, isr, state.controller_epoch)
            key = self.keys.partition(r.topic, r.partition)
            res = await self.store.txn([Compare.mod(key, state.version)], [Op.put(key, new.encode())])
            if res.succeeded:
                if why == "expand":
                    self.isr_expands += 1
                else:
                    self.isr_shrinks += 1
                log.info("%s-%d: isr %s: %s -> %s", r.topic, r.partition, why, list(state.isr), list(isr))
                # our watch brings the new state (with its version); apply it now for the HW
                r.state = PartitionState(state.leader, state.leader_epoch, isr, state.controller_epoch, res.revision)
                self.maybe_advance_hw(r)
                self._check_min_isr(r)
            elif self._lost_logged.get((r.topic, r.partition)) != state.version:
                # another write won: the watch brings it, and the next fetch (or lag check) retries;
                # said once per version, so that a leader stuck on a stale version shows it
                self._lost_logged[(r.topic, r.partition)] = state.version
                log.info("%s-%d: isr %s to %s lost to a newer write of the state (ours at version %d)",
                         r.topic, r.partition, why, list(isr), state.version)
        except Exception as e:  # noqa: BLE001 - etcd away: the ISR stays as it is (the safe direction)
            log.warning("%s-%d: isr %s not written: %s", r.topic, r.partition, why, e)
        finally:
            r.isr_write_pending = False
            r.pending_isr = ()

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    def under_replicated(self) -> int:
        return sum(1 for r in self.replicas.values()
                   if r.role == LEADER and len(r.isr) < len(self.cache.replicas(r.topic, r.partition)))
