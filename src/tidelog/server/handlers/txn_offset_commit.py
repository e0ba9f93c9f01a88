"""TxnOffsetCommit (key 28, v0-5): offsets staged in the producer's transaction. They are written
to `__consumer_offsets` as transactional records now and become the group's committed offsets
only when the transaction commits (the marker); an abort drops them. The group's partition must
have joined the transaction (AddOffsetsToTxn). v3 carries the consumer's generation and member
id (KIP-447), checked by the group coordinator as Kafka does (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
FENCED_INSTANCE_ID for a replaced static member); v3 may answer PRODUCER_FENCED. v4+ (KIP-890)
answer TRANSACTION_ABORTABLE where older versions get INVALID_TXN_STATE (the group's partition is
not in the transaction). v5 comes from clients of transaction version 2, which send no
AddOffsetsToTxn: the broker adds the group's partition to the transaction first, through the
transaction coordinator (here or, in a cluster, on another broker)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...core.topics import OFFSETS_TOPIC
from ...groups.records import OffsetValue
from ...txn.service import append_error
from ...wire.apis import ApiKey
from ...wire.errors import (
    COORDINATOR_NOT_AVAILABLE,
    INVALID_TXN_STATE,
    NONE,
    NOT_ENOUGH_REPLICAS,
    TRANSACTION_ABORTABLE,
)
from ..router import control_route
from ._txn_util import fenced_for

if TYPE_CHECKING:
    from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest

    from ...cluster.view import ClusterView
    from ...txn.service import TxnService
    from ...wire.responses import TxnOffsetCommitResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    txn: TxnService
    cluster: ClusterView


FIRST_ABORTABLE_VERSION = 4
FIRST_ADDING_VERSION = 5  # transaction version 2 (KIP-890 part 2)


async def handle(deps: Deps, ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    txn = deps.txn
    groups = txn.groups
    v = ctx.api_version
    store = groups.store
    now = int(time.time() * 1000)
    code = NONE
    if store is None or not groups.loaded:
        code = E.coordinator_load_in_progress.value
    elif code := groups.status(request.group_id):
        pass
    elif v >= FIRST_ADDING_VERSION and (
        code := await _add_offsets_partition(deps, request, store.partition_for(request.group_id))
    ):
        pass
    elif txn.coordinator.status(request.transactional_id) == 0:
        # the transaction's coordinator is here (always on a single node): it vouches for the
        # producer; in a cluster it may be another broker, and the group's checks apply alone
        tp = (OFFSETS_TOPIC, store.partition_for(request.group_id))
        code = txn.coordinator.check_offsets_commit(
            request.transactional_id, request.producer_id, request.producer_epoch, tp
        )
        if code == INVALID_TXN_STATE and v >= FIRST_ABORTABLE_VERSION:
            code = TRANSACTION_ABORTABLE
        code = fenced_for(code, v, 3)
    offsets: dict[tuple[str, int], OffsetValue] = {
        (t.name, p.partition_index): OffsetValue(
            p.committed_offset, p.committed_metadata or "", now, getattr(p, "committed_leader_epoch", -1)
        )
        for t in request.topics
        for p in t.partitions
    }
    if code:
        results = {key: code for key in offsets}
    else:
        # The group's own checks (member, generation, static member fencing), validation and staging.
        results = await groups.offsets.commit_txn(
            request.group_id,
            request.producer_id,
            request.producer_epoch,
            getattr(request, "generation_id", -1),
            getattr(request, "member_id", "") or "",
            getattr(request, "group_instance_id", None),
            offsets,
        )
    return {
        "throttle_time": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": results[(t.name, p.partition_index)]}
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ],
    }


async def _add_offsets_partition(deps: Deps, request: TxnOffsetCommitRequest, partition: int) -> int:
    """v5: the group's `__consumer_offsets` partition joins the transaction (what AddOffsetsToTxn
    did for older clients); 0, or the error to answer: the coordinator's, as the group
    coordinator's answer as Kafka's partition writer passes it on (a fenced producer
    INVALID_PRODUCER_EPOCH, a transaction coordinator moving or unreachable
    COORDINATOR_NOT_AVAILABLE, which the client retries)."""
    tp = (OFFSETS_TOPIC, partition)
    answers = await deps.txn.add_for_append(
        request.transactional_id, request.producer_id, request.producer_epoch, [tp], deps.cluster.verify
    )
    code = append_error(answers.get(tp, COORDINATOR_NOT_AVAILABLE), True)
    return COORDINATOR_NOT_AVAILABLE if code == NOT_ENOUGH_REPLICAS else code


ROUTE = control_route(ApiKey.TXN_OFFSET_COMMIT, 0, 5, handle)
