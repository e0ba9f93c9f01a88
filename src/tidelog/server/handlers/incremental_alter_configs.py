"""IncrementalAlterConfigs (key 44, v0-1): SET / DELETE / APPEND / SUBTRACT on topic overrides."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey

from kio.schema.errors import ErrorCode as E

from ..router import control_route
from .alter_configs import alter_result, check_topic_resource

if TYPE_CHECKING:
    from ..broker import Broker
    from ..connection import RequestContext
    from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LIST_KEYS = {"cleanup.policy"}


def handle(broker: Broker, ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> Any:
    admin = broker.admin
    def apply(topic, ops) -> tuple[dict[str, str] | None, int, str | None]:
        current = dict(topic.configs)
        effective = admin.topic_configs(topic)
        for c in ops:
            if c.config_operation == SET:
                current[c.name] = c.value
            elif c.config_operation == DELETE:
                current.pop(c.name, None)
            elif c.config_operation in (APPEND, SUBTRACT):
                if c.name not in LIST_KEYS:
                    return None, E.invalid_config.value, f"{c.name} is not a list config."
                items = [x for x in effective.get(c.name, "").split(",") if x]
                for v in (c.value or "").split(","):
                    if c.config_operation == APPEND and v and v not in items:
                        items.append(v)
                    if c.config_operation == SUBTRACT and v in items:
                        items.remove(v)
                current[c.name] = ",".join(items)
            else:
                return None, E.invalid_request.value, f"Unknown config operation {c.config_operation}."
        return current, 0, None

    responses = []
    for r in request.resources:
        topic, err = check_topic_resource(broker, r)
        if err:
            responses.append(err)
            continue
        new, code, msg = apply(topic, r.configs)
        if not code:
            code, msg = admin.check_configs(new)
        if not code and not request.validate_only:
            admin.set_configs(topic.name, new)
        responses.append(alter_result(r, code, msg))
    return {"throttle_time": 0, "responses": responses}


ROUTE = control_route(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, handle)
