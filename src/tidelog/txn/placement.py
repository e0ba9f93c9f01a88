"""Which transactional ids this broker coordinates, and loading them (the base of
`coordinator.TxnCoordinator`).

A single node coordinates every id once `load` has replayed `__transaction_state`. In cluster
mode (`owned` is not None) it coordinates the ids of the `__transaction_state` partitions it
leads: `begin_load` when it comes to lead one (its ids answer COORDINATOR_LOAD_IN_PROGRESS),
`load_partition` once the partition's log is all committed, `unload_partition` when it stops
leading it (its ids answer NOT_COORDINATOR). Every id is read back from its last record, the
transaction version 2 fields included (the client's version, the previous and next producer id).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ..wire.errors import COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NONE, NOT_COORDINATOR
from .metadata import TxnMetadata
from .records import TxnLogValue, partition_for
from .state import PREPARING
from .state import TxnState as S

log = logging.getLogger("tidelog.txn")


class Placement:
    def __init__(self, num_partitions: int) -> None:
        self.txns: dict[str, TxnMetadata] = {}
        self.by_pid: dict[int, TxnMetadata] = {}
        self.loaded = False
        self.num_partitions = num_partitions  # of __transaction_state (set_num_partitions)
        # cluster mode: the __transaction_state partitions led (and loaded) here -> leader epoch
        self.owned: dict[int, int] | None = None
        # cluster mode: partitions led here whose log is not all committed yet (not loaded)
        self.loading: set[int] = set()

    def start_clustered(self) -> None:
        """Cluster mode: coordinate nothing until `load_partition` (this broker comes to lead a
        partition of `__transaction_state`)."""
        self.owned = {}
        self.loaded = True

    def set_num_partitions(self, n: int) -> None:
        """`__transaction_state` has `n` partitions: an id's partition is its hash modulo `n`."""
        self.num_partitions = n

    def close(self) -> None:
        """The broker stops: every id answers COORDINATOR_NOT_AVAILABLE from now on."""
        self.loaded = False

    def status(self, txn_id: str) -> int:
        """NONE when this broker coordinates `txn_id` now, else the error a client retries on."""
        if not self.loaded:
            return COORDINATOR_NOT_AVAILABLE
        if self.owned is None:
            return NONE
        partition = self.partition_of(txn_id)
        if partition in self.owned:
            return NONE
        return COORDINATOR_LOAD_IN_PROGRESS if partition in self.loading else NOT_COORDINATOR

    def partition_of(self, txn_id: str) -> int:
        """The id's partition of `__transaction_state`."""
        return partition_for(txn_id, self.num_partitions)

    def coordinator_epoch(self, txn_id: str) -> int:
        """The leader epoch of the id's `__transaction_state` partition (0 on a single node)."""
        if self.owned is None:
            return 0
        return self.owned.get(self.partition_of(txn_id), 0)

    def begin_load(self, partition: int) -> None:
        """Cluster mode: this broker leads `partition` but is still waiting for its log to be
        committed; its ids get COORDINATOR_LOAD_IN_PROGRESS until `load_partition`."""
        self.loading.add(partition)

    def load_partition(
        self, partition: int, leader_epoch: int, entries: Iterable[tuple[str, TxnLogValue | None]]
    ) -> None:
        assert self.owned is not None
        self.loading.discard(partition)
        before = len(self.txns)
        self.load(entries)
        self.owned[partition] = leader_epoch
        log.info(
            "__transaction_state-%d: coordinating its transactional ids (epoch %d): %d loaded",
            partition,
            leader_epoch,
            len(self.txns) - before,
        )

    def unload_partition(self, partition: int) -> None:
        assert self.owned is not None
        self.loading.discard(partition)
        self.owned.pop(partition, None)
        for txn_id in [t for t in self.txns if self.partition_of(t) == partition]:
            meta = self.txns.pop(txn_id)
            if self.by_pid.get(meta.producer_id) is meta:
                del self.by_pid[meta.producer_id]
        log.info("__transaction_state-%d: no longer coordinating its transactional ids", partition)

    # ---- loading -------------------------------------------------------------------------------
    def load(self, entries: Iterable[tuple[str, TxnLogValue | None]]) -> None:
        """Apply `__transaction_state` records in log order (the last one per id wins)."""
        latest: dict[str, TxnLogValue | None] = {}
        for txn_id, value in entries:
            latest[txn_id] = value
        for txn_id, v in latest.items():
            if v is None or v.state == S.DEAD:
                continue
            meta = TxnMetadata(
                txn_id,
                v.producer_id,
                v.producer_epoch,
                v.timeout_ms,
                v.state,
                {(t, p) for t, ps in v.partitions.items() for p in ps},
                v.start_ms,
                v.last_update_ms,
                prev_producer_id=v.prev_producer_id,
                next_producer_id=v.next_producer_id,
                client_txn_version=v.client_txn_version,
            )
            self.txns[txn_id] = meta
            self.by_pid[meta.producer_id] = meta
        self.loaded = True
        log.info(
            "transaction coordinator loaded %d transactional ids (%d ongoing, %d to complete)",
            len(self.txns),
            sum(1 for m in self.txns.values() if m.state == S.ONGOING),
            sum(1 for m in self.txns.values() if m.state in PREPARING),
        )
