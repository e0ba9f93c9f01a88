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
SHARE_KEY = "diff-sg:AAAAAAAAAAAAAAAAAAAAAQ:0"  # a share coordinator key: group, topic id, partition
NO_SUCH_ID = uuid.UUID(int=7)  # a topic id neither broker knows
CG_MEMBER = str(uuid.UUID(int=77))  # a consumer group member both brokers know (diff-cgo)

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
    (
        76,
        None,
        "assignment.topic_partitions",
    ): "a share group's new partitions: Kafka writes their share state after answering and assigns "
    "them at a later heartbeat (one heartbeat interval on); tidelog writes it before answering and "
    "assigns them in the join's answer",
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
            c.topic_ids = _topic_ids(c, TOPIC, SMALL)
            _prepare_groups_and_txns(c)
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


NO_SUCH_TOPIC_ID = uuid.UUID(int=0xD1FF)


def _topic_ids(c: KafkaClient, *names: str) -> dict[str, uuid.UUID]:
    """The broker's ids of `names`, once its metadata has them all (a topic just created may not be
    in Kafka's metadata yet: an id of zeros would make v13 requests UNKNOWN_TOPIC_ID there)."""
    deadline = time.monotonic() + 30
    while True:
        md = c.request(3, {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": False}, version=12)
        ids = {t.name: t.topic_id for t in md.topics if not t.error_code.value and t.topic_id != uuid.UUID(int=0)}
        if len(ids) == len(names) or time.monotonic() > deadline:
            return ids
        time.sleep(0.1)


def _produce(
    topic: str, records: bytes, partition: int = 0, txn_id: str | None = None, c: KafkaClient | None = None
) -> dict:
    """A Produce request; v13 names the topic by `c`'s (the broker's) id for it (an unknown one
    by an id no topic has)."""
    name = {"name": topic}
    if c is not None:
        name["topic_id"] = c.topic_ids.get(topic, NO_SUCH_TOPIC_ID)
    return {
        "transactional_id": txn_id,
        "acks": -1,
        "timeout": 10_000,
        "topic_data": [{**name, "partition_data": [{"index": partition, "records": records}]}],
    }


def _produce_errors(v: int, c: KafkaClient) -> list[dict]:
    """Produce requests that must fail, built with this broker's own producer id (and, v13, its
    topic ids)."""

    def idem(seq: int, epoch_shift: int = 0, **kw) -> bytes:
        return build_batch(
            [Record(b"k", b"v", T0)], producer_id=c.pid, producer_epoch=c.epoch + epoch_shift, base_sequence=seq, **kw
        )

    return [
        _produce(SMALL, build_batch([Record(b"k", b"x" * 2000, T0)]), c=c),  # larger than max.message.bytes
        _produce(TOPIC, idem(0), partition=1, c=c),  # the first batch of this producer: accepted
        _produce(TOPIC, idem(5), partition=1, c=c),  # a gap in the sequence
        _produce(TOPIC, idem(1, epoch_shift=3), partition=1, c=c),  # an epoch ahead of the broker's
        _produce(
            TOPIC,
            build_batch(
                [Record(b"k", b"v", T0)], producer_id=987_654, producer_epoch=0, base_sequence=0, transactional=True
            ),
            partition=1,
            txn_id="no-such-txn",
            c=c,
        ),
        _produce("no-such-topic-p", build_batch([Record(b"k", b"v", T0)]), c=c),  # v13: UNKNOWN_TOPIC_ID
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
    # Kafka creates __share_group_state on the first share key (FindCoordinator v6)
    while c.request(10, {"key_type": 2, "coordinator_keys": [SHARE_KEY]}, version=6).coordinators[0].error_code.value:
        assert time.monotonic() < deadline
        time.sleep(0.3)


def _prepare_groups_and_txns(c: KafkaClient) -> None:
    """Offsets committed by a simple consumer (group diff-of), a consumer group with one member
    (diff-cgo: its epoch in `c.cg_epoch`), and two transactional ids (Empty transactions)."""
    commit = c.request(
        8,
        {
            "group_id": "diff-of",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": TOPIC, "partitions": [_committed(0), _committed(1)]}],
        },
        version=9,
    )
    assert all(p.error_code.value == 0 for t in commit.topics for p in t.partitions), commit
    joined = c.request(68, {**_consumer_heartbeats(1)[-1], "group_id": "diff-cgo", "member_id": CG_MEMBER}, version=1)
    assert joined.error_code.value == 0, joined
    c.cg_epoch = joined.member_epoch
    deadline = time.monotonic() + 60
    for txn_id in ("diff-txn-1", "other-txn-1"):
        while True:
            init = c.request(
                22,
                {"transactional_id": txn_id, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
                version=4,
            )
            if init.error_code.value not in (14, 15, 16) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert init.error_code.value == 0, init


def _committed(partition: int, offset: int = 3) -> dict:
    return {
        "partition_index": partition,
        "committed_offset": offset,
        "committed_leader_epoch": -1,
        "committed_metadata": "m",
    }


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
    # the other sentinels at every version (each before its version: UNSUPPORTED_VERSION), and one
    # that is no sentinel: -3 max timestamp (v7), -4 earliest local (v8), -5 latest tiered (v9),
    # -6 earliest pending upload (v11), -7
    for ts in (-3, -4, -5, -6, -7):
        parts.append({"partition_index": 1, "timestamp": ts, "current_leader_epoch": -1, "max_num_offsets": 1})
    # one timestamp per partition and request (Kafka refuses repeats): one partition each
    return [
        {"replica_id": -1, "isolation_level": 0, "timeout": 1000, "topics": [{"name": TOPIC, "partitions": [p]}]}
        for p in parts
    ] + [
        {"replica_id": -1, "isolation_level": 1, "topics": [{"name": "no-such-topic", "partitions": [parts[0]]}]},
        {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "no-such-topic", "partitions": [parts[-1]]}]},
    ]


def _offset_commits(v: int) -> list[dict]:
    """A simple consumer's commits (group diff-oc): a partition that exists, one that does not, a
    topic this broker does not know (by name before v10, by id from v10); then a consumer group
    member's commit at an epoch newer than its own (STALE_MEMBER_EPOCH, v9+; before v9 the
    consumer protocol's member is refused UNSUPPORTED_VERSION)."""
    topics = [
        {"name": TOPIC, "topic_id": None, "partitions": [_committed(0), _committed(99)]},
        {"name": "no-such-topic", "topic_id": NO_SUCH_ID, "partitions": [_committed(0)]},
    ]
    base = {"generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None, "retention_time": -1}
    return [
        {**base, "group_id": "diff-oc", "topics": topics},
        {**base, "group_id": "diff-cgo", "member_id": CG_MEMBER, "generation_id_or_member_epoch": 99, "topics": topics},
    ]


def _offset_fetches(v: int, c: KafkaClient) -> list[dict]:
    """diff-of's offsets: named partitions (one never committed, one of a topic neither broker
    knows: UNKNOWN_TOPIC_ID by id in v10), then all of them (v2+); diff-cgo's member checks (v9+)."""

    def group(group_id: str, topics, member: str | None = None, epoch: int = -1) -> dict:
        one = {"group_id": group_id, "member_id": member, "member_epoch": epoch, "topics": topics}
        return {"group_id": group_id, "topics": topics, "groups": [one], "require_stable": False}

    named = [
        {"name": TOPIC, "topic_id": c.topic_ids[TOPIC], "partition_indexes": [0, 1, 7]},
        {"name": "no-such-topic", "topic_id": NO_SUCH_ID, "partition_indexes": [0]},
    ]
    out = [group("diff-of", named)]
    if v >= 2:
        out.append(group("diff-of", None))
    mine = [{"name": TOPIC, "topic_id": c.topic_ids[TOPIC], "partition_indexes": [0]}]
    out += [
        group("diff-cgo", mine, CG_MEMBER, c.cg_epoch),
        group("diff-cgo", mine, CG_MEMBER, c.cg_epoch + 5),  # STALE_MEMBER_EPOCH (v9+)
        group("diff-cgo", mine, "no-such-member", c.cg_epoch),  # UNKNOWN_MEMBER_ID (v9+)
    ]
    return out


def _join_group_errors(v: int) -> list[dict]:
    base = {
        "group_id": "diff-jg",
        "session_timeout": 10_000,
        "rebalance_timeout": 10_000,
        "member_id": "no-such-member",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": "difference test",
    }
    return [base, {**base, "session_timeout": 1}]  # UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT


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


def _share_heartbeats(v: int) -> list[dict]:
    """KIP-932: refused heartbeats, then a member joining a share group of its own."""

    def hb(group: str, member: str, epoch: int, topics: list[str] | None = None) -> dict:
        return {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "rack_id": None,
            "subscribed_topic_names": topics,
        }

    member = str(uuid.UUID(int=v + 100))
    return [
        hb(f"diff-sg-{v}", "", 0, [TOPIC]),  # INVALID_REQUEST: no member id
        hb(f"diff-sg-{v}", member, 0),  # INVALID_REQUEST: no subscription in the first request
        hb("no-such-share-group", member, 3),  # GROUP_ID_NOT_FOUND
        hb(f"diff-sg-{v}", member, 0, [TOPIC]),  # joins
    ]


def _share_offsets(v: int) -> list[dict]:
    """DescribeShareGroupOffsets of a group without state, of unknown topics, of all topics."""
    return [
        {"groups": [{"group_id": "no-such-share-group", "topics": [{"topic_name": TOPIC, "partitions": [0, 1]}]}]},
        {
            "groups": [
                {"group_id": "no-such-share-group", "topics": [{"topic_name": "no-such-topic", "partitions": [0]}]}
            ]
        },
        {"groups": [{"group_id": "no-such-share-group", "topics": None}, {"group_id": "g2", "topics": []}]},
    ]


def _alter_share_offsets(v: int) -> list[dict]:
    """AlterShareGroupOffsets of a new (empty) group: a known partition, one past the count, an
    unknown topic; then DescribeShareGroupOffsets sees it (next case)."""
    return [
        {
            "group_id": f"diff-sga-{v}",
            "topics": [
                {
                    "topic_name": TOPIC,
                    "partitions": [
                        {"partition_index": 0, "start_offset": 1},
                        {"partition_index": 9, "start_offset": 0},
                    ],
                },
                {"topic_name": "no-such-topic", "partitions": [{"partition_index": 0, "start_offset": 0}]},
            ],
        },
    ]


def _delete_share_offsets(v: int) -> list[dict]:
    """DeleteShareGroupOffsets: a group that does not exist; a group's offsets (made by an alter),
    a topic it has none of, an unknown topic; the same again (nothing left)."""
    group = f"diff-sgd-{v}"
    return [
        {"group_id": "no-such-share-group", "topics": [{"topic_name": TOPIC}]},
        {"group_id": group, "topics": [{"topic_name": TOPIC}, {"topic_name": SMALL}, {"topic_name": "no-such-topic"}]},
        {"group_id": group, "topics": [{"topic_name": TOPIC}]},
    ]


def _delete_share_offsets_prepared(v: int, c) -> list[dict]:
    c.request(
        91,
        {
            "group_id": f"diff-sgd-{v}",
            "topics": [{"topic_name": TOPIC, "partitions": [{"partition_index": 0, "start_offset": 0}]}],
        },
        version=0,
    )
    return _delete_share_offsets(v)


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
                                "replica_directory_id": uuid.UUID(int=5),  # v17+: a follower's, unused
                                "high_watermark": 3,  # v18+: a follower's, unused
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
    "FindCoordinator": (
        10,
        lambda v: [
            {"key": "g1", "key_type": 0, "coordinator_keys": ["g1"]},
            # share keys: v6+ (INVALID_REQUEST before); a key SharePartitionKey cannot parse
            {"key": SHARE_KEY, "key_type": 2, "coordinator_keys": [SHARE_KEY, "diff-sg:no-id:0"]},
            {"key": "g1", "key_type": 9, "coordinator_keys": ["g1"]},  # no such key type
        ],
    ),
    "JoinGroup errors": (11, _join_group_errors),
    "DescribeCluster": (
        60,
        lambda v: [
            {"include_cluster_authorized_operations": False, "endpoint_type": 1, "include_fenced_brokers": fenced}
            for fenced in (False, True)
        ],
    ),
    "ListTransactions": (
        66,
        lambda v: [
            {"state_filters": [], "producer_id_filters": [], "duration_filter": -1, "transactional_id_pattern": p}
            for p in (None, "", "diff-.*", "diff", "(unclosed")
        ],
    ),
    "OffsetCommit": (8, _offset_commits),
    "OffsetFetch": (9, _offset_fetches),
    "DescribeGroups unknown": (15, lambda v: [{"groups": ["no-such-group"], "include_authorized_operations": False}]),
    "ConsumerGroupHeartbeat": (68, lambda v: _consumer_heartbeats(v)),
    "ShareGroupHeartbeat": (76, _share_heartbeats),
    "ShareGroupDescribe unknown": (
        77,
        lambda v: [{"group_ids": ["no-such-share-group"], "include_authorized_operations": False}],
    ),
    "DescribeShareGroupOffsets": (90, _share_offsets),
    "AlterShareGroupOffsets": (91, _alter_share_offsets),
    "DeleteShareGroupOffsets": (92, _delete_share_offsets_prepared),
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


# ---- transaction version 2 (KIP-890 part 2) ------------------------------------------------


def test_transaction_version_feature_as_kafka(pair):
    """ApiVersions v3 and v4 name transaction.version as Kafka 4.3.1 does: supported 0-2 (v4 only:
    below v4 a feature whose lowest level is 0 is left out), finalized at 2 (a new cluster)."""
    findings = []
    for v in (3, 4):
        seen = {}
        for name, c in pair.items():
            r = control.to_plain(
                c.request(18, {"client_software_name": "diff", "client_software_version": "1"}, version=v)
            )
            seen[name] = (
                [f for f in r["supported_features"] if f["name"] == "transaction.version"],
                [f for f in r["finalized_features"] if f["name"] == "transaction.version"],
                r["finalized_features_epoch"] >= 0,
            )
        if seen["kafka"] != seen["tidelog"]:
            findings.append(f"ApiVersions v{v}: kafka {seen['kafka']} vs tidelog {seen['tidelog']}")
    assert not findings, "\n".join(findings)


def test_transaction_version_2_as_kafka(pair):
    """The same transaction version 2 conversation with both brokers, answer by answer: no
    AddPartitionsToTxn or AddOffsetsToTxn (Produce v12/v13 and TxnOffsetCommit v5 add), EndTxn v5
    bumping the epoch, its retry, the ended epoch's late requests, an abort with nothing added,
    EndTxn v4 (no bump), AddOffsetsToTxn v4, AddPartitionsToTxn v5 verifying, DescribeTransactions."""
    txn_id, group = "diff-tv2", "diff-tv2-g"
    state: dict[str, dict] = {name: {} for name in pair}

    def init(c: KafkaClient) -> dict:
        deadline = time.monotonic() + 60
        while True:
            r = c.request(
                22,
                {"transactional_id": txn_id, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
                version=5,
            )
            if r.error_code.value not in (14, 15, 51) or time.monotonic() > deadline:
                return control.to_plain(r)
            time.sleep(0.3)

    def batch(c: KafkaClient, seq: int, epoch_shift: int = 0) -> bytes:
        s = state[c.name]
        return build_batch(
            [Record(b"k", b"tv2-%d" % seq, T0)],
            producer_id=s["pid"],
            producer_epoch=s["epoch"] + epoch_shift,
            base_sequence=seq,
            transactional=True,
        )

    def end(c: KafkaClient, commit: bool, epoch_shift: int = 0) -> dict:
        s = state[c.name]
        return {
            "transactional_id": txn_id,
            "producer_id": s["pid"],
            "producer_epoch": s["epoch"] + epoch_shift,
            "committed": commit,
        }

    def offsets(c: KafkaClient, epoch_shift: int = 0) -> dict:
        s = state[c.name]
        return {
            "transactional_id": txn_id,
            "group_id": group,
            "producer_id": s["pid"],
            "producer_epoch": s["epoch"] + epoch_shift,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 3,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        }

    def settled(c: KafkaClient) -> dict:
        """DescribeTransactions once the markers are written (Kafka writes them after EndTxn)."""
        deadline = time.monotonic() + 30
        while True:
            [st] = control.to_plain(c.request(65, {"transactional_ids": [txn_id]}, version=0))["transaction_states"]
            if not st["transaction_state"].startswith("Prepare") or time.monotonic() > deadline:
                st.pop("transaction_start_time", None)  # each broker's clock
                return st
            time.sleep(0.2)

    steps = [
        ("Produce v12: the partition joins", 0, 12, lambda c: _produce(TOPIC, batch(c, 0), txn_id=txn_id, c=c)),
        ("Produce v13 by topic id", 0, 13, lambda c: _produce(TOPIC, batch(c, 1), txn_id=txn_id, c=c)),
        ("TxnOffsetCommit v5: the group's partition joins", 28, 5, offsets),
        ("EndTxn v5 commit", 26, 5, lambda c: end(c, True)),
        ("DescribeTransactions", 65, 0, settled),  # Kafka's markers written (a retry before: CONCURRENT_TRANSACTIONS)
        ("EndTxn v5 commit retried", 26, 5, lambda c: end(c, True)),
        ("Produce v12 of the ended epoch", 0, 12, lambda c: _produce(TOPIC, batch(c, 2), txn_id=txn_id, c=c)),
        ("TxnOffsetCommit v5 of the ended epoch", 28, 5, offsets),
        ("EndTxn v5 abort with nothing added", 26, 5, lambda c: end(c, False, 1)),
        ("EndTxn v5 commit in CompleteAbort", 26, 5, lambda c: end(c, True, 2)),
        ("AddOffsetsToTxn v4", 25, 4, lambda c: {**end(c, True, 2), "group_id": group}),
        ("EndTxn v4 abort (no bump)", 26, 4, lambda c: end(c, False, 2)),
        ("DescribeTransactions", 65, 0, settled),
        (
            "AddPartitionsToTxn v5 verify-only",
            24,
            5,
            lambda c: {
                "transactions": [
                    {
                        "transactional_id": txn_id,
                        "producer_id": state[c.name]["pid"],
                        "producer_epoch": state[c.name]["epoch"] + 2,
                        "verify_only": True,
                        "topics": [{"name": TOPIC, "partitions": [0]}],
                    }
                ]
            },
        ),
    ]
    findings = []
    for name, c in pair.items():
        c.name = name
        r = init(c)
        assert r["error_code"] == 0, (name, r)
        state[name] = {"pid": r["producer_id"], "epoch": r["producer_epoch"]}
    for what, api_key, v, build in steps:
        answers = {}
        for name, c in pair.items():
            data = build(c)
            if api_key == 65:
                answers[name] = normalize(data)
                continue
            answers[name] = normalize(
                control.to_plain(c.request(api_key, _fit(request_schema(api_key, v), data), version=v))
            )
        findings += [f"{what}: {d}" for d in diff(_sorted_lists(answers["kafka"]), _sorted_lists(answers["tidelog"]))]
    assert not findings, "\n".join(findings)


# ---- online migration between a classic and a consumer group (KIP-848) ----------------------


def _embedded(topics: list[str], owned: list[tuple[str, list[int]]] | None = None, assignment: bool = False) -> bytes:
    """A ConsumerProtocolSubscription v1 (topics, no user data, owned partitions), or with
    `assignment` a ConsumerProtocolAssignment v1 of `owned`."""
    import struct

    def s(x: str) -> bytes:
        return struct.pack(">h", len(x)) + x.encode()

    def tps(items) -> bytes:
        return struct.pack(">i", len(items)) + b"".join(
            s(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps) for t, ps in items
        )

    if assignment:
        return struct.pack(">h", 1) + tps(owned or []) + struct.pack(">i", -1)
    names = struct.pack(">i", len(topics)) + b"".join(s(t) for t in topics)
    return struct.pack(">h", 1) + names + struct.pack(">i", -1) + tps(owned or [])


def test_online_migration_as_kafka(pair):
    """The same online migration with both brokers (their default policy, bidirectional), answer by
    answer: a classic member owning both partitions, a member of the consumer protocol joining (the
    group is upgraded), the group described, the classic member told to rejoin, committing at its
    generation, rejoining at the new epoch and syncing its share, the consumer member leaving (the
    group is downgraded back to a classic group, rebalancing)."""
    group = "diff-mig"
    cg_member = str(uuid.UUID(int=0x313))
    ids: dict[str, dict[str, str]] = {name: {} for name in pair}
    sub = _embedded([TOPIC])

    def join(c: KafkaClient) -> dict:
        return {
            "group_id": group,
            "session_timeout": 30_000,
            "rebalance_timeout": 30_000,
            "member_id": ids[c.name].get("classic", ""),
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": sub}],
        }

    def sync(c: KafkaClient, generation: int, assign: bool = False) -> dict:
        me = ids[c.name]["classic"]
        given = [{"member_id": me, "assignment": _embedded([], [(TOPIC, [0, 1])], assignment=True)}] if assign else []
        return {
            "group_id": group,
            "generation_id": generation,
            "member_id": me,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": given,
        }

    def beat(c: KafkaClient, generation: int) -> dict:
        return {"group_id": group, "generation_id": generation, "member_id": ids[c.name]["classic"]}

    def cg(epoch: int) -> dict:
        return {
            "group_id": group,
            "member_id": cg_member,
            "member_epoch": epoch,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": 30_000 if epoch == 0 else -1,
            "subscribed_topic_names": [TOPIC] if epoch == 0 else None,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": [] if epoch >= 0 else None,
        }

    def commit(c: KafkaClient, generation: int) -> dict:
        return {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": ids[c.name]["classic"],
            "group_instance_id": None,
            "topics": [{"name": TOPIC, "partitions": [_committed(0)]}],
        }

    steps = [
        ("JoinGroup v5: the member id to use", 11, 5, join),
        ("JoinGroup v5: a classic group of one", 11, 5, join),
        ("SyncGroup v5: the leader assigns both partitions", 14, 5, lambda c: sync(c, 1, assign=True)),
        ("ConsumerGroupHeartbeat: a consumer member joins (upgrade)", 68, 1, lambda c: cg(0)),
        ("ConsumerGroupDescribe", 69, 1, lambda c: {"group_ids": [group], "include_authorized_operations": False}),
        ("DescribeGroups v5 of the consumer group", 15, 5, lambda c: {"groups": [group]}),
        ("Heartbeat v4: rejoin", 12, 4, lambda c: beat(c, 1)),
        ("Heartbeat v4 of a wrong generation", 12, 4, lambda c: beat(c, 5)),
        ("OffsetCommit v8 at the generation", 8, 8, lambda c: commit(c, 1)),
        ("OffsetCommit v8 ahead of it", 8, 8, lambda c: commit(c, 5)),
        ("JoinGroup v5: the classic member rejoins", 11, 5, join),
        ("SyncGroup v5: its share", 14, 5, lambda c: sync(c, 2)),
        ("Heartbeat v4: stable", 12, 4, lambda c: beat(c, 2)),
        ("ConsumerGroupHeartbeat: the consumer member takes the other", 68, 1, lambda c: cg(2)),
        (
            "ConsumerGroupDescribe, reconciled",
            69,
            1,
            lambda c: {"group_ids": [group], "include_authorized_operations": False},
        ),
        ("ConsumerGroupHeartbeat: it leaves (downgrade)", 68, 1, lambda c: cg(-1)),
        ("DescribeGroups v5 of the classic group again", 15, 5, lambda c: {"groups": [group]}),
        ("Heartbeat v4: rejoin the classic group", 12, 4, lambda c: beat(c, 2)),
    ]
    findings = []
    for name, c in pair.items():
        c.name = name
    for what, api_key, v, build in steps:
        answers = {}
        for name, c in pair.items():
            raw = control.to_plain(c.request(api_key, _fit(request_schema(api_key, v), build(c)), version=v))
            if api_key == 11 and raw.get("member_id"):
                ids[name].setdefault("classic", raw["member_id"])
            if api_key == 11:  # the leader is a member id, each broker's own
                raw["leader"] = "<the classic member>" if raw["leader"] == ids[name].get("classic") else raw["leader"]
            answers[name] = normalize(raw)
        findings += [f"{what}: {d}" for d in diff(_sorted_lists(answers["kafka"]), _sorted_lists(answers["tidelog"]))]
    assert not findings, "\n".join(findings)
