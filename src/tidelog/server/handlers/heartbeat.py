"""Heartbeat (key 12, v0-4): keeps a member's session alive; REBALANCE_IN_PROGRESS asks it to rejoin."""

from ..router import control_route

API_KEY = 12


def register(broker) -> None:
    coordinator = broker.groups

    def handle(ctx, request):
        err = coordinator.heartbeat(request.group_id, request.member_id,
                                    getattr(request, "group_instance_id", None), request.generation_id)
        return {"throttle_time": 0, "error_code": err}

    broker.router.add(control_route(API_KEY, 0, 4, handle))
