"""DeleteGroups (key 42, v0-2): remove empty groups and their committed offsets (tombstones)."""

from ..router import control_route

API_KEY = 42


def register(broker) -> None:
    coordinator = broker.groups

    async def handle(ctx, request):
        results = []
        for g in request.groups_names:
            results.append({"group_id": g, "error_code": await coordinator.delete_group(g)})
        return {"throttle_time": 0, "results": results}

    broker.router.add(control_route(API_KEY, 0, 2, handle))
