"""ListTransactions (key 66, v0-1): transactional ids known to the coordinator, filtered by
state names, producer ids and (v1) a minimum running time of Ongoing transactions."""


from ..router import control_route

API_KEY = 66


def register(broker) -> None:
    txn = broker.txn

    def handle(ctx, request):
        duration = getattr(request, "duration_filter", -1)
        unknown, found = txn.coordinator.list(request.state_filters, request.producer_id_filters, duration)
        return {"throttle_time": 0, "error_code": 0, "unknown_state_filters": unknown,
                "transaction_states": [{"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                                        "transaction_state": m.state.kafka_name} for m in found]}

    broker.router.add(control_route(API_KEY, 0, 1, handle))
