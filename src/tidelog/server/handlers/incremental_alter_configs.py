"""IncrementalAlterConfigs (key 44, v0-1): SET / DELETE / APPEND / SUBTRACT on topic overrides,
on dynamic broker configs (a BROKER resource: "" for every broker, or a broker id;
core/dynamic_config.py), and on a group's configs (a GROUP resource, type 32: core/group_configs.py;
SET and DELETE, as Kafka: its keys are no lists)."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer, answered_after
from .alter_configs import BROKER, alter_brokers, alter_result, broker_entity_error, check_topic_resource

if TYPE_CHECKING:
    from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest

    from ...core.admin import TopicAdmin
    from ...core.dynamic_config import DynamicBrokerConfigs
    from ...core.group_configs import GroupConfigs
    from ...core.topics import Topic, TopicRegistry
    from ...wire.responses import (
        IncrementalAlterConfigsAlterConfigsResourceResponse,
        IncrementalAlterConfigsResponse,
    )
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    registry: TopicRegistry
    admin: TopicAdmin
    dynamic: DynamicBrokerConfigs
    group_configs: GroupConfigs


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LIST_KEYS = {"cleanup.policy"}


def handle(
    deps: Deps, ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> Answer[IncrementalAlterConfigsResponse]:
    admin = deps.admin
    responses: list[IncrementalAlterConfigsAlterConfigsResourceResponse] = []
    brokers: list[tuple[Any, dict[str, str]]] = []
    groups: list[Awaitable[None]] = []
    for r in request.resources:
        if r.resource_type == GROUP:
            result, change = _group_configs(deps.group_configs, r)
            responses.append(result)
            if change is not None and not request.validate_only:
                groups.append(deps.group_configs.alter(r.resource_name, change))
            continue
        if r.resource_type == BROKER:
            err = broker_entity_error(r)
            if err:
                responses.append(err)
                continue
            entity = deps.dynamic.entity(r.resource_name)
            new, code, msg = apply_ops(entity, entity, r.configs, BROKER_LIST_KEYS)
            reason = None if code else deps.dynamic.invalid(new or {})
            if code or reason:
                responses.append(alter_result(r, code or E.invalid_request.value, msg or reason))
                continue
            if not request.validate_only:
                brokers.append((r, new or {}))
            responses.append(alter_result(r, 0, None))
            continue
        topic, err = check_topic_resource(deps.registry, r)
        if err:
            responses.append(err)
            continue
        topic = cast("Topic", topic)  # check_topic_resource answered the topic, as no error
        new, code, msg = apply_ops(dict(topic.configs), admin.topic_configs(topic), r.configs, LIST_KEYS)
        # apply_ops answers the configs whenever its code is 0 (None only with an error)
        if not code:
            code, msg = admin.check_configs(cast("dict[str, str]", new))
        if not code and not request.validate_only:
            admin.set_configs(topic.name, cast("dict[str, str]", new))
        responses.append(alter_result(r, code, msg))
    if brokers:
        return answered_after(
            {"throttle_time": 0, "responses": responses}, alter_brokers(deps.dynamic, brokers, []), *groups
        )
    if groups:
        return answered_after({"throttle_time": 0, "responses": responses}, *groups)
    return {"throttle_time": 0, "responses": responses}


BROKER_LIST_KEYS = {"log.cleanup.policy"}


GROUP = 32


def _group_configs(
    configs: GroupConfigs, r: Any
) -> tuple[IncrementalAlterConfigsAlterConfigsResourceResponse, dict[str, str | None] | None]:
    """A GROUP resource: each key checked; (its result, the change to make, None when refused)."""
    if not r.resource_name:
        return alter_result(r, E.invalid_request.value, "The group id must not be empty."), None
    new: dict[str, str | None] = {}
    for c in r.configs:
        if c.config_operation not in (SET, DELETE):
            return alter_result(r, E.invalid_config.value, f"{c.name} is not a list config."), None
        value = c.value if c.config_operation == SET else None
        if reason := configs.invalid(c.name, value):
            return alter_result(r, E.invalid_config.value, reason), None
        new[c.name] = value
    return alter_result(r, 0, None), new


def apply_ops(
    current: dict[str, str], inherited: dict[str, str], ops: Any, list_keys: set[str]
) -> tuple[dict[str, str] | None, int, str | None]:
    """The configs after SET / DELETE / APPEND / SUBTRACT; list items are taken from `inherited`
    (a topic's effective value, a broker entity's own)."""
    new = dict(current)
    for c in ops:
        if c.config_operation == SET:
            new[c.name] = c.value
        elif c.config_operation == DELETE:
            new.pop(c.name, None)
        elif c.config_operation in (APPEND, SUBTRACT):
            if c.name not in list_keys:
                return None, E.invalid_config.value, f"{c.name} is not a list config."
            items = [x for x in inherited.get(c.name, "").split(",") if x]
            for v in (c.value or "").split(","):
                if c.config_operation == APPEND and v and v not in items:
                    items.append(v)
                if c.config_operation == SUBTRACT and v in items:
                    items.remove(v)
            new[c.name] = ",".join(items)
        else:
            return None, E.invalid_request.value, f"Unknown config operation {c.config_operation}."
    return new, 0, None


ROUTE = control_route(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, handle)
