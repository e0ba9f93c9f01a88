"""What the cluster needs of the parts above or beside it, as protocols: `cluster/` may import
only `core/`, `log/` and `wire/`, yet its replica fetcher, marker sender, verifier, coordinators'
placement and shared security call the coordinators (`groups/`, `txn/`) and the broker's
security (`server/`). Each protocol names exactly the calls made; the composition root passes
the real objects, and mypy checks that they fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..log.log import PartitionLog

TopicPartition = tuple[str, int]


class Coordinator(Protocol):
    """A coordinator whose state is partitioned like its internal topic (the group coordinator
    over `__consumer_offsets`, the transaction service over `__transaction_state`): the
    placement loads a partition's state when this broker comes to lead it, and unloads it."""

    @property
    def owned(self) -> dict[int, int] | None:
        """Partition -> leader epoch of what it coordinates now (None: not started clustered)."""

    @property
    def num_partitions(self) -> int: ...

    def set_num_partitions(self, n: int) -> None: ...

    def begin_load(self, partition: int) -> None: ...

    def load_partition(self, partition: int, leader_epoch: int) -> None: ...

    def unload_partition(self, partition: int) -> None: ...

    async def resume(self) -> None:
        """Finish what the loaded state left half done (transactions in a Prepare state)."""


class GroupOffsets(Protocol):
    """The group coordinator, for a marker on a `__consumer_offsets` partition led here."""

    async def complete_txn_partition(
        self, producer_id: int, producer_epoch: int, commit: bool, partition: int
    ) -> int: ...


class MarkerLog(Protocol):
    """The producer state's owner, for a marker on a data partition led here."""

    def write_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int = 0,
        transaction_version: int = 0,
    ) -> tuple[PartitionLog, int] | None: ...


class LocalTransactions(Protocol):
    """The transaction service, for KIP-890 verification of a batch before it is appended."""

    def verify_here(self, producer_id: int) -> bool: ...

    def partition_of(self, txn_id: str) -> int: ...

    async def coordinate(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[TopicPartition], add: bool
    ) -> dict[TopicPartition, int]: ...

    def open_here(self, topic: str, partition: int, producer_id: int, epoch: int) -> bool: ...
