"""KIP-890 across brokers: before a partition leader appends the first transactional batch of a
producer's transaction on a partition, it asks the transaction coordinator (the leader of the
transactional id's `__transaction_state` partition) whether that transaction is Ongoing with the
partition added, by AddPartitionsToTxn v4 with verify_only (as Kafka 3.6+ brokers do). A batch
the coordinator does not vouch for is refused before anything is appended: INVALID_TXN_STATE or
the coordinator's error; a coordinator that cannot be asked (moving, unreachable) turns into
NOT_ENOUGH_REPLICAS, which every client retries (Kafka's mapping for verification failures).

Later batches of the same transaction need no question: the partition's producer state then has
the transaction open. When this broker coordinates the id itself the question is local
(txn/service.py `verify_here`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ..core.topics import STATE_TOPIC
from ..log.records import (
    H_ATTRIBUTES,
    H_PRODUCER_EPOCH,
    H_PRODUCER_ID,
    HEADER,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
)
from .peer import Connector, PeerError, PeerPool, tcp_connect
from .ports import LocalTransactions

if TYPE_CHECKING:
    from .metadata import MetadataCache

log = logging.getLogger("tidelog.cluster")

ADD_PARTITIONS_TO_TXN, VERIFY_VERSION = 24, 4
TIMEOUT_S = 10.0


def transactional_producer(records: bytes | memoryview) -> tuple[int, int] | None:
    """(producer id, epoch) of a record set's first batch when it is transactional."""
    if len(records) < RECORD_BATCH_OVERHEAD:
        return None
    h = HEADER.unpack_from(records, 0)
    if not h[H_ATTRIBUTES] & TRANSACTIONAL_FLAG_MASK:
        return None
    return h[H_PRODUCER_ID], h[H_PRODUCER_EPOCH]


class TxnVerifier:
    def __init__(
        self,
        node_id: int,
        cache: MetadataCache,
        txn: LocalTransactions,
        listener: str,
        connect: Connector = tcp_connect,
    ) -> None:
        self.node_id = node_id
        self.cache = cache
        self.txn = txn
        self.listener = listener
        self._pool = PeerPool(cache, listener, f"tidelog-verify-{node_id}", TIMEOUT_S, connect)

    def needs(self, topic: str, partition: int, records: bytes | memoryview) -> tuple[int, int] | None:
        """(producer id, epoch) when this batch must be verified with a remote coordinator."""
        tp = transactional_producer(records)
        if tp is None or self.txn.verify_here(tp[0]):
            return None
        if self.txn.open_here(topic, partition, tp[0], tp[1]):
            return None  # its transaction is open here already
        return tp

    async def verify(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """The coordinator's answer per partition (0: the transaction includes it)."""
        if STATE_TOPIC not in self.cache.topics:
            return {tp: E.not_enough_replicas.value for tp in tps}
        st = self.cache.state(STATE_TOPIC, self.txn.partition_of(txn_id))
        leader = st.leader if st is not None and st.leader in self.cache.brokers else -1
        if leader == self.node_id:  # coordinated here after all (it moved meanwhile)
            return {tp: self.txn.verify_partition(producer_id, epoch, tp) for tp in tps}
        peer = self._pool.get(leader) if leader >= 0 else None
        if peer is None:
            return {tp: E.not_enough_replicas.value for tp in tps}
        topics: dict[str, list[int]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(p)
        try:
            async with peer[1]:
                resp = await peer[0].control(
                    ADD_PARTITIONS_TO_TXN,
                    VERIFY_VERSION,
                    {
                        "transactions": [
                            {
                                "transactional_id": txn_id,
                                "producer_id": producer_id,
                                "producer_epoch": epoch,
                                "verify_only": True,
                                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                            }
                        ]
                    },
                )
        except PeerError as e:
            log.info("transactional id %s: verification by broker %d failed: %s", txn_id, leader, e)
            return {tp: E.not_enough_replicas.value for tp in tps}
        out: dict[tuple[str, int], int] = {tp: E.not_enough_replicas.value for tp in tps}
        for tr in resp.results_by_transaction:
            for t in tr.topic_results:
                for pr in t.results_by_partition:
                    code = int(pr.partition_error_code.value)
                    if code in (
                        E.not_coordinator.value,
                        E.coordinator_not_available.value,
                        E.coordinator_load_in_progress.value,
                        E.concurrent_transactions.value,
                    ):
                        code = E.not_enough_replicas.value  # retriable for every client
                    out[(t.name, pr.partition_index)] = code
        return out

    def close(self) -> None:
        self._pool.close()
