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
  coordinator on another broker, or (`add`, transaction version 2) its partition's addition to
  the transaction there (a single node's coordinator is local: never needed).

The controller's and the coordinators' questions too (ElectLeaders, the reassignment APIs,
FindCoordinator): a single node's partitions have one replica, itself, so no election is ever
needed and the only reassignment it accepts is to itself; it coordinates every key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode as E

from .partition import Lease

if TYPE_CHECKING:
    from ..core.topics import TopicRegistry
    from ..wire.responses import MetadataResponseBroker
    from .security_state import SharedSecurity

Result = tuple[int, str | None]
# topic -> partition -> (replicas, adding, removing) of the reassignments in progress
Reassignments = dict[str, dict[int, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]]
NO_SUCH_PARTITION: Result = (E.unknown_topic_or_partition.value, "The partition does not exist.")


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
    @property
    def replicated(self) -> bool: ...  # followers fetch it (a replica's fetch reads to the log end)


@dataclass(frozen=True, slots=True)
class LocalLeader:
    """A single node's leadership of every partition: epoch 0, its HW always its own."""

    leader_epoch: int = 0
    draining: bool = False
    replicated: bool = False

    def latest_available(self) -> bool:
        return True


LOCAL = LocalLeader()


@dataclass(frozen=True, slots=True)
class ReplicationStats:
    """Kafka's replica manager gauges, for the metrics endpoint (cluster mode only)."""

    under_replicated: int
    offline: int | None  # partitions without a live leader; counted by the active controller only
    isr_shrinks: int
    isr_expands: int
    follower_lag: list[tuple[str, int, int, int]]  # (topic, partition, follower, leader LEO - follower's)


class ClusterView(Protocol):
    clustered: bool  # for the composition root's start and stop (server/broker.py) only
    node_id: int

    @property
    def shared_security(self) -> SharedSecurity | None: ...  # a cluster's ACLs and credentials: through etcd

    async def start(self) -> None: ...
    async def controlled_shutdown(self) -> None: ...
    async def stop(self) -> None: ...
    def controller_id(self) -> int: ...
    def brokers(self, listener: str) -> list[MetadataResponseBroker]: ...
    def partition(self, topic: str, partition: int) -> PartitionView: ...
    def under_replicated(self) -> int: ...
    def replication_stats(self) -> ReplicationStats | None: ...

    # ---- the partition handlers' questions (see the module docstring) ------------------------
    def replicated(self, topic: str, partition: int) -> bool: ...
    def leader_check(self, topic: str, partition: int, current_epoch: int) -> tuple[int, Leader | None]: ...
    def admit_append(self, topic: str, partition: int, acks: int) -> tuple[int, Lease | None]: ...
    async def wait_replicated(self, lease: Lease, last_offset: int, timeout_s: float) -> int: ...
    async def wait_all_replicated(self, waits: list[tuple[Lease, int]], timeout_s: float) -> list[int]: ...
    def follower_fetched(self, leader: Leader, follower: int, fetch_offset: int) -> None: ...
    def needs_verification(self, topic: str, partition: int, records: bytes | memoryview) -> tuple[int, int] | None: ...
    async def verify(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]], add: bool = False
    ) -> dict[tuple[str, int], int]: ...

    # ---- the controller's and the coordinators' questions ---------------------------------------
    async def elect(self, topic: str, partition: int, unclean: bool, timeout_s: float) -> Result: ...
    def reassignments(self) -> Reassignments: ...
    async def reassign(
        self, topic: str, partition: int, target: tuple[int, ...] | None, allow_rf_change: bool
    ) -> Result: ...
    def coordinators_topic_exists(self, topic: str) -> bool: ...
    async def ensure_coordinators_topic(self, topic: str) -> int: ...
    def coordinator(self, topic: str, partition_of: Callable[[int], int]) -> int: ...


class SingleNode:
    clustered = False
    shared_security: SharedSecurity | None = None  # ACLs and credentials are this broker's files

    def __init__(
        self, node_id: int, endpoint: Callable[[str], MetadataResponseBroker], registry: TopicRegistry
    ) -> None:
        self.node_id = node_id
        self._endpoint = endpoint  # (listener name) -> {"node_id", "host", "port", "rack"}
        self._registry = registry

    async def start(self) -> None:
        """Nothing to join."""

    async def controlled_shutdown(self) -> None:
        """No leadership to hand over."""

    async def stop(self) -> None:
        """Nothing to leave."""

    def controller_id(self) -> int:
        return self.node_id

    def brokers(self, listener: str) -> list[MetadataResponseBroker]:
        return [self._endpoint(listener)]

    def partition(self, topic: str, partition: int) -> PartitionView:
        n = self.node_id
        return PartitionView(n, 0, (n,), (n,), ())

    def under_replicated(self) -> int:
        return 0

    def replication_stats(self) -> ReplicationStats | None:
        """Nothing is replicated."""
        return None

    def replicated(self, topic: str, partition: int) -> bool:
        return False

    def leader_check(self, topic: str, partition: int, current_epoch: int) -> tuple[int, Leader | None]:
        return 0, LOCAL

    def admit_append(self, topic: str, partition: int, acks: int) -> tuple[int, Lease | None]:
        return 0, None

    async def wait_replicated(self, lease: Lease, last_offset: int, timeout_s: float) -> int:
        """Never called: a single node hands out no lease."""
        return 0

    async def wait_all_replicated(self, waits: list[tuple[Lease, int]], timeout_s: float) -> list[int]:
        """Never called: a single node hands out no lease."""
        return [0] * len(waits)

    def follower_fetched(self, leader: Leader, follower: int, fetch_offset: int) -> None:
        """No followers."""

    def needs_verification(self, topic: str, partition: int, records: bytes | memoryview) -> tuple[int, int] | None:
        return None

    async def verify(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]], add: bool = False
    ) -> dict[tuple[str, int], int]:
        """Never called (`needs_verification` is always None, the coordinator is local)."""
        return {}

    def _exists(self, topic: str, partition: int) -> bool:
        t = self._registry.get(topic)
        return t is not None and 0 <= partition < t.partitions

    async def elect(self, topic: str, partition: int, unclean: bool, timeout_s: float) -> Result:
        if not self._exists(topic, partition):
            return NO_SUCH_PARTITION
        return E.election_not_needed.value, "Leader election not needed for topic partition."

    def reassignments(self) -> Reassignments:
        return {}

    async def reassign(
        self, topic: str, partition: int, target: tuple[int, ...] | None, allow_rf_change: bool
    ) -> Result:
        if not self._exists(topic, partition):
            return NO_SUCH_PARTITION
        if target is None:
            return E.no_reassignment_in_progress.value, "No reassignment is in progress for this partition."
        if list(target) != [self.node_id]:
            return E.invalid_replica_assignment.value, f"Only broker {self.node_id} exists."
        return 0, None

    def coordinators_topic_exists(self, topic: str) -> bool:
        """Created by the coordinators at start."""
        return True

    async def ensure_coordinators_topic(self, topic: str) -> int:
        return 0

    def coordinator(self, topic: str, partition_of: Callable[[int], int]) -> int:
        return self.node_id
