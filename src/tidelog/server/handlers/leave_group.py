"""LeaveGroup (key 13, v0-5): one member (v0-2) or a batch of members, by id or instance id (v3+)."""

from ..router import control_route

API_KEY = 13


def register(broker) -> None:
    coordinator = broker.groups

    def handle(ctx, request):
        if ctx.api_version < 3:
            top, members = coordinator.leave(request.group_id, [(request.member_id, None)])
            if not top and members:
                top = members[0]["error_code"]
            return {"throttle_time": 0, "error_code": top, "members": []}
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
        top, members = coordinator.leave(request.group_id, leaving)
        return {"throttle_time": 0, "error_code": top, "members": members}

    broker.router.add(control_route(API_KEY, 0, 5, handle))
