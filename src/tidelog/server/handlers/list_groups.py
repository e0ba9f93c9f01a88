"""ListGroups (key 16, v0-5): every group this node coordinates; v4 filters by state, v5 by type."""

from ..router import control_route

API_KEY = 16


def register(broker) -> None:
    coordinator = broker.groups

    def handle(ctx, request):
        err, groups = coordinator.list_groups(getattr(request, "states_filter", ()),
                                              getattr(request, "types_filter", ()))
        return {"throttle_time": 0, "error_code": err, "groups": groups}

    broker.router.add(control_route(API_KEY, 0, 5, handle))
