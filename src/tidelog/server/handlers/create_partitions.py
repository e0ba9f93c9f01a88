"""CreatePartitions (key 37, v0-3): grow a topic's partition count."""

from kio.schema.errors import ErrorCode as E

from ..admin import MAX_NEW_PARTITIONS_PER_REQUEST, TOO_MANY_PER_REQUEST
from ..router import control_route

API_KEY = 37


def register(broker) -> None:
    admin = broker.admin

    def handle(ctx, request):
        results = []
        current = {t.name: broker.registry.get(t.name) for t in request.topics}
        added = sum(t.count - current[t.name].partitions for t in request.topics
                    if current[t.name] is not None and t.count > current[t.name].partitions)
        for t in request.topics:
            if added > MAX_NEW_PARTITIONS_PER_REQUEST:  # Kafka fails every topic of the request
                code, msg = TOO_MANY_PER_REQUEST
                results.append({"name": t.name, "error_code": code, "error_message": msg})
                continue
            code, msg = admin.check_partitions(t.name, t.count)
            if not code and t.assignments:
                if any(list(a.broker_ids) != [broker.node_id] for a in t.assignments):
                    code, msg = E.invalid_replica_assignment.value, f"Only broker {broker.node_id} exists."
            if not code and not request.validate_only:
                admin.add_partitions(t.name, t.count)
            results.append({"name": t.name, "error_code": code, "error_message": msg})
        return {"throttle_time": 0, "results": results}

    broker.router.add(control_route(API_KEY, 0, 3, handle))
