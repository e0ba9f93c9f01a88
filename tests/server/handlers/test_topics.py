"""Topic administration and discovery handlers, called directly (no socket): CreateTopics,
DeleteTopics, CreatePartitions, DescribeTopicPartitions and Metadata on a single node (node 1,
leader of every partition at epoch 0, replication factor 1)."""

from __future__ import annotations

import uuid

from tidelog.server.handlers import (
    create_partitions,
    create_topics,
    delete_topics,
    describe_topic_partitions,
    metadata,
)

from .kit import (
    ADVERTISED,
    HOST,
    INVALID_CONFIG,
    INVALID_PARTITIONS,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REPLICATION_FACTOR,
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    NO_AUTHORIZED_OPERATIONS,
    PORT,
    TOPIC_ALREADY_EXISTS,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    call,
    started_broker,
)

DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5  # Kafka's ConfigSource ids
# Kafka's AclOperation codes a topic supports: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
# DESCRIBE_CONFIGS, ALTER_CONFIGS
ALL_TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def creatable(name: str, partitions: int = -1, rf: int = -1, configs: dict | None = None, assignments=()) -> dict:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": [{"partition_index": p, "broker_ids": ids} for p, ids in assignments],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def create(broker, *topics: dict, version: int = 7, validate_only: bool = False):
    return call(
        create_topics, broker, version, {"topics": list(topics), "timeout": 10_000, "validate_only": validate_only}
    )


def by_name(entries: list[dict], key: str = "name") -> dict:
    return {e[key]: e for e in entries}


# ---- CreateTopics ---------------------------------------------------------------------------


async def test_create_topics_answers_the_topic_with_its_effective_configs(broker):
    resp = await create(broker, creatable("orders", 3, configs={"retention.ms": "1000"}))
    assert resp["throttle_time"].total_seconds() == 0
    [topic] = resp["topics"]
    created = broker.registry.get("orders")
    assert created is not None and created.partitions == 3
    assert (topic["name"], topic["error_code"], topic["error_message"]) == ("orders", 0, None)
    assert topic["topic_id"] == created.topic_id and topic["topic_id"].int != 0
    assert (topic["num_partitions"], topic["replication_factor"]) == (3, 1)  # -1: the broker's default
    configs = by_name(topic["configs"])
    assert configs["retention.ms"] == {
        "name": "retention.ms",
        "value": "1000",
        "read_only": False,
        "config_source": DYNAMIC_TOPIC_CONFIG,
        "is_sensitive": False,
    }
    assert configs["cleanup.policy"] == {
        "name": "cleanup.policy",
        "value": "delete",
        "read_only": False,
        "config_source": DEFAULT_CONFIG,
        "is_sensitive": False,
    }
    assert configs["max.message.bytes"]["value"] == "1048588"
    assert [c["name"] for c in topic["configs"]] == sorted(configs)
    assert all(broker.partitions.get("orders", p) is not None for p in range(3))
    assert broker.partitions.get("orders", 3) is None


async def test_create_topics_v4_has_no_topic_details(broker):
    resp = await create(broker, creatable("v4", 2), version=4)
    assert resp["topics"] == [{"name": "v4", "error_code": 0, "error_message": None}]
    assert broker.registry.get("v4").partitions == 2


async def test_create_topics_refusals_create_nothing(broker):
    resp = await create(
        broker,
        creatable("t", 1),  # exists (the fixture's)
        creatable("bad name!", 1),
        creatable("zero", 0),
        creatable("rf3", 1, rf=3),
        creatable("badcfg", 1, configs={"retention.ms": "soon"}),
        creatable("unknowncfg", 1, configs={"no.such.config": "1"}),
        creatable("elsewhere", assignments=[(0, [7])]),  # broker 7 does not exist
        creatable("both", 2, assignments=[(0, [1])]),  # partitions and assignments both set
    )
    codes = {t["name"]: t["error_code"] for t in resp["topics"]}
    assert codes == {
        "t": TOPIC_ALREADY_EXISTS,
        "bad name!": INVALID_TOPIC_EXCEPTION,
        "zero": INVALID_PARTITIONS,
        "rf3": INVALID_REPLICATION_FACTOR,
        "badcfg": INVALID_CONFIG,
        "unknowncfg": INVALID_CONFIG,
        "elsewhere": INVALID_REPLICA_ASSIGNMENT,
        "both": INVALID_REQUEST,
    }
    for t in resp["topics"]:
        assert t["error_message"], t
        assert (t["num_partitions"], t["replication_factor"], t["configs"], t["topic_id"]) == (-1, -1, [], None)
    assert sorted(broker.registry.topics) == ["__consumer_offsets", "__transaction_state", "t"]
    assert broker.registry.get("t").partitions == 2  # the existing topic is left as it was


