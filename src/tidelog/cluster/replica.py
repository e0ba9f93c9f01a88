"""The replica manager: the one owner of this broker's replicated partitions (Kafka's
`ReplicaManager` and `Partition`). Leadership, leader epoch, ISR, high watermark and the writes
waiting for replication change here and nowhere else; handlers, the marker paths and the
coordinators ask it for an append `Lease` and wait on it, and hold no replication logic.

Roles follow the partition state in etcd (`apply`, called on every change the watch brings):
this broker leads a partition when the state names it leader *in this incarnation* (its current
broker epoch); a state naming it that was written for an earlier incarnation (it restarted, or
lost its etcd lease and registered again) leaves it offline until the controller chooses again,
at a new leader epoch. The other replicas follow, fetching from the leader.

On the leader (Kafka's ISR protocol):
- each follower's log end offset is the offset of its latest fetch, counted only once the fetch
  was read (an offset past this leader's log end is an error, not a position); a follower is
  caught up when it fetched at the leader's log end offset, and its caught-up time is kept; a
  follower that registers again (a new incarnation) counts from its next fetch;
- the high watermark is the smallest log end offset of the maximal ISR and never moves back;
- a follower outside the ISR joins it once it fetched up to the high watermark and the start of
  the current epoch and is a registered broker; an ISR follower not caught up for
  `replica.lag.time.max.ms` leaves it. Both are compare-and-swap writes of the partition state
  on its version (the partition epoch), proposed under the current leader epoch; an answer is
  installed only while still leading at that epoch and only if no newer state came meanwhile;
  an answer that never came is read back (`store.put_if`), and until a newer state is seen the
  proposal keeps counting (KIP-497);
- acks=all writes wait (`wait_replicated`; a Produce request's together, with one future and
  one timer: `wait_all_replicated`) until the high watermark passes them under the epoch they
  were appended at (partition.py); NOT_ENOUGH_REPLICAS before the append when the ISR is
  below `min.insync.replicas`, NOT_ENOUGH_REPLICAS_AFTER_APPEND when it falls below while they
  wait, REQUEST_TIMED_OUT at every leadership change (the outcome is unknown: partition.py) and
  at their timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from .model import PartitionState, intact, make_state
from .partition import FOLLOWER, LEADER, NOT_LEADER, OFFLINE, UNKNOWN_OUTCOME, Lease, Partition, WaitGroup, Waiting
from .store import COMMITTED, NOT_WRITTEN, UNKNOWN, Compare, Store, StoreUnavailable, put_if, read_back

if TYPE_CHECKING:
    from ..core.config import BrokerConfig
    from ..core.partitions import Partitions
    from .fetcher import FetcherManager
    from .metadata import MetadataCache
    from .model import Keys

log = logging.getLogger("tidelog.cluster")

__all__ = ["ReplicaManager", "Partition", "Lease", "LEADER", "FOLLOWER", "OFFLINE"]


class ReplicaManager:
    def __init__(
        self,
        node_id: int,
        store: Store,
        keys: Keys,
        cache: MetadataCache,
        partitions: Partitions,
        config: BrokerConfig,
        lease_valid: Callable[[], bool],
        min_isr: Callable[[str], int],
        broker_epoch: Callable[[], int],
        fetchers: FetcherManager,
    ) -> None:
        """`broker_epoch()`: this incarnation's broker epoch, -1 while not registered;
        `min_isr(topic)`: the topic's min.insync.replicas; `fetchers`: the FetcherManager."""
        self.node_id = node_id
        self.store = store
        self.keys = keys
        self.cache = cache
        self.partitions = partitions
        self.lease_valid = lease_valid
        self.min_isr = min_isr
        self.broker_epoch = broker_epoch
        self.fetchers = fetchers
        self.replicas: dict[tuple[str, int], Partition] = {}
        self.lag_max_s = config["replica.lag.time.max.ms"] / 1000
        self.isr_shrinks = 0
        self.isr_expands = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lost_logged: dict[tuple[str, int], int] = {}
        self._epochs_seen: dict[int, int] = {}  # broker -> the registration epoch last seen

    # ---- roles ------------------------------------------------------------------------------
    def apply(self, topic: str, partition: int) -> None:
        """Make the local role match the partition's state in the cache."""
        state = self.cache.state(topic, partition)
        replicas = self.cache.replicas(topic, partition)
        key = (topic, partition)
        if self.node_id not in replicas or state is None:
            self._remove(topic, partition, replicas)
            return
        plog = self.partitions.get(topic, partition)
        if plog is None:
            return
        p = self.replicas.get(key)
        if p is None:
            p = self.replicas[key] = Partition(topic, partition, plog)
        plog.start_replication()
        p.plog = plog
        old = p.state
        if state.leader == self.node_id:
            mine = self.broker_epoch()
            if mine <= 0 or state.leader_broker_epoch != mine:
                self._become_offline(p, state, "led by an earlier incarnation of this broker: waiting for an election")
            elif p.role != LEADER or old is None or old.leader_epoch != state.leader_epoch:
                self._become_leader(p, state)
            elif p.install(state):
                self._sync_followers(p, replicas)
                self.maybe_advance_hw(p)
                self._check_min_isr(p)
        elif state.leader >= 0:
            if (
                p.role != FOLLOWER
                or old is None
                or old.leader_epoch != state.leader_epoch
                or old.leader != state.leader
            ):
                self._become_follower(p, state)
            else:
                p.install(state)
        else:
            self._become_offline(p, state, "no leader")

    def _remove(self, topic: str, partition: int, replicas: tuple[int, ...]) -> None:
        p = self.replicas.pop((topic, partition), None)
        if p is not None:
            p.role = OFFLINE
            p.fail_waiting()
            self.fetchers.remove(topic, partition)
        a = self.cache.topics.get(topic)
        if (
            a is not None
            and 0 <= partition < a.partitions
            and self.node_id not in replicas
            and self.partitions.manager.get(topic, partition) is not None
        ):
            # reassigned away (now, or while this broker was down): its copy goes, as Kafka's
            # StopReplica with deletion
            self.partitions.manager.delete(topic, partition)
            self.fetchers.producers.forget(topic, partition)
            log.info("%s-%d: no longer a replica here: local copy deleted", topic, partition)

    def _become_leader(self, p: Partition, state: PartitionState) -> None:
        self.fetchers.remove(p.topic, p.partition)
        p.fail_waiting()  # writes of an earlier epoch of ours are never acknowledged now
        p.state = state
        p.pending_isr, p.pending_base = (), -1
        p.role = LEADER
        p.draining = False
        p.plog.set_leader_epoch(state.leader_epoch)
        p.epoch_start = p.plog.log_end_offset
        now = time.monotonic()
        p.follower_leo = {b: -1 for b in self.cache.replicas(p.topic, p.partition) if b != self.node_id}
        p.caught_up_at = {b: now for b in p.follower_leo}
        log.info(
            "%s-%d: leader at epoch %d from offset %d, isr %s",
            p.topic,
            p.partition,
            state.leader_epoch,
            p.epoch_start,
            list(state.isr),
        )
        self.maybe_advance_hw(p)

    def _become_follower(self, p: Partition, state: PartitionState) -> None:
        p.fail_waiting()
        p.state = state
        p.role = FOLLOWER
        p.follower_leo.clear()
        p.pending_isr, p.pending_base = (), -1
        log.info("%s-%d: following %d at epoch %d", p.topic, p.partition, state.leader, state.leader_epoch)
        self.fetchers.add(p.topic, p.partition, state.leader, state.leader_epoch)

    def _become_offline(self, p: Partition, state: PartitionState | None, why: str) -> None:
        if state is not None:
            p.state = state
        if p.role != OFFLINE:
            log.info("%s-%d: offline here (%s)", p.topic, p.partition, why)
        p.role = OFFLINE
        p.fail_waiting()
        p.pending_isr, p.pending_base = (), -1
        self.fetchers.remove(p.topic, p.partition)

    def _sync_followers(self, p: Partition, replicas: tuple[int, ...]) -> None:
        """The followers tracked follow the assignment (a reassignment adds and removes some)."""
        want = {b for b in replicas if b != self.node_id}
        if want == set(p.follower_leo):
            return
        now = time.monotonic()
        for b in want - set(p.follower_leo):
            p.follower_leo[b] = -1
            p.caught_up_at[b] = now
        for b in set(p.follower_leo) - want:
            p.follower_leo.pop(b, None)
            p.caught_up_at.pop(b, None)

    def stop_leading_all(self) -> None:
        """The lease is gone: another broker may be leading these partitions already."""
        for p in self.replicas.values():
            if p.role == LEADER:
                log.warning("%s-%d: lease lost, no longer acting as leader", p.topic, p.partition)
                p.role = OFFLINE
                p.fail_waiting()

    def broker_changed(self, broker: int) -> None:
        """A broker registered (again) or left: what an earlier incarnation of it fetched no
        longer counts for the high watermark (it may have come back without its disk)."""
        info = self.cache.brokers.get(broker)
        epoch = info.epoch if info is not None else -1
        if self._epochs_seen.get(broker, epoch) == epoch:
            self._epochs_seen[broker] = epoch
            return
        self._epochs_seen[broker] = epoch
        for p in self.replicas.values():
            if p.role == LEADER and broker in p.follower_leo:
                p.follower_leo[broker] = -1

    # ---- the data path --------------------------------------------------------------------------
    def leader(self, topic: str, partition: int) -> Partition | None:
        """The partition when this broker leads it (reads are served while draining too)."""
        p = self.replicas.get((topic, partition))
        return p if p is not None and p.role == LEADER else None

    def leader_for_append(self, topic: str, partition: int, acks: int = -1) -> tuple[int, Lease | None]:
        """(0, the lease to append and wait under) when this broker leads the partition now and
        takes appends; else NOT_LEADER_OR_FOLLOWER, or NOT_ENOUGH_REPLICAS for acks=all with the
        ISR below min.insync.replicas (as Kafka: refused before anything is appended)."""
        p = self.replicas.get((topic, partition))
        if p is None or p.role != LEADER or p.draining or p.state is None:
            return NOT_LEADER, None
        if acks == -1 and len(p.isr) < self.min_isr(topic):
            return E.not_enough_replicas.value, None
        return 0, Lease(p, p.state.leader_epoch)

    async def wait_replicated(self, lease: Lease, last_offset: int, timeout_s: float) -> int:
        """0 once the high watermark passes `last_offset` while this broker still leads at the
        lease's epoch; else the error code to answer (see the module docstring)."""
        return (await self.wait_all_replicated([(lease, last_offset)], timeout_s))[0]

    async def wait_all_replicated(self, waits: list[tuple[Lease, int]], timeout_s: float) -> list[int]:
        """`wait_replicated` for every append of one request at once (one future, one timer):
        the code of each, in order; those still waiting after `timeout_s` REQUEST_TIMED_OUT."""
        group = WaitGroup(len(waits))
        codes = group.codes
        parked: list[tuple[Partition, Waiting]] = []
        for i, (lease, last_offset) in enumerate(waits):
            p = lease.partition
            if not p.leads_at(lease.epoch):
                codes[i] = UNKNOWN_OUTCOME
            elif len(p.isr) < self.min_isr(p.topic):
                codes[i] = E.not_enough_replicas_after_append.value
            elif p.plog.high_watermark <= last_offset:
                parked.append((p, self._park(p, group, i, lease.epoch, last_offset)))
        if parked:
            await self._wait_group(group, parked, timeout_s)
        return codes

    @staticmethod
    def _park(p: Partition, group: WaitGroup, index: int, epoch: int, offset: int) -> Waiting:
        w = Waiting(epoch, offset, group, index)
        group.remaining += 1
        p.waiting.append(w)
        return w

    async def _wait_group(
        self, group: WaitGroup, parked: list[tuple[Partition, Waiting]], timeout_s: float | None
    ) -> None:
        """Until every parked wait of `group` is answered, or `timeout_s` (then REQUEST_TIMED_OUT
        for those left); a cancelled wait leaves no entry behind. Every wait is parked before any
        high watermark is looked at, so the group cannot resolve while some are still to park."""
        seen: set[int] = set()
        for p, _w in parked:
            if id(p) not in seen:
                seen.add(id(p))
                self.maybe_advance_hw(p)  # may answer some at once
        try:
            if group.remaining:
                async with asyncio.timeout(timeout_s):
                    await group.future  # cancelled with this task: `answer` then sets no result
        except TimeoutError:
            pass
        finally:
            for p, w in parked:
                if not w.answered:  # timed out, or the waiter was cancelled
                    w.answer(E.request_timed_out.value)
                    if w in p.waiting:
                        p.waiting.remove(w)

    async def wait_committed(self, topic: str, partition: int, epoch: int, end: int) -> bool:
        """True once the high watermark reaches `end` while this broker leads the partition at
        `epoch`; False as soon as it no longer does. No time limit: every role change ends it."""
        p = self.replicas.get((topic, partition))
        while p is not None and p.leads_at(epoch):
            if p.plog.high_watermark >= end:
                return True
            await self._wait_past(p, epoch, end - 1)  # answered when the HW passes it, or on any change
        return False

    async def _wait_past(self, p: Partition, epoch: int, offset: int, timeout_s: float | None = None) -> int:
        """Park until the high watermark passes `offset` while `p` is led at `epoch`: the code
        the wait is answered with (0; NOT_ENOUGH_REPLICAS_AFTER_APPEND or UNKNOWN_OUTCOME on an
        ISR or role change, see `Partition.complete`), REQUEST_TIMED_OUT after `timeout_s`."""
        group = WaitGroup(1)
        await self._wait_group(group, [(p, self._park(p, group, 0, epoch, offset))], timeout_s)
        return group.codes[0]

    # ---- the leader's bookkeeping ------------------------------------------------------------
    def on_follower_fetch(self, p: Partition, follower: int, fetch_offset: int) -> None:
        """A follower's fetch at `fetch_offset` was read (called after the read succeeded)."""
        if p.role != LEADER or follower not in p.follower_leo:
            return
        leo = p.plog.log_end_offset
        if fetch_offset > leo:
            return  # not a position in this log (answered OFFSET_OUT_OF_RANGE)
        p.follower_leo[follower] = fetch_offset
        if fetch_offset >= leo:
            p.caught_up_at[follower] = time.monotonic()
        if follower not in p.isr:
            if (
                fetch_offset >= p.plog.high_watermark
                and fetch_offset >= p.epoch_start
                and follower in self.cache.brokers
                and not p.isr_write_pending
                and not p.pending_isr
            ):
                self._spawn(self._change_isr(p, tuple(p.isr) + (follower,), "expand"))
        else:
            self.maybe_advance_hw(p)

    def maybe_advance_hw(self, p: Partition) -> None:
        """The HW moves to the smallest log end of the maximal ISR (KIP-497: the committed ISR and
        a pending addition) - only while the *committed* ISR has min.insync.replicas members
        (KIP-966, Kafka's `isUnderMinIsr`): the eligible leader replicas, which left it when it
        fell below, then hold every record under the HW. A follower whose addition is not written
        is neither in the ISR nor eligible, so what only it and the leader hold stays above."""
        if p.role != LEADER:
            return
        if len(p.isr) < self.min_isr(p.topic):
            p.complete(False)
            return
        hw = min(p.counted(self.node_id))
        if hw >= 0 and p.plog.update_high_watermark(hw):
            self.partitions.notify(p.topic, p.partition)
        p.complete(len(p.isr) >= self.min_isr(p.topic))

    def _check_min_isr(self, p: Partition) -> None:
        if p.waiting and len(p.isr) < self.min_isr(p.topic):
            p.fail_waiting(E.not_enough_replicas_after_append.value)

    def check_isr_lag(self) -> None:
        """Shrink the ISR of every led partition with followers not caught up for too long."""
        now = time.monotonic()
        for p in list(self.replicas.values()):
            if p.role != LEADER or p.isr_write_pending:
                continue
            leo = p.plog.log_end_offset
            lagging = [
                b
                for b in p.isr
                if b != self.node_id
                and p.follower_leo.get(b, -1) < leo
                and now - p.caught_up_at.get(b, now) > self.lag_max_s
            ]
            if lagging:
                self._spawn(self._change_isr(p, tuple(b for b in p.isr if b not in lagging), "shrink"))

    async def _change_isr(self, p: Partition, isr: tuple[int, ...], why: str) -> None:
        """Propose a new ISR under the current leader epoch, by compare-and-swap on the state
        version (the partition epoch). An expansion counts for the HW from now on (KIP-497)."""
        base = p.state
        if base is None or p.role != LEADER or not self.lease_valid():
            return
        epoch = base.leader_epoch
        if why == "expand":
            p.pending_isr, p.pending_base = isr, base.version
        p.isr_write_pending = True
        new = make_state(
            base.leader,
            epoch,
            isr,
            self.cache.brokers,
            base.controller_epoch,
            base,
            self.min_isr(p.topic),
            self.cache.replicas(p.topic, p.partition),
            base.leader_broker_epoch,
        )
        key = self.keys.partition(p.topic, p.partition)
        value = new.encode()
        try:
            outcome, revision = await put_if(self.store, [Compare.mod(key, base.version)], key, value)
            while outcome == UNKNOWN and p.leads_at(epoch):  # read back until etcd tells
                await asyncio.sleep(0.5)
                outcome, revision = await read_back(self.store, key, value)
        except StoreUnavailable as e:  # never sent (etcd away): the ISR stays as it is
            log.warning("%s-%d: isr %s not written: %s", p.topic, p.partition, why, e)
            if p.pending_base == base.version:
                p.pending_isr, p.pending_base = (), -1
            return
        except Exception:
            log.exception("%s-%d: isr %s failed", p.topic, p.partition, why)
            return
        finally:
            p.isr_write_pending = False
        if outcome == COMMITTED:
            if why == "expand":
                self.isr_expands += 1
            else:
                self.isr_shrinks += 1
            log.info("%s-%d: isr %s: %s -> %s", p.topic, p.partition, why, list(base.isr), list(isr))
            # installed only while still leading at the epoch it was proposed under, and only if
            # no newer state came meanwhile (install() refuses an older version)
            if p.leads_at(epoch) and p.install(replace(new, version=revision)):
                self.maybe_advance_hw(p)
                self._check_min_isr(p)
            return
        if outcome == NOT_WRITTEN and revision == base.version and p.pending_base == base.version:
            p.pending_isr, p.pending_base = (), -1  # etcd still holds the state it was based on: not written
        if self._lost_logged.get((p.topic, p.partition)) != base.version:
            # another write won: the watch brings it (and with it the end of a pending addition);
            # said once per version, so that a leader stuck on a stale version shows it
            self._lost_logged[(p.topic, p.partition)] = base.version
            log.info(
                "%s-%d: isr %s to %s not written (%s; ours at version %d)",
                p.topic,
                p.partition,
                why,
                list(isr),
                outcome,
                base.version,
            )

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    # ---- controlled shutdown -----------------------------------------------------------------
    async def hand_over_all(self, timeout_s: float = 5.0) -> int:
        """Before this broker stops: every partition it leads stops taking appends, its followers
        catch up to its log end, and the first live in-sync follower (assignment order) is made
        leader at the next epoch (a compare-and-swap, as the leader's own ISR changes), this
        broker leaving the ISR. Partitions without such a follower stay (they go offline with the
        registration, as before). Returns how many were handed over."""
        led = [p for p in self.replicas.values() if p.role == LEADER and p.state is not None]
        for p in led:
            p.draining = True
        deadline = time.monotonic() + timeout_s
        moved = 0
        for p in led:
            for _attempt in range(5):  # a concurrent ISR change or election: retried on the newer state
                handed = await self._hand_over(p, deadline)
                if handed is not None:
                    moved += handed
                    break
                await asyncio.sleep(0.05)  # the watch brings the state that won
        return moved

    async def _hand_over(self, p: Partition, deadline: float) -> int | None:
        """1 when handed over, 0 when there is no successor (or etcd is away), None when the
        compare-and-swap lost to another write (to retry)."""
        st = p.state
        if st is None or p.role != LEADER:
            return 0
        live = self.cache.brokers
        # an in-sync follower registered with the directory it joined the ISR with: one that came
        # back without its disk is still listed until a controller looks, and holds nothing
        successors = [
            b
            for b in self.cache.replicas(p.topic, p.partition)
            if b != self.node_id and b in st.isr and intact(st, b, live)
        ]
        if not successors:
            return 0
        successor = successors[0]
        leo = p.plog.log_end_offset
        while p.follower_leo.get(successor, -1) < leo and time.monotonic() < deadline:
            await asyncio.sleep(0.02)  # its fetches are still served
        st = p.state
        if st is None or p.role != LEADER:
            return 0
        if successor not in st.isr or not intact(st, successor, self.cache.brokers):
            return None  # it left the ISR (or the cluster, or lost its disk) meanwhile: choose again
        new = make_state(
            successor,
            st.leader_epoch + 1,
            tuple(b for b in st.isr if b != self.node_id),
            live,
            st.controller_epoch,
            st,
            self.min_isr(p.topic),
            self.cache.replicas(p.topic, p.partition),
        )
        key = self.keys.partition(p.topic, p.partition)
        try:
            outcome, _rev = await put_if(self.store, [Compare.mod(key, st.version)], key, new.encode())
        except Exception as e:  # noqa: BLE001 - etcd away: the partition fails over at session expiry
            log.warning("%s-%d: leadership not handed over: %s", p.topic, p.partition, e)
            return 0
        if outcome == NOT_WRITTEN:
            return None
        # committed, or unknown: either way this broker stops leading it (it is stopping)
        p.role = OFFLINE
        p.fail_waiting()
        return 1

    # ---- questions ------------------------------------------------------------------------------
    def under_replicated(self) -> int:
        return sum(
            1
            for p in self.replicas.values()
            if p.role == LEADER and len(p.isr) < len(self.cache.replicas(p.topic, p.partition))
        )
