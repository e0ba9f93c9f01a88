"""DeleteTopics (key 20, v0-6): by name, or by topic id (v6)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey

from kio.schema.errors import ErrorCode as E

from ..router import control_route

if TYPE_CHECKING:
    from ..broker import Broker
    from ..connection import RequestContext
    from kio.schema.delete_topics.v6.request import DeleteTopicsRequest



def handle(broker: Broker, ctx: RequestContext, request: DeleteTopicsRequest) -> Any:
    admin, registry = broker.admin, broker.registry
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(n, None) for n in request.topic_names]
    responses = []
    pending: list[Any] = []
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            topic = registry.by_id.get(topic_id)
            if topic is None:
                responses.append({"name": None, "topic_id": topic_id, "error_code": E.unknown_topic_id.value,
                                  "error_message": "Topic id does not exist."})
                continue
            name = topic.name
        topic = registry.get(name)
        if admin.clustered:
            code, msg = admin.check_delete(name)
            if not code:
                pending.append(broker.cluster.state.delete_topic(name))
        else:
            code, msg = admin.delete(name)
        responses.append({"name": name, "topic_id": topic.topic_id if topic else None,
                          "error_code": code, "error_message": msg})
    response = {"throttle_time": 0, "responses": responses}
    if pending:
        return _after(pending, response)
    return response


async def _after(pending: list[Any], response: dict[str, Any]) -> dict[str, Any]:
    """Cluster mode: answered once etcd has the deletions and this broker applied them."""
    await asyncio.gather(*pending)
    return response


ROUTE = control_route(ApiKey.DELETE_TOPICS, 0, 6, handle)
