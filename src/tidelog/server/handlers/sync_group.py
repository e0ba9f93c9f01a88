"""SyncGroup (key 14, v0-5): the leader hands in the assignment; every member gets its own."""

from ..router import control_route

API_KEY = 14


def register(broker) -> None:
    coordinator = broker.groups

    async def handle(ctx, request):
        result = await coordinator.sync(
            group_id=request.group_id,
            member_id=request.member_id,
            instance_id=getattr(request, "group_instance_id", None),
            generation=request.generation_id,
            protocol_type=getattr(request, "protocol_type", None),
            protocol_name=getattr(request, "protocol_name", None),
            assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
        )
        return {"throttle_time": 0, **result}

    broker.router.add(control_route(API_KEY, 0, 5, handle))