async def test_create_topics_validate_only_checks_without_creating(broker):
    ok, refused = (await create(broker, creatable("dry", 4), creatable("t", 1), validate_only=True))["topics"]
    assert (ok["error_code"], ok["num_partitions"], ok["replication_factor"]) == (0, 4, 1)
    assert by_name(ok["configs"])["cleanup.policy"]["value"] == "delete"
    assert refused["error_code"] == TOPIC_ALREADY_EXISTS
    assert broker.registry.get("dry") is None and broker.partitions.get("dry", 0) is None


async def test_create_topics_validate_only_answers_the_configs_a_creation_would(broker):
    dry = (await create(broker, creatable("same", 1), validate_only=True))["topics"][0]
    real = (await create(broker, creatable("same", 1)))["topics"][0]
    assert dry["configs"] == real["configs"]


async def test_create_topics_repeated_name_is_refused_and_not_created(broker):
    resp = await create(broker, creatable("dup", 1), creatable("dup", 2), creatable("single", 1))
    assert sorted((t["name"], t["error_code"]) for t in resp["topics"]) == [("dup", INVALID_REQUEST), ("single", 0)]
    assert broker.registry.get("dup") is None


# ---- DeleteTopics ---------------------------------------------------------------------------


async def test_delete_topics_by_name_and_by_id(broker):
    broker.admin.create("by-id", 1, {})
    t_id, other_id = broker.registry.get("t").topic_id, broker.registry.get("by-id").topic_id
    resp = await call(
        delete_topics,
        broker,
        6,
        {"topics": [{"name": "t", "topic_id": None}, {"name": None, "topic_id": other_id}], "timeout": 10_000},
    )
    assert resp["responses"] == [
        {"name": "t", "topic_id": t_id, "error_code": 0, "error_message": None},
        {"name": "by-id", "topic_id": other_id, "error_code": 0, "error_message": None},
    ]
    assert broker.registry.get("t") is None and broker.registry.get("by-id") is None
    assert broker.partitions.get("t", 0) is None
    broker.admin.create("old", 1, {})
    v5 = await call(delete_topics, broker, 5, {"topic_names": ["old"], "timeout": 10_000})
    assert v5["responses"] == [{"name": "old", "error_code": 0, "error_message": None}]
    assert broker.registry.get("old") is None


async def test_delete_topics_unknown_name_and_id(broker):
    missing = uuid.uuid4()
    resp = await call(
        delete_topics,
        broker,
        6,
        {"topics": [{"name": "nope", "topic_id": None}, {"name": None, "topic_id": missing}], "timeout": 10_000},
    )
    nope, by_id = resp["responses"]
    assert (nope["name"], nope["topic_id"], nope["error_code"]) == ("nope", None, UNKNOWN_TOPIC_OR_PARTITION)
    assert (by_id["name"], by_id["topic_id"], by_id["error_code"]) == (None, missing, UNKNOWN_TOPIC_ID)
    assert broker.registry.get("t") is not None


async def test_delete_topics_repeated_name_is_refused(broker):
    resp = await call(delete_topics, broker, 5, {"topic_names": ["t", "t"], "timeout": 10_000})
    assert [(r["name"], r["error_code"]) for r in resp["responses"]] == [("t", INVALID_REQUEST)]
    assert broker.registry.get("t") is not None


async def test_delete_topics_repeated_id_or_name_and_id_is_refused(broker):
    broker.admin.create("other", 1, {})
    t_id, other_id = broker.registry.get("t").topic_id, broker.registry.get("other").topic_id
    resp = await call(
        delete_topics,
        broker,
        6,
        {
            "topics": [
                {"name": None, "topic_id": t_id},
                {"name": None, "topic_id": t_id},
                {"name": "other", "topic_id": None},
                {"name": None, "topic_id": other_id},
            ],
            "timeout": 10_000,
        },
    )
    assert sorted((r["name"] or "", r["topic_id"], r["error_code"]) for r in resp["responses"]) == [
        ("", t_id, INVALID_REQUEST),
        ("other", other_id, INVALID_REQUEST),
    ]
    assert broker.registry.get("t") is not None and broker.registry.get("other") is not None


# ---- CreatePartitions -----------------------------------------------------------------------


def grow(broker, *topics: tuple[str, int], validate_only: bool = False, assignments=None):
    return call(
        create_partitions,
        broker,
        3,
        {
            "topics": [{"name": n, "count": c, "assignments": assignments} for n, c in topics],
            "timeout": 10_000,
            "validate_only": validate_only,
        },
    )


