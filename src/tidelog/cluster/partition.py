"""One replicated partition as this broker holds it: its role, the partition state it follows
and, on the leader, Kafka's ISR bookkeeping and the writes waiting to be replicated (the acks=all
purgatory). Plain state and rules, no I/O: the `ReplicaManager` (replica.py) owns every
`Partition` and is the only code that changes one.

Fencing, which every acknowledgement of a replicated write goes through:
- An append is admitted under a `Lease`: the partition and the leader epoch it led at when the
  append was made (taken and used in the same step of the event loop, no await between). The
  write then waits with that lease, and is answered 0 only while this broker still leads at that
  very epoch and the high watermark has passed it. Every role change (leading at another epoch,
  following, offline, no longer a replica) fails every waiting write, and a wait begun later for
  an older epoch fails at once: no acknowledgement crosses a leader epoch, so none can name an
  offset a newer leader filled with other records.
- Such a write was appended, and may well be on the new leader: it is failed with
  REQUEST_TIMED_OUT (`UNKNOWN_OUTCOME`), which clients read as "possibly persisted", not with
  NOT_LEADER_OR_FOLLOWER, which means "not written" - librdkafka sends a write refused so again
  without counting a retry, and a producer with retries=0 wrote its records twice (issue 26,
  defect 9). NOT_LEADER_OR_FOLLOWER stays the answer of a write refused before its append.
- `install(state)` never goes back to an older version of the partition state: an etcd answer
  that comes after the watch brought a newer state changes nothing.
- The maximal ISR (KIP-497): a follower whose addition to the ISR was proposed counts for the
  high watermark from the proposal until a state newer than the one it was based on is
  installed, whatever etcd answered (or failed to answer), so the HW never passes a replica that
  etcd may list in sync.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from .model import PartitionState

if TYPE_CHECKING:
    from ..log.log import PartitionLog

LEADER, FOLLOWER, OFFLINE = "leader", "follower", "offline"
NOT_LEADER = E.not_leader_or_follower.value  # refused before the append
UNKNOWN_OUTCOME = E.request_timed_out.value  # appended; the leadership moved before it was replicated


class WaitGroup:
    """The appends of one request waiting together (Kafka's `DelayedProduce`): one code per
    append, one future resolved once every parked append is answered. One future and one timer
    per request, where a task, a future and a timer per partition cost more than the append
    itself for requests of many small batches."""

    __slots__ = ("codes", "future", "remaining")

    def __init__(self, n: int) -> None:
        self.codes = [0] * n
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.remaining = 0


@dataclass(slots=True)
class Waiting:
    """An appended write waiting for the high watermark to pass `offset`, under `epoch`: append
    `index` of `group`."""

    epoch: int
    offset: int
    group: WaitGroup
    index: int
    answered: bool = False

    def answer(self, code: int) -> None:
        """Set this append's code (once); the group's future resolves with its last one."""
        if self.answered:
            return
        self.answered = True
        g = self.group
        g.codes[self.index] = code
        g.remaining -= 1
        if g.remaining == 0 and not g.future.done():
            g.future.set_result(None)


@dataclass
class Partition:
    topic: str
    partition: int
    plog: PartitionLog
    role: str = OFFLINE
    state: PartitionState | None = None
    follower_leo: dict[int, int] = field(default_factory=dict)  # the leader's view of each follower
    caught_up_at: dict[int, float] = field(default_factory=dict)
    isr_write_pending: bool = False
    pending_isr: tuple[int, ...] = ()  # the maximal ISR while an addition is proposed
    pending_base: int = -1  # the state version the proposal was based on
    waiting: list[Waiting] = field(default_factory=list)
    epoch_start: int = 0  # the log end offset when this broker started leading at this epoch
    draining: bool = False  # controlled shutdown: no more appends, followers still served

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch if self.state is not None else -1

    @property
    def isr(self) -> tuple[int, ...]:
        return self.state.isr if self.state is not None else ()

    @property
    def replicated(self) -> bool:
        """Always: a Partition is this broker's replica of a replicated partition."""
        return True

    def latest_available(self) -> bool:
        """KIP-207: the high watermark has reached the log end this broker started leading
        at; until then a new leader's latest offset is not known (OFFSET_NOT_AVAILABLE)."""
        return self.plog.high_watermark >= self.epoch_start

    def leads_at(self, epoch: int) -> bool:
        return self.role == LEADER and self.state is not None and self.state.leader_epoch == epoch

    def install(self, state: PartitionState) -> bool:
        """Follow `state` unless it is older than the one held; True when installed."""
        if self.state is not None and 0 <= state.version < self.state.version:
            return False
        self.state = state
        if self.pending_isr and state.version > self.pending_base:
            self.pending_isr, self.pending_base = (), -1
        return True

    def fail_waiting(self, code: int = UNKNOWN_OUTCOME) -> None:
        for w in self.waiting:
            w.answer(code)
        self.waiting.clear()

    def counted(self, node_id: int) -> list[int]:
        """The log end offsets the high watermark is the minimum of: this leader's and those of
        the followers in the maximal ISR."""
        leos = [self.plog.log_end_offset]
        for b in set(self.isr) | set(self.pending_isr):
            if b != node_id:
                leos.append(self.follower_leo.get(b, -1))
        return leos

    def complete(self, enough_replicas: bool) -> None:
        """Answer the writes the high watermark passed (NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
        ISR is below min.insync.replicas: then the HW moved because the ISR shrank, not because
        enough replicas have the write), and fail those of any other epoch."""
        if not self.waiting:
            return
        hw = self.plog.high_watermark
        code = 0 if enough_replicas else E.not_enough_replicas_after_append.value
        keep = []
        for w in self.waiting:
            if w.answered:
                continue
            if not self.leads_at(w.epoch):
                w.answer(UNKNOWN_OUTCOME)
            elif w.offset < hw:
                w.answer(code)
            else:
                keep.append(w)
        self.waiting = keep


@dataclass(frozen=True, slots=True)
class Lease:
    """The right to count an append made now: the partition, led at `epoch` when it was made."""

    partition: Partition
    epoch: int
