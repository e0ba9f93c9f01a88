"""OffsetDelete (key 47, v0): drop committed offsets of partitions the group does not consume."""

from ..router import control_route

API_KEY = 47


def register(broker) -> None:
    coordinator = broker.groups

    async def handle(ctx, request):
        tps = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
        err, results = await coordinator.delete_offsets(request.group_id, tps)
        return {"error_code": err, "throttle_time": 0, "topics": [] if err else [
            {"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": results[(t.name, p.partition_index)]}
                for p in t.partitions]}
            for t in request.topics]}

    broker.router.add(control_route(API_KEY, 0, 0, handle))
