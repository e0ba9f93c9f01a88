"""DescribeGroups (key 15, v0-5): state, protocol and members; an unknown group is reported Dead."""

from ..router import control_route

API_KEY = 15


def register(broker) -> None:
    coordinator = broker.groups

    def handle(ctx, request):
        return {"throttle_time": 0, "groups": [coordinator.describe(g) for g in request.groups]}

    broker.router.add(control_route(API_KEY, 0, 5, handle))
