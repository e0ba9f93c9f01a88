"""DeleteTopics (key 20, v0-6): by name, or by topic id (v6)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer, answered_after

if TYPE_CHECKING:
    import uuid

    from kio.schema.delete_topics.v6.request import DeleteTopicsRequest

    from ...core.admin import TopicAdmin
    from ...core.topics import TopicRegistry
    from ...wire.responses import DeletableTopicResult, DeleteTopicsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    registry: TopicRegistry
    admin: TopicAdmin


def handle(deps: Deps, ctx: RequestContext, request: DeleteTopicsRequest) -> Answer[DeleteTopicsResponse]:
    admin, registry = deps.admin, deps.registry
    wanted: list[tuple[str | None, uuid.UUID | None]]
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(n, None) for n in getattr(request, "topic_names")]  # v0-5: names only
    responses: list[DeletableTopicResult] = []
    pending: list[Awaitable[object]] = []
    # A topic given more than once is deleted by none of its entries and answered once,
    # INVALID_REQUEST (Kafka's ControllerApis.deleteTopics): a name or an id repeated, or a name
    # whose topic is also given by its id.
    names = Counter(name for name, _ in wanted if name is not None)
    ids: Counter[uuid.UUID | None] = Counter(
        topic_id for name, topic_id in wanted if name is None and topic_id is not None
    )
    named_ids = {topic.topic_id for name, n in names.items() if n == 1 and (topic := registry.get(name)) is not None}
    answered: set[Any] = set()
    for name, topic_id in wanted:
        # a None name (an entry by id) counts 0
        if names.get(name, 0) > 1 or (name is None and ids.get(topic_id, 0) > 1):  # type: ignore[arg-type]
            if (name, topic_id) not in answered:
                answered.add((name, topic_id))
                responses.append(
                    {
                        "name": name,
                        "topic_id": None if name is not None else topic_id,
                        "error_code": E.invalid_request.value,
                        "error_message": "Duplicate topic name." if name is not None else "Duplicate topic id.",
                    }
                )
            continue
        if name is None and topic_id in named_ids:
            continue  # answered with the entry naming it
        if name is not None and (topic := registry.get(name)) is not None and topic.topic_id in ids:
            responses.append(
                {
                    "name": name,
                    "topic_id": topic.topic_id,
                    "error_code": E.invalid_request.value,
                    "error_message": "The provided topic name maps to an ID that was already supplied.",
                }
            )
            continue
        if name is None and topic_id is not None:
            topic = registry.by_id.get(topic_id)
            if topic is None:
                responses.append(
                    {
                        "name": None,
                        "topic_id": topic_id,
                        "error_code": E.unknown_topic_id.value,
                        "error_message": "Topic id does not exist.",
                    }
                )
                continue
            name = topic.name
        # an entry with neither name nor id (v6) is looked up as None: no topic, UNKNOWN_TOPIC_OR_PARTITION
        topic = registry.get(name)  # type: ignore[arg-type]
        code, msg = admin.check_delete(name)  # type: ignore[arg-type]
        if not code:
            # check_delete passed: a topic of that name exists, `name` is a str
            pending.append(admin.delete_topic(cast(str, name)))
        responses.append(
            {"name": name, "topic_id": topic.topic_id if topic else None, "error_code": code, "error_message": msg}
        )
    response: DeleteTopicsResponse = {"throttle_time": 0, "responses": responses}
    if pending:
        return answered_after(response, *pending)
    return response


ROUTE = control_route(ApiKey.DELETE_TOPICS, 0, 6, handle)
