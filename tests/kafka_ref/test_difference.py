"""Conformance by difference: the same requests to Apache Kafka 4.3.1 and to tidelog, answers
compared field by field.

Both brokers start empty, get the same topics and the same records (fixed timestamps), then
answer the same request cases at every version both of them serve. Each answer is decoded with
the same schema and compared after `normalize`, which drops or masks only what legitimately
differs (listed in IGNORED with the reason). Anything else that differs fails the test: a finding
to fix in tidelog, or, when the difference is deliberate, an entry in KNOWN with its reason.

Kafka comes from Maven Central (`java/kafka/pom.xml`, `make kafka-jars`); starting it costs a few
seconds. About 30 s in all.
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker_process import BrokerProcess
from kafka_process import KafkaProcess

from tidelog.cli.client import KafkaClient
from tidelog.log.records import Record, build_batch
from tidelog.wire import control
from tidelog.wire.schemas import request_schema, response_schema

pytestmark = pytest.mark.interop

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, in both logs' records
TOPIC = "diff-t"
SMALL = "diff-small"
PARTITIONS = 2

# field name -> why it may differ between two correct brokers
IGNORED = {
    "throttle_time": "quota throttling is each broker's own",
    "cluster_id": "each cluster has its own random id",
    "topic_id": "topic ids are random per broker",
    "node_id": "node ids, hosts and ports are each broker's own",
    "host": "node ids, hosts and ports are each broker's own",
    "port": "node ids, hosts and ports are each broker's own",
    "broker_id": "node ids, hosts and ports are each broker's own",
    "leader_id": "node ids, hosts and ports are each broker's own",
    "controller_id": "node ids, hosts and ports are each broker's own",
    "replica_nodes": "node ids, hosts and ports are each broker's own",
    "isr_nodes": "node ids, hosts and ports are each broker's own",
    "error_message": "free text; the error code is compared",
    "log_append_time": "the broker's clock",
    "producer_id": "producer ids are allocated per broker",
    "member_id": "member ids are generated per broker",
    "log_dir": "each broker's own directory",
    "total_bytes": "file system figures of each broker's disk",
    "usable_bytes": "file system figures of each broker's disk",
    "partition_size": "segment sizes depend on each broker's batching of the same records",
    "supported_features": "feature flags of Kafka's own KRaft metadata (tidelog has none)",
    "finalized_features": "feature flags of Kafka's own KRaft metadata (tidelog has none)",
    "finalized_features_epoch": "feature flags of Kafka's own KRaft metadata (tidelog has none)",
    "zk_migration_ready": "Kafka's own KRaft migration state",
    "leader_epoch": "Kafka bumps the leader epoch at topic creation in KRaft; tidelog's single node keeps 0",
}
# API keys whose whole answer is compared only for its error codes, with the reason
CODES_ONLY = {
    18: "ApiVersions: the API lists differ by design (README lists what Kafka serves and tidelog does not)",
}
# (api_key, version, path) -> why tidelog answers differently on purpose
KNOWN: dict[tuple[int, int | None, str], str] = {
    (
        32,
        None,
        "results[0].configs[4].config_source",
    ): "min.insync.replicas: Kafka 4's KRaft format writes a cluster-wide default "
    "(DYNAMIC_DEFAULT_BROKER_CONFIG); tidelog's is the built-in default",
}


def normalize(value, path: str = ""):
    if isinstance(value, dict):
        return {k: normalize(v, f"{path}.{k}" if path else k) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [normalize(v, path) for v in value]
    if hasattr(value, "value") and hasattr(value, "name") and not isinstance(value, (str, bytes)):
        return int(value.value)  # ErrorCode and other enums
    if hasattr(value, "total_seconds"):
        return int(value.total_seconds() * 1000)
    return value


def _sorted_lists(value):
    """Order Kafka does not define (topics, partitions, groups in a listing) is not compared."""
    if isinstance(value, dict):
        return {k: _sorted_lists(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_sorted_lists(v) for v in value]
        try:
            return sorted(items, key=repr)
        except TypeError:
            return items
    return value


def diff(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}" if path else k)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items (kafka) vs {len(b)} (tidelog): {a!r:.300} vs {b!r:.300}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: kafka {a!r:.200} vs tidelog {b!r:.200}"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    # streams groups: the first assignment is delayed past the test (ASSIGNMENT_DELAYED on both)
    delay = {"group.streams.initial.rebalance.delay.ms": "600000"}
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka"), overrides=delay)
    tide = BrokerProcess(
        tmp_path_factory.mktemp("tidelog") / "data",
        {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3", **delay},
    )
    kafka.start()
    tide.start()
    try:
        clients = {"kafka": KafkaClient(kafka.bootstrap), "tidelog": KafkaClient(tide.bootstrap)}
        for c in clients.values():
            _prepare(c)
            _coordinators_ready(c)
            _prepare_errors(c)
            md = c.request(3, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}, version=12)
            c.topic_ids = {TOPIC: md.topics[0].topic_id}
        yield clients
        for c in clients.values():
            c.close()
    finally:
        kafka.stop()
        tide.stop()
        kafka.cleanup()


def _prepare(c: KafkaClient) -> None:
    created = c.request(
        19,
        {
            "topics": [
                {"name": TOPIC, "num_partitions": PARTITIONS, "replication_factor": 1, "assignments": [], "configs": []}
            ],
            "timeout": 20_000,
            "validate_only": False,
        },
        version=5,
    )
    assert created.topics[0].error_code.value == 0, created
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # Kafka answers CreateTopics before its partitions lead
        md = c.request(3, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}, version=9)
        if md.topics[0].error_code.value == 0 and all(p.error_code.value == 0 for p in md.topics[0].partitions):
            break
        time.sleep(0.2)
    for p in range(PARTITIONS):
        records = build_batch([Record(b"k%d" % i, b"v%d-%d" % (p, i), T0 + 1000 * i) for i in range(5)])
        for _attempt in range(100):  # Kafka's partitions may not lead yet (NOT_LEADER_OR_FOLLOWER): retry
            resp = c.request(
                0,
                {
                    "transactional_id": None,
                    "acks": -1,
                    "timeout": 10_000,
                    "topic_data": [{"name": TOPIC, "partition_data": [{"index": p, "records": records}]}],
                },
                version=9,
            )
            if resp.responses[0].partition_responses[0].error_code.value != 6:
                break
            time.sleep(0.2)
        assert resp.responses[0].partition_responses[0].error_code.value == 0, resp


def _prepare_errors(c: KafkaClient) -> None:
    """A topic with a small max.message.bytes, and an idempotent producer id of this broker's."""
    created = c.request(
        19,
        {
            "topics": [
                {
                    "name": SMALL,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": "max.message.bytes", "value": "1024"}],
                }
            ],
            "timeout": 20_000,
            "validate_only": False,
        },
        version=5,
    )
    assert created.topics[0].error_code.value == 0, created
    deadline = time.monotonic() + 60
    while True:  # Kafka loads its producer-id state lazily: COORDINATOR_LOAD_IN_PROGRESS meanwhile
        init = c.request(
            22,
            {"transactional_id": None, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
            version=4,
        )
        if init.error_code.value not in (14, 15) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert init.error_code.value == 0, init
    c.pid, c.epoch = init.producer_id, init.producer_epoch


def _produce(topic: str, records: bytes, partition: int = 0, txn_id: str | None = None) -> dict:
    return {
        "transactional_id": txn_id,
        "acks": -1,
        "timeout": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
    }


def _produce_errors(v: int, c: KafkaClient) -> list[dict]:
    """Produce requests that must fail, built with this broker's own producer id."""

    def idem(seq: int, epoch_shift: int = 0, **kw) -> bytes:
        return build_batch(
            [Record(b"k", b"v", T0)], producer_id=c.pid, producer_epoch=c.epoch + epoch_shift, base_sequence=seq, **kw
        )

    return [
        _produce(SMALL, build_batch([Record(b"k", b"x" * 2000, T0)])),  # larger than max.message.bytes
        _produce(TOPIC, idem(0), partition=1),  # the first batch of this producer: accepted
        _produce(TOPIC, idem(5), partition=1),  # a gap in the sequence
        _produce(TOPIC, idem(1, epoch_shift=3), partition=1),  # an epoch ahead of the broker's
        _produce(
            TOPIC,
            build_batch(
                [Record(b"k", b"v", T0)], producer_id=987_654, producer_epoch=0, base_sequence=0, transactional=True
            ),
            partition=1,
            txn_id="no-such-txn",
        ),
        _produce("no-such-topic-p", build_batch([Record(b"k", b"v", T0)])),
    ]


def _coordinators_ready(c: KafkaClient) -> None:
    """Kafka creates __consumer_offsets and __transaction_state on the first FindCoordinator and
    answers COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS until they are loaded: ask
    until both coordinators answer, so that both brokers are compared in the same state."""
    deadline = time.monotonic() + 60
    for key_type, key in ((0, "g1"), (1, "t1")):
        while True:
            r = c.request(10, {"key": key, "key_type": key_type}, version=3)
            if r.error_code.value == 0:
                break
            assert time.monotonic() < deadline, r
            time.sleep(0.3)
    while c.request(16, {"states_filter": [], "types_filter": []}, version=4).error_code.value != 0:
        assert time.monotonic() < deadline
        time.sleep(0.3)


def _common_versions(clients, api_key: int) -> list[int]:
    ranges = [c.versions.get(api_key) for c in clients.values()]
    if any(r is None for r in ranges):
        return []
    lo = max(r[0] for r in ranges)
    hi = min(r[1] for r in ranges)
    return [v for v in range(lo, hi + 1) if request_schema(api_key, v) and response_schema(api_key, v)]


def _list_offsets(v):
    parts = [
        {"partition_index": 0, "timestamp": ts, "current_leader_epoch": -1, "max_num_offsets": 1}
        for ts in (-2, -1, T0 + 2500, T0 + 99_000)
    ]
    if v >= 7:
        parts.append({"partition_index": 1, "timestamp": -3, "current_leader_epoch": -1, "max_num_offsets": 1})
    # one timestamp per partition and request (Kafka refuses repeats): one partition each
    return [{"replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [p]}]} for p in parts] + [
        {"replica_id": -1, "isolation_level": 1, "topics": [{"name": "no-such-topic", "partitions": [parts[0]]}]}
    ]


def _consumer_heartbeats(v: int) -> list[dict]:
    """KIP-848: refused requests, a heartbeat to no group, then a member joining a group of its own
    (its assignment names topic ids, which differ per broker and are not compared)."""

    def hb(group: str, member: str, epoch: int, **kw) -> dict:
        return {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": kw.get("rebalance", 30_000),
            "subscribed_topic_names": kw.get("topics", [TOPIC]),
            "subscribed_topic_regex": None,
            "server_assignor": kw.get("assignor"),
            "topic_partitions": kw.get("owned", []),
        }

    member = str(uuid.UUID(int=v + 1)) if v >= 1 else ""
    return [
        hb(f"diff-cg-{v}", member or "m", 0, rebalance=-1),  # INVALID_REQUEST: no rebalance timeout
        hb(f"diff-cg-{v}", member or "m", 0, owned=None),  # INVALID_REQUEST: owned partitions missing
        hb(f"diff-cg-{v}", member or "m", 0, assignor="no-such-assignor"),  # UNSUPPORTED_ASSIGNOR
        hb("no-such-group", "m", 3, owned=None, topics=None),  # GROUP_ID_NOT_FOUND
        hb(f"diff-cg-{v}", member, 0),  # joins: epoch 1, both partitions
    ]


def _streams_topology(source: str = TOPIC, changelog_partitions: int = 0) -> dict:
    """A word count's: subtopology 0 reads `source` into a repartition topic, read by 1 (stateful)."""
    info = {"partitions": 0, "replication_factor": 0, "topic_configs": [{"key": "cleanup.policy", "value": "delete"}]}
    return {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopology_id": "0",
                "source_topics": [source],
                "source_topic_regex": [],
                "state_changelog_topics": [],
                "repartition_sink_topics": ["diff-app-repartition"],
                "repartition_source_topics": [],
                "copartition_groups": [],
            },
            {
                "subtopology_id": "1",
                "source_topics": [],
                "source_topic_regex": [],
                "state_changelog_topics": [
                    {**info, "name": "diff-app-changelog", "partitions": changelog_partitions, "topic_configs": []}
                ],
                "repartition_sink_topics": [],
                "repartition_source_topics": [{**info, "name": "diff-app-repartition"}],
                "copartition_groups": [],
            },
        ],
    }