async def test_create_partitions_grows_the_topic(broker):
    resp = await grow(broker, ("t", 4))
    assert resp["results"] == [{"name": "t", "error_code": 0, "error_message": None}]
    assert broker.registry.get("t").partitions == 4
    assert broker.partitions.get("t", 3) is not None
    explicit = await grow(broker, ("t", 5), assignments=[{"broker_ids": [1]}])
    assert explicit["results"][0]["error_code"] == 0 and broker.registry.get("t").partitions == 5


async def test_create_partitions_refusals(broker):
    resp = await grow(broker, ("t", 1), ("t", 2), ("nope", 3))
    codes = [(r["name"], r["error_code"]) for r in resp["results"]]
    assert codes == [("t", INVALID_PARTITIONS), ("t", INVALID_PARTITIONS), ("nope", UNKNOWN_TOPIC_OR_PARTITION)]
    assert all(r["error_message"] for r in resp["results"])
    elsewhere = await grow(broker, ("t", 3), assignments=[{"broker_ids": [7]}])
    assert elsewhere["results"][0]["error_code"] == INVALID_REPLICA_ASSIGNMENT
    dry = await grow(broker, ("t", 6), validate_only=True)
    assert dry["results"][0]["error_code"] == 0
    assert broker.registry.get("t").partitions == 2 and broker.partitions.get("t", 2) is None


# ---- DescribeTopicPartitions ----------------------------------------------------------------


def partition(p: int) -> dict:
    return {
        "error_code": 0,
        "partition_index": p,
        "leader_id": 1,
        "leader_epoch": 0,
        "replica_nodes": [1],
        "isr_nodes": [1],
        "eligible_leader_replicas": [],
        "last_known_elr": [],
        "offline_replicas": [],
    }


async def test_describe_topic_partitions_pages_with_a_cursor(broker):
    broker.admin.create("four", 4, {})
    topic_id = broker.registry.get("four").topic_id
    first = await call(
        describe_topic_partitions, broker, 0, {"topics": [{"name": "four"}], "response_partition_limit": 3}
    )
    assert first["topics"] == [
        {
            "error_code": 0,
            "name": "four",
            "topic_id": topic_id,
            "is_internal": False,
            "partitions": [partition(0), partition(1), partition(2)],
            "topic_authorized_operations": ALL_TOPIC_OPERATIONS,
        }
    ]
    assert first["next_cursor"] == {"topic_name": "four", "partition_index": 3}
    rest = await call(
        describe_topic_partitions,
        broker,
        0,
        {"topics": [{"name": "four"}], "response_partition_limit": 3, "cursor": first["next_cursor"]},
    )
    assert [p["partition_index"] for p in rest["topics"][0]["partitions"]] == [3]
    assert rest["next_cursor"] is None


async def test_describe_topic_partitions_all_topics_in_name_order(broker):
    resp = await call(describe_topic_partitions, broker, 0, {"topics": [], "response_partition_limit": 2000})
    assert [(t["name"], t["is_internal"], len(t["partitions"])) for t in resp["topics"]] == [
        ("__consumer_offsets", True, 1),
        ("__transaction_state", True, 1),
        ("t", False, 2),
    ]
    assert resp["next_cursor"] is None


async def test_describe_topic_partitions_errors(broker):
    resp = await call(
        describe_topic_partitions, broker, 0, {"topics": [{"name": "nope"}, {"name": "bad name!"}, {"name": "t"}]}
    )
    got = by_name(resp["topics"])
    assert got["nope"] == {
        "error_code": UNKNOWN_TOPIC_OR_PARTITION,
        "name": "nope",
        "topic_id": None,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }
    assert got["bad name!"]["error_code"] == INVALID_TOPIC_EXCEPTION
    assert got["t"]["error_code"] == 0 and len(got["t"]["partitions"]) == 2
    # a cursor naming a topic that is not asked for: every topic INVALID_REQUEST, as Kafka
    off = await call(
        describe_topic_partitions,
        broker,
        0,
        {"topics": [{"name": "t"}], "cursor": {"topic_name": "zzz", "partition_index": 0}},
    )
    assert [(t["name"], t["error_code"], t["partitions"]) for t in off["topics"]] == [("t", INVALID_REQUEST, [])]
    assert off["next_cursor"] is None


# ---- Metadata -------------------------------------------------------------------------------


def metadata_partition(p: int) -> dict:
    return {
        "error_code": 0,
        "partition_index": p,
        "leader_id": 1,
        "leader_epoch": 0,
        "replica_nodes": [1],
        "isr_nodes": [1],
        "offline_replicas": [],
    }


