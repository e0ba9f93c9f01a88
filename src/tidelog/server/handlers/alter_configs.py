"""AlterConfigs (key 33, v0-2): replace a topic's overrides wholesale (legacy semantics)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer

if TYPE_CHECKING:
    from kio.schema.alter_configs.v2.request import AlterConfigsRequest

    from ...core.admin import TopicAdmin
    from ...core.dynamic_config import DynamicBrokerConfigs
    from ...core.topics import Topic, TopicRegistry
    from ...wire.responses import AlterConfigsResourceResponse, AlterConfigsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    registry: TopicRegistry
    admin: TopicAdmin
    dynamic: DynamicBrokerConfigs


TOPIC = 2


def alter_result(r: Any, code: int = 0, msg: str | None = None) -> AlterConfigsResourceResponse:
    """A resource's result; `r` is a resource of AlterConfigs or IncrementalAlterConfigs."""
    return {
        "error_code": code,
        "error_message": msg,
        "resource_type": r.resource_type,
        "resource_name": r.resource_name,
    }


BROKER = 4


def broker_entity_error(r: Any) -> AlterConfigsResourceResponse | None:
    """None when `r` names the cluster-wide default ("") or a broker id, else the error result."""
    name = r.resource_name
    if name == "" or (name.isdigit() and int(name) >= 0):
        return None
    return alter_result(r, E.invalid_request.value, f"Invalid broker id {name!r}.")


async def alter_brokers(
    dynamic: DynamicBrokerConfigs,
    changes: list[tuple[Any, dict[str, str]]],
    responses: list[AlterConfigsResourceResponse],
) -> AlterConfigsResponse:
    """Write the dynamic broker configs computed by the handler (cluster: through etcd)."""
    for r, configs in changes:
        await dynamic.alter(r.resource_name, configs)
    return {"throttle_time": 0, "responses": responses}


def check_topic_resource(registry: TopicRegistry, r: Any) -> tuple[Topic | None, AlterConfigsResourceResponse | None]:
    """(topic, None) or (None, error result) for a config resource."""
    if r.resource_type != TOPIC:
        return None, alter_result(r, E.invalid_request.value, f"Unsupported resource type {r.resource_type}.")
    topic = registry.get(r.resource_name)
    if topic is None:
        return None, alter_result(r, E.unknown_topic_or_partition.value, f"Topic '{r.resource_name}' does not exist.")
    return topic, None


def handle(deps: Deps, ctx: RequestContext, request: AlterConfigsRequest) -> Answer[AlterConfigsResponse]:
    admin = deps.admin
    responses: list[AlterConfigsResourceResponse] = []
    brokers: list[tuple[Any, dict[str, str]]] = []
    for r in request.resources:
        if r.resource_type == BROKER:  # the whole dynamic set of the broker (or default) replaced
            err = broker_entity_error(r)
            new = {c.name: c.value for c in r.configs if c.value is not None}
            reason = None if err else deps.dynamic.invalid(new)
            if err or reason:
                responses.append(err or alter_result(r, E.invalid_request.value, reason))
                continue
            if not request.validate_only:
                brokers.append((r, new))
            responses.append(alter_result(r, 0, None))
            continue
        topic, err = check_topic_resource(deps.registry, r)
        if err:
            responses.append(err)
            continue
        new = {c.name: c.value for c in r.configs if c.value is not None}
        code, msg = admin.check_configs(new)
        if not code and not request.validate_only:
            # check_topic_resource answered the topic, as no error
            admin.set_configs(cast("Topic", topic).name, new)
        responses.append(alter_result(r, code, msg))
    if brokers:
        return alter_brokers(deps.dynamic, brokers, responses)
    return {"throttle_time": 0, "responses": responses}


ROUTE = control_route(ApiKey.ALTER_CONFIGS, 0, 2, handle)
