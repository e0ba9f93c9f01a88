"""EndTxn (key 26, v0-4): commit or abort the producer's transaction. Answered once the markers
are written to every partition of the transaction. v2+ may answer PRODUCER_FENCED."""

from ._txn_util import fenced_for, guarded

from ..router import control_route

API_KEY = 26


def register(broker) -> None:
    txn = broker.txn

    async def handle(ctx, request):
        code = await guarded(
            "EndTxn",
            txn.coordinator.end_txn(request.transactional_id, request.producer_id, request.producer_epoch,
                                    bool(request.committed)),
            lambda c: c)
        return {"throttle_time": 0, "error_code": fenced_for(code, ctx.api_version, 2)}

    broker.router.add(control_route(API_KEY, 0, 4, handle))
