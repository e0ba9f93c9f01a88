"""Config handlers, called directly (no socket): DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs on topics and on the dynamic broker configs (a BROKER resource named ""
for the cluster-wide default, or the broker's id)."""

from __future__ import annotations

import pytest

from tidelog.server.handlers import alter_configs, describe_configs, incremental_alter_configs

from .kit import (
    ADVERTISED,
    INVALID_CONFIG,
    INVALID_REQUEST,
    UNKNOWN_TOPIC_OR_PARTITION,
    call,
    started_broker,
)

TOPIC, BROKER = 2, 4  # Kafka's ConfigResource types
# Kafka's ConfigSource ids
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = (
    1,
    2,
    3,
    4,
    5,
)
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7  # Kafka's ConfigType ids
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs operations


@pytest.fixture
async def static(tmp_path):
    """A broker whose configuration sets log.retention.hours (a synonym of topics' retention.ms)."""
    async with started_broker(tmp_path, ADVERTISED, "log.retention.hours=48") as b:
        b.admin.create("c", 1, {"retention.ms": "1000"})
        yield b


def describe(
    broker, *resources: tuple[int, str, list | None], version: int = 4, synonyms: bool = False, docs: bool = False
):
    return call(
        describe_configs,
        broker,
        version,
        {
            "resources": [
                {"resource_type": t, "resource_name": n, "configuration_keys": keys} for t, n, keys in resources
            ],
            "include_synonyms": synonyms,
            "include_documentation": docs,
        },
    )


def configs_of(result: dict) -> dict:
    return {c["name"]: c for c in result["configs"]}


def synonyms(entry: dict) -> list[tuple]:
    return [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]]


# ---- DescribeConfigs ------------------------------------------------------------------------


