"""AddOffsetsToTxn (key 25, v0-3): the `__consumer_offsets` partition of a group joins the
producer's transaction, so TxnOffsetCommit may stage offsets there. v2+ may answer PRODUCER_FENCED."""

from ._txn_util import fenced_for, guarded
from ...txn.service import OFFSETS_TOPIC
from ..router import control_route

API_KEY = 25


def register(broker) -> None:
    txn = broker.txn

    async def handle(ctx, request):
        store = txn.groups.store
        partition = store.partition_for(request.group_id) if store is not None else 0
        tp = (OFFSETS_TOPIC, partition)
        results = await guarded(
            "AddOffsetsToTxn",
            txn.coordinator.add_partitions(request.transactional_id, request.producer_id, request.producer_epoch, [tp]),
            lambda code: {tp: code})
        return {"throttle_time": 0, "error_code": fenced_for(results[tp], ctx.api_version, 2)}

    broker.router.add(control_route(API_KEY, 0, 3, handle))
