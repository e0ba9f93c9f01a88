"""DeleteGroups (key 42, v0-2): remove empty groups and their committed offsets (tombstones)."""

from ..groups import coordinator_of
from ..router import control_route

API_KEY = 42


def register(broker) -> None:
    coordinator = coordinator_of(broker)

    async def handle(ctx, request):
        results = []
        for g in request.groups_names:
            results.append({"group_id": g, "error_code": await coordinator.delete_group(g)})
        return {"throttle_time": 0, "results": results}

    broker.router.add(control_route(API_KEY, 0, 2, handle))
