"""DescribeConfigs (key 32, v0-4): topic configs (override or default) and broker configs (a
dynamic value - DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG - before the static one).

Each entry carries Kafka's config type and, when asked (v3+), a line of documentation
(`config_types`); PASSWORD keys are sensitive and their values are never returned. A topic key's
source is its override (DYNAMIC_TOPIC_CONFIG), else a broker key set in the configuration
(STATIC_BROKER_CONFIG), else the default; synonyms list them in that order, as Kafka does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...core.config import BROKER_KEYS
from ...core.config_types import DOCS, TOPIC_SYNONYMS, ConfigType, broker_type, topic_type
from ...core.dynamic_config import DYNAMIC_BROKER, DYNAMIC_DEFAULT, DYNAMIC_KEYS
from ...core.group_configs import GROUP_KEYS
from ...core.topic_config import effective
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest

    from ...core.admin import TopicAdmin
    from ...core.config import BrokerConfig
    from ...core.dynamic_config import DynamicBrokerConfigs
    from ...core.group_configs import GroupConfigs
    from ...core.topics import Topic, TopicRegistry
    from ...wire.responses import DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    registry: TopicRegistry
    admin: TopicAdmin
    dynamic: DynamicBrokerConfigs
    config: BrokerConfig
    node_id: int
    group_configs: GroupConfigs


TOPIC, BROKER, GROUP = 2, 4, 32
GROUP_CONFIG = 8  # Kafka's ConfigSource of a group's own value
DYNAMIC_TOPIC, STATIC_BROKER, DEFAULT = 1, 4, 5


@functools.cache
def _built_in_defaults() -> dict[str, str]:
    """Topic keys' values with no broker key set (the default synonyms' values)."""
    return effective({}, {})


Synonym = tuple[str, "str | None", int]


@dataclass(frozen=True, slots=True)
class _Ask:
    """What the request asks of every entry: its version, synonyms, documentation."""

    version: int
    synonyms: bool
    docs: bool


def _entry(
    ask: _Ask, name: str, value: str | None, source: int, ctype: ConfigType, syn: list[Synonym], read_only: bool = False
) -> DescribeConfigsResourceResult:
    """One config entry in the shape of the request's version; a PASSWORD value is never sent."""
    sensitive = ctype == ConfigType.PASSWORD
    out: DescribeConfigsResourceResult = {
        "name": name,
        "value": None if sensitive else value,
        "read_only": read_only,
        "is_sensitive": sensitive,
    }
    if ask.version == 0:  # v0 says is_default where later versions give the source
        out["is_default"] = source == DEFAULT
        return out
    out["config_source"] = source
    out["synonyms"] = (
        [{"name": n, "value": None if sensitive else v, "source": src} for n, v, src in syn] if ask.synonyms else []
    )
    if ask.version >= 3:
        out.update({"config_type": int(ctype), "documentation": DOCS.get(name) if ask.docs else None})
    return out