def _streams_heartbeats(v: int) -> list[dict]:
    """KIP-1071: refused requests (4.3.1's unsupported features, invalid ones, bad topologies), a
    heartbeat to no group, then a member joining a group of its own with a word count's topology:
    its internal topics missing, the first assignment delayed, its endpoint's (empty) partitions."""

    def hb(group: str, member: str, epoch: int, **kw) -> dict:
        joining = epoch == 0
        return {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "endpoint_information_epoch": 0,
            "instance_id": kw.get("instance_id"),
            "rack_id": None,
            "rebalance_timeout": kw.get("rebalance", 30_000 if joining else -1),
            "topology": kw.get("topology", _streams_topology() if joining else None),
            "active_tasks": kw.get("owned", [] if joining else None),
            "standby_tasks": [] if joining or "owned" in kw else None,
            "warmup_tasks": [] if joining or "owned" in kw else None,
            "process_id": "p-1" if joining else None,
            "user_endpoint": {"host": "app-host", "port": 7070} if joining else None,
            "client_tags": [{"key": "zone", "value": "z1"}] if joining else None,
            "task_offsets": None,
            "task_end_offsets": None,
            "shutdown_application": False,
        }

    group = f"diff-sg-{v}"
    stateless = {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopology_id": "0",
                "source_topics": [TOPIC],
                "source_topic_regex": [],
                "state_changelog_topics": [],
                "repartition_sink_topics": [],
                "repartition_source_topics": [],
                "copartition_groups": [],
            }
        ],
    }
    return [
        hb(group, "m", 0, instance_id="i"),  # INVALID_REQUEST: static members not supported yet
        hb(group, "m", 0, rebalance=-1),  # INVALID_REQUEST: no rebalance timeout
        hb(group, "m", 0, topology=None),  # INVALID_REQUEST: no topology
        hb(group, "m", 0, owned=[{"subtopology_id": "0", "partitions": [0]}]),  # INVALID_REQUEST: owns tasks
        hb(group, "m", -3),  # INVALID_REQUEST: epoch
        hb(group, "m", 0, topology=_streams_topology(changelog_partitions=3)),  # STREAMS_INVALID_TOPOLOGY
        hb(group, "m", 0, topology=_streams_topology(source="__consumer_offsets")),  # STREAMS_INVALID_TOPOLOGY
        hb(group, "m", 0, topology=_streams_topology(source="bad name!")),  # STREAMS_INVALID_TOPOLOGY
        hb("no-such-group", "m", 3),  # GROUP_ID_NOT_FOUND
        hb(group, "m-1", 0),  # joins: MISSING_INTERNAL_TOPICS, ASSIGNMENT_DELAYED, epoch 1, no tasks
        hb(group, "m-2", 1, owned=[]),  # UNKNOWN_MEMBER_ID
        hb(group, "m-1", 5, owned=[]),  # FENCED_MEMBER_EPOCH
        # a stateless topology (no internal topics) in a group of its own: a member joins and leaves
        hb(f"{group}-x", "m", 0, topology=stateless),
        hb(f"{group}-x", "m", -1),
        hb(f"{group}-x", "m", -1),  # UNKNOWN_MEMBER_ID: it left
    ]


