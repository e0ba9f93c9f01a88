"""The controller: one broker at a time, elected through etcd, keeps partition leadership right.

Election: whoever creates the `controller` key (bound to its lease) is the controller; its epoch
is the key's create_revision. Every write it makes is a transaction comparing that key's
create_revision with its own epoch and the partition key's mod_revision with the one it read, so
a deposed controller can never overwrite newer state. When the key vanishes (its lease ended) the
others race to create it again.

Duties, recomputed from the whole state after every change (`reconcile`):
- a new partition (assignment without state) gets the first live replica as leader and the live
  replicas as ISR, epoch 0;
- a partition whose leader is gone gets the first replica in assignment order that is live and
  in the ISR, with leader_epoch + 1; with none, it goes offline (leader -1, ISR kept, so the last
  in-sync replica can lead again when it returns) unless `unclean.leader.election.enable`;
- an offline partition whose in-sync replica returns is led by it again (epoch + 1);
- a follower that is gone leaves the ISR of the partitions it followed (no epoch change), and a
  replica no longer assigned (reassignment) leaves the ISR, a leader no longer assigned its
  leadership;
- a reassignment (KIP-455) completes once every target replica is in the ISR: the partition's
  replicas become the target, in the same compare-and-swap as the state that follows from it;
- with `auto.leader.rebalance.enable`, every `leader.imbalance.check.interval.seconds` the
  partitions of imbalanced brokers go back to their preferred leader (elections.py).
Brokers learn the result from their own watch; there are no controller-to-broker requests.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping

from .elections import Elections, imbalanced
from .metadata import MetadataCache
from .model import NO_LEADER, BrokerInfo, Keys, PartitionState, TopicAssignment, intact, leader_alive, make_state
from .store import Compare, LeaseExpired, Op, OutcomeUnknown, Store, StoreUnavailable

log = logging.getLogger("tidelog.cluster")


def decide(
    assignment: TopicAssignment,
    partition: int,
    state: PartitionState | None,
    live: Mapping[int, BrokerInfo],
    unclean: bool,
    controller_epoch: int = -1,
    min_isr: int = 1,
) -> PartitionState | None:
    """The state the partition should have, or None when it is right as it is.

    A leader counts as alive only in the incarnation it was chosen in (`leader_alive`): a leader
    that restarted, even within its session, is replaced at the next leader epoch (it may be
    chosen again). An ISR member counts only while registered with the data directory it joined
    with (`intact`): one that came back without its disk leaves the ISR, and is never elected.
    With no ISR member to lead, an eligible leader replica (KIP-966) may: it holds every record
    below the high watermark."""
    replicas = assignment.replicas[partition]
    if state is None:
        alive = tuple(b for b in replicas if b in live)
        if not alive:
            return None  # created while its brokers are away: waits for one
        return make_state(alive[0], 0, alive, live, controller_epoch)

    def next_state(leader: int, epoch: int, isr: tuple[int, ...]) -> PartitionState:
        return make_state(leader, epoch, isr, live, controller_epoch, state, min_isr, replicas)

    # a removed replica, a dead one and one that lost its disk leave the ISR
    isr_ok = tuple(b for b in state.isr if b in replicas and intact(state, b, live))
    # a leader that lost its disk since it was recorded in the ISR leads from nothing: replaced
    lost_disk = state.leader in state.isr and not intact(state, state.leader, live)
    if state.leader == NO_LEADER or not leader_alive(state, live) or state.leader not in replicas or lost_disk:
        candidates = [b for b in replicas if b in isr_ok]
        if candidates:
            return next_state(candidates[0], state.leader_epoch + 1, isr_ok)
        eligible = [b for b in replicas if b in state.eligible and intact(state, b, live)]
        if eligible:
            log.info(
                "%s-%d: no in-sync replica can lead; eligible leader replica %d does",
                assignment.name,
                partition,
                eligible[0],
            )
            return next_state(eligible[0], state.leader_epoch + 1, (eligible[0],))
        if unclean:
            up = [b for b in replicas if b in live]
            if up:
                return make_state(up[0], state.leader_epoch + 1, (up[0],), live, controller_epoch)
        if state.leader == NO_LEADER:
            return None
        return PartitionState(
            NO_LEADER, state.leader_epoch + 1, state.isr, controller_epoch, -1, -1, state.isr_storage, state.elr
        )
    if isr_ok != state.isr:
        return make_state(
            state.leader,
            state.leader_epoch,
            isr_ok,
            live,
            controller_epoch,
            state,
            min_isr,
            replicas,
            state.leader_broker_epoch,
        )
    return None


class Controller:
    def __init__(
        self,
        store: Store,
        keys: Keys,
        cache: MetadataCache,
        node_id: int,
        lease: Callable[[], int],
        unclean: Callable[[str], bool],
        rebalance: tuple[bool, float, int] = (False, 300.0, 10),
        min_isr: Callable[[str], int] = lambda topic: 1,
    ) -> None:
        """`rebalance`: (auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds,
        leader.imbalance.per.broker.percentage); `min_isr(topic)`: its min.insync.replicas."""
        self.store = store
        self.rebalance_enabled, self.rebalance_every_s, self.imbalance_percentage = rebalance
        self.min_isr = min_isr
        self.elections = Elections(store, keys, cache, min_isr)
        self._next_rebalance = 0.0
        self.keys = keys
        self.cache = cache
        self.node_id = node_id
        self._lease = lease
        self._unclean = unclean
        self.epoch = -1  # create_revision of our controller key while we are the controller
        self._wake = asyncio.Event()
        cache.listeners.append(self._changed)

    @property
    def active(self) -> bool:
        return self.epoch > 0 and self.cache.controller_epoch == self.epoch

    def _changed(self, kind: str, detail: object) -> None:
        self._wake.set()

    async def run(self) -> None:
        while True:
            self._wake.clear()
            try:
                if self.cache.controller_id == -1 or (self.cache.controller_id == self.node_id and not self.active):
                    await self._try_elect()
                if self.active:
                    await self.reconcile()
                    await self._maybe_rebalance()
            except asyncio.CancelledError:
                raise
            except (StoreUnavailable, LeaseExpired) as e:
                log.warning("controller: etcd unreachable, or our lease ended (%s); no elections until it returns", e)
                await asyncio.sleep(0.5)
                self._wake.set()
            except Exception:
                log.exception("controller pass failed")
                await asyncio.sleep(0.5)
                self._wake.set()
            try:
                await asyncio.wait_for(self._wake.wait(), min(5.0, self.rebalance_every_s))
            except TimeoutError:
                pass

    async def _maybe_rebalance(self) -> int:
        """Preferred leaders back, for imbalanced brokers, once per check interval."""
        loop = asyncio.get_running_loop()
        if not self.rebalance_enabled:
            return 0
        if self._next_rebalance == 0.0:  # the first check one interval after becoming controller
            self._next_rebalance = loop.time() + self.rebalance_every_s
        if loop.time() < self._next_rebalance:
            return 0
        self._next_rebalance = loop.time() + self.rebalance_every_s
        moved = 0
        for topic, p in imbalanced(self.cache.topics, self.cache.states, self.cache.live(), self.imbalance_percentage):
            if not self.active:
                break
            code, _ = await self.elections.elect(topic, p, compares=[Compare.create(self.keys.controller, self.epoch)])
            moved += code == 0
        if moved:
            log.info("leader rebalance: %d partitions back on their preferred leader", moved)
        return moved

    async def _try_elect(self) -> None:
        """Create the controller key bound to our lease; whatever the answer (or none), read the
        key back: we are the controller when it names us with our lease."""
        lease = self._lease()
        if not lease:
            return
        key = self.keys.controller
        try:
            await self.store.txn(
                [Compare.create(key, 0)], [Op.put(key, json.dumps({"broker": self.node_id}).encode(), lease)]
            )
        except OutcomeUnknown as e:
            log.info("controller election: %s; reading it back", e)
        kv = await self.store.get(key)
        if kv is not None and kv.lease == lease and json.loads(kv.value)["broker"] == self.node_id:
            if self.epoch != kv.create_revision:
                self.epoch = kv.create_revision
                log.info("node %d is the controller (epoch %d)", self.node_id, self.epoch)

    async def _complete_reassignments(self) -> int:
        """Partitions whose target replicas are all in sync get the target as their replicas."""
        done = 0
        live = self.cache.brokers
        for name, a in list(self.cache.topics.items()):
            for p in sorted(set(a.adding) | set(a.removing)):
                state = self.cache.state(name, p)
                target = a.target(p)
                if state is None or state.leader < 0 or not all(b in state.isr for b in target):
                    continue
                new_a = a.completed(p)
                want = decide(new_a, p, state, live, False, self.epoch, self.min_isr(name))
                ops = [Op.put(self.keys.topic(name), new_a.encode())]
                pkey = self.keys.partition(name, p)
                if want is not None:
                    ops.append(Op.put(pkey, want.encode()))
                res = await self.store.txn(
                    [
                        Compare.create(self.keys.controller, self.epoch),
                        Compare.mod(self.keys.topic(name), a.version),
                        Compare.mod(pkey, state.version),
                    ],
                    ops,
                )
                if not res.succeeded:
                    break  # the topic or the partition changed: the next pass sees it
                done += 1
                log.info(
                    "%s-%d: reassignment complete: replicas %s -> %s%s",
                    name,
                    p,
                    list(a.replicas[p]),
                    list(target),
                    "" if want is None else f", leader {want.leader} (epoch {want.leader_epoch}), isr {list(want.isr)}",
                )
                break  # this topic's version changed: its other partitions at the next pass
        return done

    async def reconcile(self) -> int:
        """Write every partition state that should change; returns how many were written."""
        cache = self.cache
        live = cache.brokers
        written = await self._complete_reassignments()
        for name, assignment in list(cache.topics.items()):
            unclean = self._unclean(name)
            for p in range(assignment.partitions):
                state = cache.state(name, p)
                new = decide(assignment, p, state, live, unclean, self.epoch, self.min_isr(name))
                if new is None:
                    continue
                leader, epoch, isr = new.leader, new.leader_epoch, new.isr
                key = self.keys.partition(name, p)
                compares = [Compare.create(self.keys.controller, self.epoch)]
                compares.append(Compare.create(key, 0) if state is None else Compare.mod(key, state.version))
                res = await self.store.txn(compares, [Op.put(key, new.encode())])
                if not res.succeeded:
                    if cache.controller_epoch != self.epoch:
                        return written  # deposed
                    continue  # someone (the leader, changing its ISR) was first: next pass sees it
                written += 1
                if state is None or state.leader != leader or state.leader_epoch != epoch:
                    log.info(
                        "%s-%d: leader %s -> %d (epoch %d), isr %s",
                        name,
                        p,
                        "none" if state is None else state.leader,
                        leader,
                        epoch,
                        list(isr),
                    )
                else:
                    log.info(
                        "%s-%d: isr %s -> %s (broker gone, or back without its disk)",
                        name,
                        p,
                        list(state.isr),
                        list(isr),
                    )
        return written
