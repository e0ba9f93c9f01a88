"""Leader elections asked for by an operator (ElectLeaders) or by the controller's leader
rebalance (`auto.leader.rebalance.enable`), as Kafka does them:

- preferred: the first replica in assignment order leads again when it is live and in the ISR,
  at the next leader epoch (ISR unchanged). The previous leader follows it and truncates anything
  past the new leader's log end that was never committed (acks=all writes are all on every ISR
  member, so none is lost);
- unclean (a partition without a live leader): the first live in-sync replica, else the first
  live replica with an ISR of itself alone (what `unclean.leader.election.enable` allows).

Each is a compare-and-swap of the partition's state in etcd on the revision read (as every other
partition-state write); a lost race is retried on the newer state.

`imbalanced(...)` is Kafka's leader-imbalance rule: a broker is imbalanced when more than
`leader.imbalance.per.broker.percentage` of the partitions it is preferred for are led by others.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from .model import BrokerInfo, PartitionState, TopicAssignment, intact, leader_alive, make_state
from .store import Compare, Op, OutcomeUnknown, Store

if TYPE_CHECKING:
    from .metadata import MetadataCache
    from .model import Keys

log = logging.getLogger("tidelog.cluster")


def choose(
    replicas: tuple[int, ...],
    state: PartitionState | None,
    live: Mapping[int, BrokerInfo],
    unclean: bool,
    min_isr: int = 1,
) -> tuple[int, str | None, PartitionState | None]:
    """(error code, message, the new state) of an election on this partition. A replica counts
    as in sync only with the data directory it joined the ISR with (`intact`), a leader as alive
    only in the incarnation it was chosen in (`leader_alive`)."""
    if state is None:
        return E.leader_not_available.value, "The partition has no state yet.", None
    if not unclean:
        preferred = replicas[0]
        if state.leader == preferred and leader_alive(state, live):
            return E.election_not_needed.value, "Leader election not needed for topic partition.", None
        if preferred not in state.isr or not intact(state, preferred, live):
            return (
                E.preferred_leader_not_available.value,
                f"Failed to elect leader: preferred replica {preferred} is not live and in sync.",
                None,
            )
        return (
            0,
            None,
            make_state(
                preferred, state.leader_epoch + 1, state.isr, live, state.controller_epoch, state, min_isr, replicas
            ),
        )
    if state.leader >= 0 and leader_alive(state, live):
        return E.election_not_needed.value, "Leader election not needed for topic partition.", None
    in_sync = [b for b in replicas if b in state.isr and intact(state, b, live)]
    if in_sync:
        isr = tuple(b for b in state.isr if intact(state, b, live))
        return (
            0,
            None,
            make_state(in_sync[0], state.leader_epoch + 1, isr, live, state.controller_epoch, state, min_isr, replicas),
        )
    eligible = [b for b in replicas if b in state.eligible and intact(state, b, live)]
    if eligible:
        return (
            0,
            None,
            make_state(
                eligible[0],
                state.leader_epoch + 1,
                (eligible[0],),
                live,
                state.controller_epoch,
                state,
                min_isr,
                replicas,
            ),
        )
    up = [b for b in replicas if b in live]
    if not up:
        return E.eligible_leaders_not_available.value, "No live replica.", None
    return 0, None, make_state(up[0], state.leader_epoch + 1, (up[0],), live, state.controller_epoch)


def imbalanced(
    assignments: Mapping[str, TopicAssignment],
    states: dict[tuple[str, int], PartitionState],
    live: set[int],
    percentage: int,
) -> list[tuple[str, int]]:
    """The partitions to move back to their preferred leader: those of imbalanced brokers whose
    preferred replica is live and in sync but not leading."""
    preferred_of: dict[int, list[tuple[str, int]]] = {}
    for name, a in assignments.items():
        for p in range(a.partitions):
            if a.replicas[p]:
                preferred_of.setdefault(a.replicas[p][0], []).append((name, p))
    out = []
    for broker, tps in preferred_of.items():
        if broker not in live:
            continue
        movable = [
            (t, p)
            for t, p in tps
            if (st := states.get((t, p))) is not None and st.leader != broker and broker in st.isr
        ]
        if movable and len(movable) * 100 > percentage * len(tps):
            out.extend(movable)
    return sorted(out)


class Elections:
    def __init__(
        self, store: Store, keys: Keys, cache: MetadataCache, min_isr: Callable[[str], int] = lambda topic: 1
    ) -> None:
        self.store = store
        self.keys = keys
        self.cache = cache
        self.min_isr = min_isr

    async def elect(
        self,
        topic: str,
        partition: int,
        unclean: bool = False,
        timeout_s: float = 30.0,
        compares: list[Compare] | None = None,
    ) -> tuple[int, str | None]:
        a = self.cache.topics.get(topic)
        if a is None or not 0 <= partition < a.partitions:
            return E.unknown_topic_or_partition.value, "The partition does not exist."
        key = self.keys.partition(topic, partition)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            if compares is None:
                # An operator's election is decided on etcd's present state, not on this broker's
                # copy, which may lag (a broker just restarted still saw a dead leader as live and
                # leading, and answered ELECTION_NOT_NEEDED).
                state, live = await self._read(key)
            else:  # the controller's pass: a stale copy only loses the compare-and-swap
                state, live = self.cache.state(topic, partition), dict(self.cache.brokers)
            code, msg, new = choose(a.replicas[partition], state, live, unclean, self.min_isr(topic))
            if code or new is None or state is None:
                return code, msg
            try:
                res = await self.store.txn(
                    [*(compares or []), Compare.mod(key, state.version)], [Op.put(key, new.encode())]
                )
                succeeded, revision = res.succeeded, res.revision
            except OutcomeUnknown:  # read back: ours is there, or it was not written
                kv = await self.store.get(key)
                succeeded = kv is not None and kv.value == new.encode()
                revision = kv.mod_revision if kv is not None else 0
            if succeeded:
                log.info(
                    "%s-%d: %s election: leader %d -> %d (epoch %d)",
                    topic,
                    partition,
                    "unclean" if unclean else "preferred",
                    state.leader,
                    new.leader,
                    new.leader_epoch,
                )
                await self.cache.caught_up(revision, max(deadline - loop.time(), 0.0))
                return 0, None
            if compares or loop.time() >= deadline:  # the controller's pass: its next pass retries
                return E.request_timed_out.value, "The partition state kept changing."
            await asyncio.sleep(0.05)  # another writer was first: try on the newer state

    async def _read(self, key: str) -> tuple[PartitionState | None, dict[int, BrokerInfo]]:
        """The partition's state and the live brokers, as etcd has them now."""
        kv = await self.store.get(key)
        regs, _rev = await self.store.get_prefix(self.keys.brokers)
        live = {
            b: BrokerInfo.decode(r.value, r.create_revision)
            for r in regs
            if (b := self.keys.parse_broker_key(r.key)) is not None
        }
        return (PartitionState.decode(kv.value, kv.mod_revision) if kv is not None else None), live