CASES = {
    # name: (api_key, request builder: version -> request dicts, or (version, client) -> request
    # dicts when a request carries that broker's own ids)
    "Produce errors": (0, _produce_errors),
    "ApiVersions": (18, lambda v: [{"client_software_name": "diff", "client_software_version": "1"}]),
    "Metadata": (
        3,
        lambda v: [
            {
                "topics": [{"name": TOPIC}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
            *(
                [
                    {
                        "topics": [{"name": "no-such-topic"}],
                        "allow_auto_topic_creation": False,
                        "include_cluster_authorized_operations": False,
                        "include_topic_authorized_operations": False,
                    }
                ]
                if v >= 4
                else []
            ),  # v0-3 always auto-create (asynchronously on Kafka)
            {
                "topics": [{"name": "bad name!"}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        ],
    ),
    "ListOffsets": (2, _list_offsets),
    "Fetch": (
        1,
        lambda v: [
            {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "isolation_level": iso,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": TOPIC,
                        "topic_id": None,
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": offset,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": 1 << 20,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            }
            for offset in (99, 5)
            for iso in (0, 1)
        ],
    ),  # out of range; at the end (nothing to read)
    "CreateTopics errors": (
        19,
        lambda v: [
            {
                "topics": [
                    {"name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                ],
                "timeout": 5000,
                "validate_only": True,
            },
            {
                "topics": [
                    {
                        "name": "bad name!",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 5000,
                "validate_only": True,
            },
            {
                "topics": [
                    {
                        "name": "zero-parts",
                        "num_partitions": 0,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 5000,
                "validate_only": True,
            },
            {
                "topics": [
                    {
                        "name": "bad-config",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": "retention.ms", "value": "soon"}],
                    }
                ],
                "timeout": 5000,
                "validate_only": True,
            },
        ],
    ),
    "DeleteTopics unknown": (
        20,
        lambda v: [
            {
                "topic_names": ["no-such-topic"],
                "topics": [{"name": "no-such-topic", "topic_id": uuid.UUID(int=0)}],
                "timeout": 5000,
            }
        ],
    ),
    "FindCoordinator": (10, lambda v: [{"key": "g1", "key_type": 0, "coordinator_keys": ["g1"]}]),
    "DescribeGroups unknown": (15, lambda v: [{"groups": ["no-such-group"], "include_authorized_operations": False}]),
    "ConsumerGroupHeartbeat": (68, lambda v: _consumer_heartbeats(v)),
    "StreamsGroupHeartbeat": (88, lambda v: _streams_heartbeats(v)),
    "StreamsGroupHeartbeat, then the group described": (
        89,
        lambda v: [
            {"group_ids": [f"diff-sg-{v}"], "include_authorized_operations": False},
            {"group_ids": ["no-such-group", ""], "include_authorized_operations": False},
        ],
    ),
    "StreamsGroupHeartbeat, then DescribeGroups": (
        15,
        lambda v: [{"groups": [f"diff-sg-{n}" for n in (0,)], "include_authorized_operations": False}],
    ),
    "StreamsGroupHeartbeat, then ListGroups": (
        16,
        lambda v: [{"states_filter": ["not_ready"] if v >= 4 else [], "types_filter": ["streams"] if v >= 5 else []}],
    ),
    "ConsumerGroupDescribe unknown": (
        69,
        lambda v: [{"group_ids": ["no-such-group"], "include_authorized_operations": False}],
    ),
    "OffsetFetch unknown group": (
        9,
        lambda v: [
            {
                "group_id": "no-such-group",
                "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                "groups": [
                    {
                        "group_id": "no-such-group",
                        "member_id": None,
                        "member_epoch": -1,
                        "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                    }
                ],
                "require_stable": False,
            }
        ],
    ),
    "DescribeConfigs unknown topic": (
        32,
        lambda v: [
            {
                "resources": [{"resource_type": 2, "resource_name": "no-such-topic", "configuration_keys": None}],
                "include_synonyms": False,
                "include_documentation": False,
            }
        ],
    ),
    "DescribeConfigs topic keys": (
        32,
        lambda v: [
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": TOPIC,
                        "configuration_keys": [
                            "retention.ms",
                            "retention.bytes",
                            "cleanup.policy",
                            "segment.bytes",
                            "max.message.bytes",
                            "message.timestamp.type",
                            "min.insync.replicas",
                            "compression.type",
                        ],
                    }
                ],
                "include_synonyms": False,
                "include_documentation": False,
            }
        ],
    ),
    "DeleteRecords": (
        21,
        lambda v: [
            {"topics": [{"name": TOPIC, "partitions": [{"partition_index": 1, "offset": 2}]}], "timeout": 5000},
            {"topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": 99}]}], "timeout": 5000},
        ],
    ),
    "ListGroups": (16, lambda v: [{"states_filter": [], "types_filter": []}]),
    "DescribeTopicPartitions": (
        75,
        lambda v: [
            {"topics": [{"name": TOPIC}, {"name": "no-such-topic"}], "response_partition_limit": 1, "cursor": None}
        ],
    ),
    "DescribeLogDirs": (35, lambda v: [{"topics": [{"topic": TOPIC, "partitions": [0, 1]}]}]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_answer_as_kafka(pair, case):
    api_key, build = CASES[case]
    versions = _common_versions(pair, api_key)
    assert versions, f"{case}: no version both brokers serve"
    findings = []
    for v in versions:
        per_broker = build.__code__.co_argcount == 2
        requests = {name: build(v, c) if per_broker else build(v) for name, c in pair.items()}
        for i in range(len(requests["kafka"])):
            answers, answers_raw = {}, {}
            for name, c in pair.items():
                req = requests[name][i]
                cls = request_schema(api_key, v)
                sent = req
                if isinstance(req.get("topics"), list):  # TOPIC by each broker's own id where asked (None)
                    sent = {
                        **req,
                        "topics": [
                            {**t, "topic_id": c.topic_ids[TOPIC]}
                            if isinstance(t, dict)
                            and "topic_id" in t
                            and t["topic_id"] is None
                            and TOPIC in (t.get("topic"), t.get("name"))
                            else t
                            for t in req["topics"]
                        ],
                    }
                answers_raw[name] = control.to_plain(c.request(api_key, _fit(cls, sent), version=v))
                answers[name] = normalize(answers_raw[name])
            found = differences(api_key, v, answers["kafka"], answers["tidelog"])
            if found:  # the free-text messages help reading a finding (they are not compared)
                found.append(
                    f"messages: kafka {_messages(answers_raw['kafka'])} tidelog {_messages(answers_raw['tidelog'])}"
                )
            findings += [f"{case} v{v} request {i}: {d}" for d in found]
    assert not findings, "\n".join(findings)


def differences(api_key: int, version: int, kafka, tidelog) -> list[str]:
    """Where two normalized answers differ, leaving out order Kafka does not define and the KNOWN
    differences (CODES_ONLY APIs: their error codes only)."""
    a, b = _sorted_lists(kafka), _sorted_lists(tidelog)
    if api_key in CODES_ONLY:
        a, b = a.get("error_code"), b.get("error_code")
    return [
        d
        for d in diff(a, b)
        if (api_key, version, d.split(":")[0]) not in KNOWN and (api_key, None, d.split(":")[0]) not in KNOWN
    ]


def _messages(value) -> list[str]:
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "error_message" and v:
                out.append(v)
            else:
                out += _messages(v)
    elif isinstance(value, list):
        for v in value:
            out += _messages(v)
    return out


def _fit(cls, data):
    """The request dict limited to the fields this version has (builders name every version's)."""
    import dataclasses

    if isinstance(data, dict):
        names = {f.name: f for f in dataclasses.fields(cls)}
        out = {}
        plan = {p[0]: p for p in control._plan(cls)}
        for k, v in data.items():
            if k not in names:
                continue
            entity = plan[k][3]
            if entity is not None and isinstance(v, list):
                out[k] = [_fit(entity, x) for x in v]
            elif entity is not None and isinstance(v, dict):
                out[k] = _fit(entity, v)
            else:
                out[k] = v
        return out
    return data


def test_apis_kafka_serves_and_tidelog_does_not_are_listed_in_the_readme(pair):
    """Every API Kafka 4.3.1 advertises that tidelog does not is named in the README's list."""
    from tidelog.wire.apis import ApiKey

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("APIs Apache Kafka serves that tidelog does not", 1)
    assert len(section) == 2, "README lacks the list of APIs Kafka serves that tidelog does not"
    missing = sorted(set(pair["kafka"].versions) - set(pair["tidelog"].versions))
    text = section[1][:6000]
    unlisted = [
        ApiKey(k).name for k in missing if "".join(w.capitalize() for w in ApiKey(k).name.split("_")) not in text
    ]
    assert not unlisted, f"not in the README's list: {unlisted}"