async def test_describe_topic_configs_with_sources_synonyms_and_types(static):
    resp = await describe(
        static,
        (TOPIC, "c", ["retention.ms", "cleanup.policy", "max.message.bytes"]),
        (TOPIC, "t", ["retention.ms"]),
        synonyms=True,
        docs=True,
    )
    c, t = resp["results"]
    assert (c["error_code"], c["error_message"], c["resource_type"], c["resource_name"]) == (0, None, TOPIC, "c")
    got = configs_of(c)
    assert list(got) == ["cleanup.policy", "max.message.bytes", "retention.ms"]  # name order, only those asked
    retention = got["retention.ms"]
    assert (
        retention["value"],
        retention["config_source"],
        retention["read_only"],
        retention["is_sensitive"],
        retention["config_type"],
    ) == ("1000", DYNAMIC_TOPIC_CONFIG, False, False, LONG)
    # as Kafka lists them: the override, the broker's static key, the default of the broker key
    assert synonyms(retention) == [
        ("retention.ms", "1000", DYNAMIC_TOPIC_CONFIG),
        ("log.retention.hours", "48", STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    assert isinstance(retention["documentation"], str) and retention["documentation"]
    policy = got["cleanup.policy"]
    assert (policy["value"], policy["config_source"], policy["config_type"]) == ("delete", DEFAULT_CONFIG, LIST)
    assert synonyms(policy) == [("log.cleanup.policy", "delete", DEFAULT_CONFIG)]
    assert synonyms(got["max.message.bytes"]) == [("message.max.bytes", "1048588", DEFAULT_CONFIG)]
    # a topic without an override inherits the broker's static value (48 hours)
    inherited = configs_of(t)["retention.ms"]
    assert (inherited["value"], inherited["config_source"]) == (str(48 * 3600 * 1000), STATIC_BROKER_CONFIG)
    assert synonyms(inherited) == [
        ("log.retention.hours", "48", STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]


async def test_describe_topic_configs_without_synonyms_or_keys(broker):
    resp = await describe(broker, (TOPIC, "t", None))
    got = configs_of(resp["results"][0])
    assert len(got) > 20 and "segment.bytes" in got and "retention.ms" in got
    assert all(c["synonyms"] == [] and c["documentation"] is None for c in got.values())
    assert got["segment.bytes"]["value"] == "1073741824" and got["segment.bytes"]["config_source"] == DEFAULT_CONFIG


async def test_describe_configs_v0_says_is_default(static):
    resp = await describe(static, (TOPIC, "c", ["retention.ms", "cleanup.policy"]), version=0)
    assert resp["results"][0]["configs"] == [
        {"name": "cleanup.policy", "value": "delete", "read_only": False, "is_default": True, "is_sensitive": False},
        {"name": "retention.ms", "value": "1000", "read_only": False, "is_default": False, "is_sensitive": False},
    ]


async def test_describe_broker_configs(static):
    resp = await describe(
        static,
        (BROKER, "1", ["log.dirs", "log.retention.hours", "message.max.bytes", "auto.create.topics.enable"]),
        synonyms=True,
    )
    got = configs_of(resp["results"][0])
    assert got["log.dirs"]["value"] == str(static.config.log_dirs[0])
    assert (got["log.dirs"]["config_source"], got["log.dirs"]["read_only"], got["log.dirs"]["config_type"]) == (
        STATIC_BROKER_CONFIG,
        True,
        STRING,
    )
    assert (got["log.retention.hours"]["value"], got["log.retention.hours"]["config_source"]) == (
        "48",
        STATIC_BROKER_CONFIG,
    )
    assert synonyms(got["message.max.bytes"]) == [("message.max.bytes", "1048588", DEFAULT_CONFIG)]
    assert (got["message.max.bytes"]["read_only"], got["message.max.bytes"]["config_type"]) == (False, INT)
    auto = got["auto.create.topics.enable"]
    assert (auto["value"], auto["config_source"], auto["config_type"]) == ("true", DEFAULT_CONFIG, BOOLEAN)


async def test_describe_configs_errors(broker):
    resp = await describe(broker, (TOPIC, "nope", None), (BROKER, "7", None), (0, "x", None), (TOPIC, "t", ["no.such"]))
    nope, other_broker, unknown_type, no_key = resp["results"]
    assert (nope["error_code"], nope["configs"]) == (UNKNOWN_TOPIC_OR_PARTITION, [])
    assert nope["error_message"] == "Topic 'nope' does not exist."
    assert (other_broker["error_code"], other_broker["configs"]) == (INVALID_REQUEST, [])  # not this broker's id
    assert (unknown_type["error_code"], unknown_type["configs"]) == (INVALID_REQUEST, [])
    assert (no_key["error_code"], no_key["configs"]) == (0, [])  # an unknown key is left out, as Kafka


async def test_describe_broker_config_set_statically_but_dynamic_is_not_read_only(tmp_path):
    async with started_broker(tmp_path, ADVERTISED, "message.max.bytes=2000000") as b:
        resp = await describe(b, (BROKER, "1", ["message.max.bytes"]))
        entry = configs_of(resp["results"][0])["message.max.bytes"]
        assert (entry["value"], entry["config_source"], entry["read_only"]) == ("2000000", STATIC_BROKER_CONFIG, False)


async def test_describe_broker_config_default_synonym_after_a_dynamic_change(broker):
    await incremental(broker, (BROKER, "1", [("log.cleanup.policy", SET, "compact")]))
    resp = await describe(broker, (BROKER, "1", ["log.cleanup.policy"]), synonyms=True)
    entry = configs_of(resp["results"][0])["log.cleanup.policy"]
    assert synonyms(entry) == [
        ("log.cleanup.policy", "compact", DYNAMIC_BROKER_CONFIG),
        ("log.cleanup.policy", "delete", DEFAULT_CONFIG),
    ]


async def test_describe_the_cluster_default_broker_resource(broker):
    await incremental(broker, (BROKER, "", [("log.retention.ms", SET, "3600000")]))
    resp = await describe(broker, (BROKER, "", None))
    assert [(c["name"], c["value"], c["config_source"]) for c in resp["results"][0]["configs"]] == [
        ("log.retention.ms", "3600000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]


async def test_a_topics_min_insync_replicas_inherits_the_brokers(tmp_path):
    """As Kafka: a topic without an override has the broker's min.insync.replicas (static, then the
    cluster-wide dynamic default, which Kafka 4's KRaft format writes), with that source."""
    async with started_broker(tmp_path, ADVERTISED, "min.insync.replicas=2") as b:
        resp = await describe(b, (TOPIC, "t", ["min.insync.replicas"]), synonyms=True)
        entry = configs_of(resp["results"][0])["min.insync.replicas"]
        assert (entry["value"], entry["config_source"]) == ("2", STATIC_BROKER_CONFIG)
        assert synonyms(entry) == [
            ("min.insync.replicas", "2", STATIC_BROKER_CONFIG),
            ("min.insync.replicas", "1", DEFAULT_CONFIG),
        ]
        await incremental(b, (BROKER, "", [("min.insync.replicas", SET, "1")]))
        resp = await describe(b, (TOPIC, "t", ["min.insync.replicas"]))
        entry = configs_of(resp["results"][0])["min.insync.replicas"]
        assert (entry["value"], entry["config_source"]) == ("1", DYNAMIC_DEFAULT_BROKER_CONFIG)


# ---- AlterConfigs ---------------------------------------------------------------------------


def alter(broker, *resources: tuple[int, str, dict], validate_only: bool = False):
    return call(
        alter_configs,
        broker,
        2,
        {
            "resources": [
                {
                    "resource_type": t,
                    "resource_name": n,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
                for t, n, configs in resources
            ],
            "validate_only": validate_only,
        },
    )


async def test_alter_configs_replaces_a_topics_overrides(static):
    resp = await alter(static, (TOPIC, "c", {"segment.ms": "5000"}))
    assert resp["responses"] == [{"error_code": 0, "error_message": None, "resource_type": TOPIC, "resource_name": "c"}]
    assert static.registry.get("c").configs == {"segment.ms": "5000"}  # retention.ms=1000 is gone (legacy semantics)
    got = configs_of((await describe(static, (TOPIC, "c", ["segment.ms", "retention.ms"])))["results"][0])
    assert (got["segment.ms"]["value"], got["segment.ms"]["config_source"]) == ("5000", DYNAMIC_TOPIC_CONFIG)
    assert got["retention.ms"]["config_source"] == STATIC_BROKER_CONFIG
    dry = await alter(static, (TOPIC, "c", {"segment.ms": "6000"}), validate_only=True)
    assert dry["responses"][0]["error_code"] == 0 and static.registry.get("c").configs == {"segment.ms": "5000"}


async def test_alter_configs_refusals_change_nothing(broker):
    resp = await alter(
        broker,
        (TOPIC, "nope", {}),
        (TOPIC, "t", {"retention.ms": "soon"}),
        (TOPIC, "t", {"no.such.config": "1"}),
        (BROKER, "x", {}),
        (BROKER, "1", {"log.dirs": "/elsewhere"}),
        (0, "x", {}),
    )
    assert [(r["resource_name"], r["error_code"]) for r in resp["responses"]] == [
        ("nope", UNKNOWN_TOPIC_OR_PARTITION),
        ("t", INVALID_CONFIG),
        ("t", INVALID_CONFIG),
        ("x", INVALID_REQUEST),  # a broker resource named neither "" nor a broker id
        ("1", INVALID_REQUEST),  # Kafka: "Cannot update these configs dynamically"
        ("x", INVALID_REQUEST),
    ]
    assert all(r["error_message"] for r in resp["responses"])
    assert broker.registry.get("t").configs == {} and broker.dynamic.entities == {}


async def test_alter_configs_broker_replaces_its_dynamic_set(broker):
    await incremental(broker, (BROKER, "1", [("log.retention.ms", SET, "7200000")]))
    assert broker.config["log.retention.ms"] == 7200000
    resp = await alter(broker, (BROKER, "1", {"log.segment.bytes": "10485760"}))
    assert resp["responses"] == [
        {"error_code": 0, "error_message": None, "resource_type": BROKER, "resource_name": "1"}
    ]
    assert broker.dynamic.entity("1") == {"log.segment.bytes": "10485760"}
    assert broker.config["log.retention.ms"] is None  # back to the static configuration
    got = configs_of((await describe(broker, (BROKER, "1", ["log.segment.bytes"])))["results"][0])
    assert (got["log.segment.bytes"]["value"], got["log.segment.bytes"]["config_source"]) == (
        "10485760",
        DYNAMIC_BROKER_CONFIG,
    )


# ---- IncrementalAlterConfigs ----------------------------------------------------------------


def incremental(broker, *resources: tuple[int, str, list[tuple[str, int, str | None]]], validate_only: bool = False):
    return call(
        incremental_alter_configs,
        broker,
        1,
        {
            "resources": [
                {
                    "resource_type": t,
                    "resource_name": n,
                    "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
                }
                for t, n, ops in resources
            ],
            "validate_only": validate_only,
        },
    )


async def test_incremental_alter_topic_set_delete_append_subtract(static):
    resp = await incremental(
        static,
        (
            TOPIC,
            "c",
            [("segment.ms", SET, "5000"), ("retention.ms", DELETE, None), ("cleanup.policy", APPEND, "compact")],
        ),
    )
    assert resp["responses"] == [{"error_code": 0, "error_message": None, "resource_type": TOPIC, "resource_name": "c"}]
    # APPEND starts from the effective value (the default "delete")
    assert static.registry.get("c").configs == {"segment.ms": "5000", "cleanup.policy": "delete,compact"}
    await incremental(static, (TOPIC, "c", [("cleanup.policy", SUBTRACT, "delete")]))
    assert static.registry.get("c").configs == {"segment.ms": "5000", "cleanup.policy": "compact"}
    got = configs_of((await describe(static, (TOPIC, "c", ["cleanup.policy"])))["results"][0])
    assert (got["cleanup.policy"]["value"], got["cleanup.policy"]["config_source"]) == ("compact", DYNAMIC_TOPIC_CONFIG)
    dry = await incremental(static, (TOPIC, "c", [("segment.ms", DELETE, None)]), validate_only=True)
    assert dry["responses"][0]["error_code"] == 0 and "segment.ms" in static.registry.get("c").configs


async def test_incremental_alter_refusals_change_nothing(broker):
    resp = await incremental(
        broker,
        (TOPIC, "nope", [("retention.ms", SET, "1")]),
        (TOPIC, "t", [("retention.ms", APPEND, "5")]),  # not a list config
        (TOPIC, "t", [("retention.ms", SET, "soon")]),
        (TOPIC, "t", [("retention.ms", 7, "5")]),  # no such operation
        (BROKER, "", [("log.dirs", SET, "/elsewhere")]),
        (BROKER, "-1", [("log.retention.ms", SET, "1")]),
    )
    assert [(r["resource_name"], r["error_code"]) for r in resp["responses"]] == [
        ("nope", UNKNOWN_TOPIC_OR_PARTITION),
        ("t", INVALID_CONFIG),
        ("t", INVALID_CONFIG),
        ("t", INVALID_REQUEST),
        ("", INVALID_REQUEST),
        ("-1", INVALID_REQUEST),
    ]
    assert broker.registry.get("t").configs == {} and broker.dynamic.entities == {}


async def test_incremental_alter_dynamic_broker_configs(broker):
    resp = await incremental(broker, (BROKER, "", [("log.retention.ms", SET, "3600000")]))
    assert resp["responses"] == [{"error_code": 0, "error_message": None, "resource_type": BROKER, "resource_name": ""}]
    assert broker.config["log.retention.ms"] == 3600000
    got = await describe(broker, (BROKER, "1", ["log.retention.ms"]), (TOPIC, "t", ["retention.ms"]), synonyms=True)
    on_broker, on_topic = (configs_of(r) for r in got["results"])
    assert (on_broker["log.retention.ms"]["value"], on_broker["log.retention.ms"]["config_source"]) == (
        "3600000",
        DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    # the topic without an override follows the cluster-wide default at once
    assert (on_topic["retention.ms"]["value"], on_topic["retention.ms"]["config_source"]) == (
        "3600000",
        DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    assert synonyms(on_topic["retention.ms"]) == [
        ("log.retention.ms", "3600000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    # this broker's own value wins over the cluster-wide default
    await incremental(broker, (BROKER, "1", [("log.retention.ms", SET, "7200000")]))
    got = configs_of((await describe(broker, (BROKER, "1", ["log.retention.ms"]), synonyms=True))["results"][0])
    assert synonyms(got["log.retention.ms"])[:2] == [
        ("log.retention.ms", "7200000", DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "3600000", DYNAMIC_DEFAULT_BROKER_CONFIG),
    ]
    assert broker.dynamic.entities == {"": {"log.retention.ms": "3600000"}, "1": {"log.retention.ms": "7200000"}}
