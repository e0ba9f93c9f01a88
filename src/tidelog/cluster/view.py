"""What the request handlers ask about the cluster, and the single node's answers.

`SingleNode` is the default: this broker is the only one, leads every partition at epoch 0, is
the controller and hosts the coordinators (FindCoordinator answers it). `ClusterNode` (node.py)
answers the same questions from etcd's state when `etcd.connect` is set.

The partition handlers (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords,
DescribeProducers, WriteTxnMarkers) ask both the same way, with no branch on the mode:
- `leader_check`: may this broker serve the partition as its leader (at the epoch the client
  names)? A single node always may, at epoch 0 (`LOCAL`).
- `admit_append` / `wait_replicated`: an append admitted under a `Lease` (cluster/partition.py)
  and, for acks=all, answered once replicated under that lease's epoch. A single node admits
  every append without a lease: nothing to wait for.
- `replicated`: the partition is one of the cluster's, held by its brokers; a partition a
  single node does not have is unknown, never "on another broker".
- `follower_fetched`: a follower's read position (a single node has no followers).
- `needs_verification` / `verify`: KIP-890's check of a first transactional batch with a
  coordinator on another broker (a single node's coordinator is local: never needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .partition import Lease


@dataclass(frozen=True, slots=True)
class PartitionView:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


class Leader(Protocol):
    """This broker's leadership of one partition, as the partition handlers read it."""

    @property
    def leader_epoch(self) -> int: ...
    @property
    def draining(self) -> bool: ...  # controlled shutdown: reads served, no more appends
    def latest_available(self) -> bool: ...  # KIP-207: the HW has reached this epoch's start


@dataclass(frozen=True, slots=True)
class LocalLeader:
    """A single node's leadership of every partition: epoch 0, its HW always its own."""

    leader_epoch: int = 0
    draining: bool = False

    def latest_available(self) -> bool:
        return True


LOCAL = LocalLeader()


class ClusterView(Protocol):
    clustered: bool
    node_id: int
    shared_security: Any  # cluster: ACL and credential changes go through etcd (security_state.py)

    async def start(self) -> None: ...
    async def controlled_shutdown(self) -> None: ...
    async def stop(self) -> None: ...
    def controller_id(self) -> int: ...
    def brokers(self, listener: str) -> list[dict[str, Any]]: ...
    def partition(self, topic: str, partition: int) -> PartitionView: ...
    def under_replicated(self) -> int: ...

    # ---- the partition handlers' questions (see the module docstring) ------------------------
    def replicated(self, topic: str, partition: int) -> bool: ...
    def leader_check(self, topic: str, partition: int, current_epoch: int) -> tuple[int, Leader | None]: ...
    def admit_append(self, topic: str, partition: int, acks: int) -> tuple[int, Lease | None]: ...
    async def wait_replicated(self, lease: Lease, last_offset: int, timeout_s: float) -> int: ...
    def follower_fetched(self, leader: Leader, follower: int, fetch_offset: int) -> None: ...
    def needs_verification(self, topic: str, partition: int, records: bytes | memoryview) -> tuple[int, int] | None: ...
    async def verify(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]: ...


class SingleNode:
    clustered = False
    shared_security = None  # ACLs and credentials are this broker's files

    def __init__(self, node_id: int, endpoint: Any) -> None:
        self.node_id = node_id
        self._endpoint = endpoint  # (listener name) -> {"node_id", "host", "port", "rack"}

    async def start(self) -> None:
        """Nothing to join."""

    async def controlled_shutdown(self) -> None:
        """No leadership to hand over."""

    async def stop(self) -> None:
        """Nothing to leave."""

    def controller_id(self) -> int:
        return self.node_id

    def brokers(self, listener: str) -> list[dict[str, Any]]:
        return [self._endpoint(listener)]

    def partition(self, topic: str, partition: int) -> PartitionView:
        n = self.node_id
        return PartitionView(n, 0, (n,), (n,), ())

    def under_replicated(self) -> int:
        return 0

    def replicated(self, topic: str, partition: int) -> bool:
        return False

    def leader_check(self, topic: str, partition: int, current_epoch: int) -> tuple[int, Leader | None]:
        return 0, LOCAL

    def admit_append(self, topic: str, partition: int, acks: int) -> tuple[int, Lease | None]:
        return 0, None

    async def wait_replicated(self, lease: Lease, last_offset: int, timeout_s: float) -> int:
        """Never called: a single node hands out no lease."""
        return 0

    def follower_fetched(self, leader: Leader, follower: int, fetch_offset: int) -> None:
        """No followers."""

    def needs_verification(self, topic: str, partition: int, records: bytes | memoryview) -> tuple[int, int] | None:
        return None

    async def verify(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """Never called (`needs_verification` is always None): the coordinator is local."""
        return {}
