"""DescribeConfigs (key 32, v0-4): topic configs (override or default) and broker configs (a
dynamic value - DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG - before the static one).

Each entry carries Kafka's config type and, when asked (v3+), a line of documentation
(`config_types`); PASSWORD keys are sensitive and their values are never returned. A topic key's
source is its override (DYNAMIC_TOPIC_CONFIG), else a broker key set in the configuration
(STATIC_BROKER_CONFIG), else the default; synonyms list them in that order, as Kafka does.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...core.config import BROKER_KEYS
from ...core.config_types import DOCS, TOPIC_SYNONYMS, ConfigType, broker_type, topic_type
from ...core.dynamic_config import DYNAMIC_BROKER, DYNAMIC_DEFAULT, DYNAMIC_KEYS
from ...core.topic_config import effective
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest

    from ..broker import Broker
    from ..connection import RequestContext

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC, STATIC_BROKER, DEFAULT = 1, 4, 5


@functools.cache
def _built_in_defaults() -> dict[str, str]:
    """Topic keys' values with no broker key set (the default synonyms' values)."""
    return effective({}, {})


def handle(broker: Broker, ctx: RequestContext, request: DescribeConfigsRequest) -> Any:
    admin, registry = broker.admin, broker.registry
    raw = broker.config.raw

    def entry(version, name, value, source, ctype, synonyms, want_synonyms, want_docs=False, read_only=False):
        sensitive = ctype == ConfigType.PASSWORD
        out = {
            "name": name,
            "value": None if sensitive else value,
            "read_only": read_only,
            "is_sensitive": sensitive,
        }
        if version == 0:  # v0 says is_default where later versions give the source
            out["is_default"] = source == DEFAULT
            return out
        out["config_source"] = source
        out["synonyms"] = (
            [{"name": n, "value": None if sensitive else v, "source": src} for n, v, src in synonyms]
            if want_synonyms
            else []
        )
        if version >= 3:
            out.update(config_type=int(ctype), documentation=DOCS.get(name) if want_docs else None)
        return out

    def topic_synonyms(topic, name, default_value):
        out = []
        if name in topic.configs:
            out.append((name, topic.configs[name], DYNAMIC_TOPIC))
        keys = TOPIC_SYNONYMS.get(name, ())
        for k in keys:  # dynamic broker configs first (the topic inherits them)
            out += _dynamic_synonyms(broker, k)
        out += [(k, raw[k], STATIC_BROKER) for k in keys if k in raw]
        with_default = [k for k in keys if BROKER_KEYS[k][1] is not None]
        if with_default:
            out.append((with_default[-1], BROKER_KEYS[with_default[-1]][1], DEFAULT))
        else:
            out.append((name, default_value, DEFAULT))
        return out

    def wanted(keys):
        return set(keys) if keys else None

    synonyms = getattr(request, "include_synonyms", False)
    docs = getattr(request, "include_documentation", False)
    results = []
    for r in request.resources:
        res = {
            "error_code": 0,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        keys = wanted(r.configuration_keys)
        if r.resource_type == TOPIC:
            topic = registry.get(r.resource_name)
            if topic is None:
                res.update(
                    error_code=E.unknown_topic_or_partition.value,
                    error_message=f"Topic '{r.resource_name}' does not exist.",
                )
            else:
                values = admin.topic_configs(topic)
                for name in sorted(values):
                    if keys is not None and name not in keys:
                        continue
                    syn = topic_synonyms(topic, name, _built_in_defaults().get(name, values[name]))
                    res["configs"].append(
                        entry(ctx.api_version, name, values[name], syn[0][2], topic_type(name), syn, synonyms, docs)
                    )
        elif r.resource_type == BROKER:
            if r.resource_name not in ("", str(broker.node_id)):
                res.update(
                    error_code=E.invalid_request.value,
                    error_message=f"Unexpected broker id {r.resource_name}, this is {broker.node_id}.",
                )
            elif r.resource_name == "":
                # the cluster-wide default: only the keys set dynamically for every broker, each
                # with that synonym alone (Kafka's currentDynamicDefaultConfigs)
                for name, value in sorted(broker.dynamic.entity("").items()):
                    if keys is not None and name not in keys:
                        continue
                    syn = [(name, value, DYNAMIC_DEFAULT)]
                    res["configs"].append(
                        entry(
                            ctx.api_version,
                            name,
                            value,
                            DYNAMIC_DEFAULT,
                            broker_type(name),
                            syn,
                            synonyms,
                            docs,
                            read_only=name not in DYNAMIC_KEYS,
                        )
                    )
            else:
                cfg = broker.config
                for name in sorted(k for k, v in cfg.values.items() if v is not None):
                    if keys is not None and name not in keys:
                        continue
                    # read-only: whether the key can be changed dynamically, wherever its value
                    # comes from; synonyms: dynamic, static, built-in default (values of their own)
                    value = raw[name] if name in raw else str(cfg.values[name])
                    if isinstance(cfg.values[name], bool):
                        value = str(cfg.values[name]).lower()
                    default = BROKER_KEYS[name][1] if name in BROKER_KEYS else None
                    syn = _dynamic_synonyms(broker, name)
                    if name in raw:
                        syn.append((name, raw[name], STATIC_BROKER))
                    if default is not None:
                        syn.append((name, default, DEFAULT))
                    dynamic = broker.dynamic.source(name)
                    if dynamic is not None:  # set with kafka-configs: it wins over the static value
                        value = dynamic[0]
                    source = syn[0][2] if syn else DEFAULT
                    res["configs"].append(
                        entry(
                            ctx.api_version,
                            name,
                            value,
                            source,
                            broker_type(name),
                            syn,
                            synonyms,
                            docs,
                            read_only=name not in DYNAMIC_KEYS,
                        )
                    )
        else:
            res.update(
                error_code=E.invalid_request.value, error_message=f"Unsupported resource type {r.resource_type}."
            )
        results.append(res)
    return {"throttle_time": 0, "results": results}


def _dynamic_synonyms(broker: Broker, name: str) -> list[tuple[str, str, int]]:
    """This broker's dynamic value, then the cluster-wide default's, as Kafka lists them."""
    out = []
    mine = broker.dynamic.entity(str(broker.node_id))
    if name in mine:
        out.append((name, mine[name], DYNAMIC_BROKER))
    default = broker.dynamic.entity("")
    if name in default:
        out.append((name, default[name], DYNAMIC_DEFAULT))
    return out


ROUTE = control_route(ApiKey.DESCRIBE_CONFIGS, 0, 4, handle)
