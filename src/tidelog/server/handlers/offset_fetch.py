"""OffsetFetch (key 9, v0-8): committed offsets of a group (v8: of several groups at once).

Null topics (v2+) means every partition the group has committed; a partition with no commit
answers offset -1. v7+ require_stable turns partitions with pending transactional offsets into
UNSTABLE_OFFSET_COMMIT."""

from ..router import control_route

API_KEY = 9


def _topics(topics):
    if topics is None:
        return None
    return [(t.name, list(t.partition_indexes)) for t in topics]


def register(broker) -> None:
    coordinator = broker.groups

    def handle(ctx, request):
        version = ctx.api_version
        stable = bool(getattr(request, "require_stable", False))
        if version >= 8:
            groups = []
            for g in request.groups:
                err, topics = coordinator.fetch_offsets(g.group_id, _topics(g.topics), stable)
                groups.append({"group_id": g.group_id, "topics": topics, "error_code": err})
            return {"throttle_time": 0, "groups": groups}
        err, topics = coordinator.fetch_offsets(request.group_id, _topics(request.topics), stable)
        if err and version < 2:  # no group-level error code before v2: report it per partition
            topics = [{"name": t.name, "partitions": [
                {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": err}
                for p in t.partition_indexes]} for t in request.topics or ()]
        return {"throttle_time": 0, "topics": topics, "error_code": err}

    broker.router.add(control_route(API_KEY, 0, 8, handle))
