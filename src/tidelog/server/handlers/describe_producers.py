"""DescribeProducers (key 61, v0): the active producers of partitions (id, epoch, last sequence,
last timestamp, coordinator epoch, first offset of the open transaction or -1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...txn.producer_states import UNTRACKED
from ...wire.apis import ApiKey
from ..router import control_route
from ._leadership import off_leader

if TYPE_CHECKING:
    from kio.schema.describe_producers.v0.request import DescribeProducersRequest

    from ...cluster.view import ClusterView
    from ...txn.producer_states import ProducerStates
    from ...txn.service import TxnService
    from ...wire.responses import DescribeProducersResponse, PartitionResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService
    cluster: ClusterView
    producers: ProducerStates


def handle(deps: Deps, ctx: RequestContext, request: DescribeProducersRequest) -> DescribeProducersResponse:
    txn = deps.txn
    cluster = deps.cluster

    def partition(topic: str, index: int) -> PartitionResponse:
        plog = txn.partitions.get(topic, index)
        if topic not in UNTRACKED and off_leader(cluster, topic, index):
            return {
                "partition_index": index,
                "error_code": E.not_leader_or_follower.value,
                "error_message": None,
                "active_producers": [],
            }
        if plog is None:
            return {
                "partition_index": index,
                "error_code": E.unknown_topic_or_partition.value,
                "error_message": None,
                "active_producers": [],
            }
        producers = [] if topic in UNTRACKED else deps.producers.state_for(topic, index, plog).producers.values()
        return {
            "partition_index": index,
            "error_code": 0,
            "error_message": None,
            "active_producers": [
                {
                    "producer_id": e.producer_id,
                    "producer_epoch": e.epoch,
                    "last_sequence": e.last_seq,
                    "last_timestamp": e.last_timestamp,
                    "coordinator_epoch": e.coordinator_epoch,
                    "current_txn_start_offset": -1 if e.txn_first_offset is None else e.txn_first_offset,
                }
                for e in producers
            ],
        }

    return {
        "throttle_time": 0,
        "topics": [
            {"name": t.name, "partitions": [partition(t.name, p) for p in t.partition_indexes]} for t in request.topics
        ],
    }


ROUTE = control_route(ApiKey.DESCRIBE_PRODUCERS, 0, 0, handle)
