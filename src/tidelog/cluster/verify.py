"""KIP-890 across brokers: before a partition leader appends the first transactional batch of a
producer's transaction on a partition, it asks the transaction coordinator (the leader of the
transactional id's `__transaction_state` partition) whether that transaction is Ongoing with the
partition added, by AddPartitionsToTxn v5 with verify_only (as Kafka 3.6+ brokers do); for a
client of transaction version 2 (Produce v12+, TxnOffsetCommit v5) it asks the coordinator to
add the partition instead (`add=True`, KIP-890 part 2). The answers are the coordinator's codes
(a coordinator that cannot be asked: COORDINATOR_NOT_AVAILABLE); the caller turns them into the
append's error (`txn.service.append_error`) and appends nothing where one is not 0.

Later batches of the same transaction need no question: the partition's producer state then has
the transaction open. When this broker coordinates the id itself the question is local
(txn/service.py `verify_here`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ..core.topics import STATE_TOPIC
from ..log.records import transactional_producer
from .peer import Connector, PeerError, PeerPool, tcp_connect
from .ports import LocalTransactions

if TYPE_CHECKING:
    from .metadata import MetadataCache

log = logging.getLogger("tidelog.cluster")

ADD_PARTITIONS_TO_TXN, VERIFY_VERSION = 24, 5
TIMEOUT_S = 10.0


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
        self, txn_id: str, producer_id: int, epoch: int, tps: list[tuple[str, int]], add: bool = False
    ) -> dict[tuple[str, int], int]:
        """The coordinator's answer per partition (0: the transaction includes it now)."""
        unavailable = E.coordinator_not_available.value
        if STATE_TOPIC not in self.cache.topics:
            return dict.fromkeys(tps, unavailable)
        st = self.cache.state(STATE_TOPIC, self.txn.partition_of(txn_id))
        leader = st.leader if st is not None and st.leader in self.cache.brokers else -1
        if leader == self.node_id:  # coordinated here after all (it moved meanwhile)
            return await self.txn.coordinate(txn_id, producer_id, epoch, tps, add)
        peer = self._pool.get(leader) if leader >= 0 else None
        if peer is None:
            return dict.fromkeys(tps, unavailable)
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
                                "verify_only": not add,
                                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                            }
                        ]
                    },
                )
        except PeerError as e:
            log.info("transactional id %s: verification by broker %d failed: %s", txn_id, leader, e)
            return dict.fromkeys(tps, unavailable)
        out: dict[tuple[str, int], int] = dict.fromkeys(tps, unavailable)
        for tr in resp.results_by_transaction:
            for t in tr.topic_results:
                for pr in t.results_by_partition:
                    out[(t.name, pr.partition_index)] = int(pr.partition_error_code.value)
        return out

    def close(self) -> None:
        self._pool.close()