async def test_metadata_names_the_broker_and_each_partition_leader(broker):
    resp = await call(
        metadata, broker, 12, {"topics": [{"name": "t", "topic_id": None}], "allow_auto_topic_creation": False}
    )
    assert resp["brokers"] == [{"node_id": 1, "host": HOST, "port": PORT, "rack": None}]
    assert (resp["cluster_id"], resp["controller_id"]) == (broker.registry.cluster_id, 1)
    assert resp["cluster_id"] and len(resp["cluster_id"]) == 22  # a base64 UUID, as Kafka's
    assert resp["topics"] == [
        {
            "error_code": 0,
            "name": "t",
            "topic_id": broker.registry.get("t").topic_id,
            "is_internal": False,
            "partitions": [metadata_partition(0), metadata_partition(1)],
            "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS,
        }
    ]


async def test_metadata_all_topics_v1(broker):
    resp = await call(metadata, broker, 1, {"topics": None})
    assert [(t["name"], t["is_internal"]) for t in resp["topics"]] == [
        ("__consumer_offsets", True),
        ("__transaction_state", True),
        ("t", False),
    ]
    assert resp["topics"][2]["partitions"][1] == {
        "error_code": 0,
        "partition_index": 1,
        "leader_id": 1,
        "replica_nodes": [1],
        "isr_nodes": [1],
    }


async def test_metadata_by_topic_id(broker):
    t_id = broker.registry.get("t").topic_id
    missing = uuid.uuid4()
    resp = await call(
        metadata, broker, 12, {"topics": [{"name": None, "topic_id": t_id}, {"name": None, "topic_id": missing}]}
    )
    found, unknown = resp["topics"]
    assert (found["name"], found["topic_id"], len(found["partitions"])) == ("t", t_id, 2)
    assert (unknown["error_code"], unknown["name"], unknown["topic_id"], unknown["partitions"]) == (
        UNKNOWN_TOPIC_ID,
        None,
        missing,
        [],
    )
    # before v12 a response cannot name a topic by id: INVALID_REQUEST, as Kafka
    v11 = await call(metadata, broker, 11, {"topics": [{"name": None, "topic_id": t_id}]})
    assert [(t["name"], t["error_code"]) for t in v11["topics"]] == [("", INVALID_REQUEST)]


async def test_metadata_by_topic_id_with_an_empty_name(broker):
    """Kafka's Java client asks for the topics of a KIP-848 assignment by id with the name "" (not
    null): the id is what is looked up, as KafkaApis does."""
    t_id = broker.registry.get("t").topic_id
    resp = await call(metadata, broker, 12, {"topics": [{"name": "", "topic_id": t_id}]})
    (found,) = resp["topics"]
    assert (found["error_code"], found["name"], found["topic_id"], len(found["partitions"])) == (0, "t", t_id, 2)


async def test_metadata_unknown_and_invalid_topics(broker):
    resp = await call(
        metadata, broker, 12, {"topics": [{"name": "nope"}, {"name": "bad name!"}], "allow_auto_topic_creation": False}
    )
    assert [(t["name"], t["error_code"], t["partitions"]) for t in resp["topics"]] == [
        ("nope", UNKNOWN_TOPIC_OR_PARTITION, []),
        ("bad name!", INVALID_TOPIC_EXCEPTION, []),
    ]
    assert broker.registry.get("nope") is None


async def test_metadata_auto_creates_with_the_broker_defaults(broker):
    # Kafka answers LEADER_NOT_AVAILABLE while the new topic's leaders are elected; a single node
    # leads it at once and answers the topic itself (the client's retry is not needed)
    resp = await call(metadata, broker, 12, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True})
    [topic] = resp["topics"]
    assert (topic["name"], topic["error_code"], topic["partitions"]) == ("auto", 0, [metadata_partition(0)])
    assert broker.registry.get("auto").partitions == 1  # num.partitions


async def test_metadata_auto_creation_disabled_by_the_broker(tmp_path):
    async with started_broker(tmp_path, ADVERTISED, "auto.create.topics.enable=false") as b:
        resp = await call(metadata, b, 4, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True})
        assert [(t["name"], t["error_code"]) for t in resp["topics"]] == [("auto", UNKNOWN_TOPIC_OR_PARTITION)]
        assert b.registry.get("auto") is None


async def test_metadata_topic_authorized_operations_without_an_authorizer(broker):
    resp = await call(
        metadata,
        broker,
        10,
        {
            "topics": [{"name": "t", "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": True,
        },
    )
    assert resp["topics"][0]["topic_authorized_operations"] == ALL_TOPIC_OPERATIONS