def handle(deps: Deps, ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    ask = _Ask(
        ctx.api_version,
        bool(getattr(request, "include_synonyms", False)),
        bool(getattr(request, "include_documentation", False)),
    )
    results: list[DescribeConfigsResult] = []
    for r in request.resources:
        res: DescribeConfigsResult = {
            "error_code": 0,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        keys = set(r.configuration_keys) if r.configuration_keys else None
        if r.resource_type == TOPIC:
            topic = deps.registry.get(r.resource_name)
            if topic is None:
                res.update(
                    {
                        "error_code": E.unknown_topic_or_partition.value,
                        "error_message": f"Topic '{r.resource_name}' does not exist.",
                    }
                )
            else:
                res["configs"] = _topic_entries(deps, topic, keys, ask)
        elif r.resource_type == BROKER:
            if r.resource_name not in ("", str(deps.node_id)):
                res.update(
                    {
                        "error_code": E.invalid_request.value,
                        "error_message": f"Unexpected broker id {r.resource_name}, this is {deps.node_id}.",
                    }
                )
            elif r.resource_name == "":
                res["configs"] = _default_broker_entries(deps, keys, ask)
            else:
                res["configs"] = _broker_entries(deps, keys, ask)
        elif r.resource_type == GROUP:
            res["configs"] = _group_entries(deps, r.resource_name, keys, ask)
        else:
            res.update(
                {
                    "error_code": E.invalid_request.value,
                    "error_message": f"Unsupported resource type {r.resource_type}.",
                }
            )
        results.append(res)
    return {"throttle_time": 0, "results": results}


def _group_entries(deps: Deps, group: str, keys: set[str] | None, ask: _Ask) -> list[DescribeConfigsResourceResult]:
    """Every group config key: the group's own value (GROUP_CONFIG), else its default."""
    configs = deps.group_configs
    own = configs.own(group)
    out: list[DescribeConfigsResourceResult] = []
    for name in sorted(GROUP_KEYS):
        if keys is not None and name not in keys:
            continue
        value = configs.get(group, name)
        source = GROUP_CONFIG if name in own else DEFAULT
        ctype = ConfigType.STRING if name in ("share.auto.offset.reset", "share.isolation.level") else ConfigType.INT
        syn: list[Synonym] = [(name, own[name], GROUP_CONFIG)] if name in own else []
        out.append(_entry(ask, name, value, source, ctype, syn))
    return out


def _topic_entries(deps: Deps, topic: Topic, keys: set[str] | None, ask: _Ask) -> list[DescribeConfigsResourceResult]:
    values = deps.admin.topic_configs(topic)
    out: list[DescribeConfigsResourceResult] = []
    for name in sorted(values):
        if keys is not None and name not in keys:
            continue
        syn = _topic_synonyms(deps, topic, name, _built_in_defaults().get(name, values[name]))
        out.append(_entry(ask, name, values[name], syn[0][2], topic_type(name), syn))
    return out


def _topic_synonyms(deps: Deps, topic: Topic, name: str, default_value: str) -> list[Synonym]:
    """The topic's override, then the broker keys it inherits (dynamic, static), then the default."""
    raw = deps.config.raw
    out: list[Synonym] = []
    if name in topic.configs:
        out.append((name, topic.configs[name], DYNAMIC_TOPIC))
    keys = TOPIC_SYNONYMS.get(name, ())
    for k in keys:  # dynamic broker configs first (the topic inherits them)
        out += _dynamic_synonyms(deps, k)
    out += [(k, raw[k], STATIC_BROKER) for k in keys if k in raw]
    with_default = [k for k in keys if BROKER_KEYS[k][1] is not None]
    if with_default:
        out.append((with_default[-1], BROKER_KEYS[with_default[-1]][1], DEFAULT))
    else:
        out.append((name, default_value, DEFAULT))
    return out


def _default_broker_entries(deps: Deps, keys: set[str] | None, ask: _Ask) -> list[DescribeConfigsResourceResult]:
    """The cluster-wide default: only the keys set dynamically for every broker, each with that
    synonym alone (Kafka's currentDynamicDefaultConfigs)."""
    out: list[DescribeConfigsResourceResult] = []
    for name, value in sorted(deps.dynamic.entity("").items()):
        if keys is not None and name not in keys:
            continue
        syn: list[Synonym] = [(name, value, DYNAMIC_DEFAULT)]
        out.append(_entry(ask, name, value, DYNAMIC_DEFAULT, broker_type(name), syn, name not in DYNAMIC_KEYS))
    return out


def _broker_entries(deps: Deps, keys: set[str] | None, ask: _Ask) -> list[DescribeConfigsResourceResult]:
    """This broker's keys. read-only: whether the key can be changed dynamically, wherever its
    value comes from; synonyms: dynamic, static, built-in default (values of their own)."""
    cfg, raw = deps.config, deps.config.raw
    out: list[DescribeConfigsResourceResult] = []
    for name in sorted(k for k, v in cfg.values.items() if v is not None):
        if keys is not None and name not in keys:
            continue
        value = raw[name] if name in raw else str(cfg.values[name])
        if isinstance(cfg.values[name], bool):
            value = str(cfg.values[name]).lower()
        default = BROKER_KEYS[name][1] if name in BROKER_KEYS else None
        syn = _dynamic_synonyms(deps, name)
        if name in raw:
            syn.append((name, raw[name], STATIC_BROKER))
        if default is not None:
            syn.append((name, default, DEFAULT))
        dynamic = deps.dynamic.source(name)
        if dynamic is not None:  # set with kafka-configs: it wins over the static value
            value = dynamic[0]
        source = syn[0][2] if syn else DEFAULT
        out.append(_entry(ask, name, value, source, broker_type(name), syn, name not in DYNAMIC_KEYS))
    return out


def _dynamic_synonyms(deps: Deps, name: str) -> list[Synonym]:
    """This broker's dynamic value, then the cluster-wide default's, as Kafka lists them."""
    out: list[Synonym] = []
    mine = deps.dynamic.entity(str(deps.node_id))
    if name in mine:
        out.append((name, mine[name], DYNAMIC_BROKER))
    default = deps.dynamic.entity("")
    if name in default:
        out.append((name, default[name], DYNAMIC_DEFAULT))
    return out


ROUTE = control_route(ApiKey.DESCRIBE_CONFIGS, 0, 4, handle)
