"""DescribeConfigs (key 32, v0-4): topic configs (override or default) and broker configs."""

from kio.schema.errors import ErrorCode as E

from ..router import control_route

API_KEY = 32
TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC, STATIC_BROKER, DEFAULT = 1, 4, 5
TYPE_STRING = 2


def register(broker) -> None:
    admin, registry = broker.admin, broker.registry

    def entries(values: dict[str, str], sources: dict[str, int], keys, synonyms: bool):
        wanted = set(keys) if keys else None
        out = []
        for name in sorted(values):
            if wanted is not None and name not in wanted:
                continue
            source = sources.get(name, DEFAULT)
            out.append({
                "name": name,
                "value": values[name],
                "read_only": source == STATIC_BROKER,
                "config_source": source,
                "is_default": source == DEFAULT,
                "is_sensitive": False,
                "synonyms": [{"name": name, "value": values[name], "source": source}] if synonyms else [],
                "config_type": TYPE_STRING,
                "documentation": None,
            })
        return out

    def handle(ctx, request):
        synonyms = getattr(request, "include_synonyms", False)
        results = []
        for r in request.resources:
            res = {"error_code": 0, "error_message": None, "resource_type": r.resource_type,
                   "resource_name": r.resource_name, "configs": []}
            if r.resource_type == TOPIC:
                topic = registry.get(r.resource_name)
                if topic is None:
                    res.update(error_code=E.unknown_topic_or_partition.value,
                               error_message=f"Topic '{r.resource_name}' does not exist.")
                else:
                    values = admin.topic_configs(topic)
                    sources = {k: DYNAMIC_TOPIC for k in topic.configs}
                    res["configs"] = entries(values, sources, r.configuration_keys, synonyms)
            elif r.resource_type == BROKER:
                if r.resource_name not in ("", str(broker.node_id)):
                    res.update(error_code=E.invalid_request.value,
                               error_message=f"Unexpected broker id {r.resource_name}, this is {broker.node_id}.")
                else:
                    cfg = broker.config
                    values = {k: str(v) for k, v in cfg.values.items() if v is not None}
                    sources = {k: STATIC_BROKER for k in cfg.raw}
                    res["configs"] = entries(values, sources, r.configuration_keys, synonyms)
            else:
                res.update(error_code=E.invalid_request.value,
                           error_message=f"Unsupported resource type {r.resource_type}.")
            results.append(res)
        return {"throttle_time": 0, "results": results}

    broker.router.add(control_route(API_KEY, 0, 4, handle))
