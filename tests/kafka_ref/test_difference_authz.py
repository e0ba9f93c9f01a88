"""Conformance by difference with an authorizer on: Apache Kafka 4.3.1 (StandardAuthorizer) and
tidelog, both with a SASL_PLAINTEXT listener, the same super user and the same user without any
ACL. That user sends the same requests to both; the answers are compared field by field with the
rules of test_difference.py (IGNORED fields, KNOWN differences). What is compared is what an
unauthorised client sees: which error code, on which level (request, topic, partition, group),
and what a listing leaves out."""

from __future__ import annotations

import time

import pytest
from broker_process import BrokerProcess, free_port
from kafka_process import KafkaProcess
from test_difference import T0, _common_versions, _fit, differences, normalize

from tidelog.log.records import Record, build_batch
from tidelog.wire import control
from tidelog.wire.schemas import request_schema

pytestmark = pytest.mark.interop

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
    'password="admin-secret" user_admin="admin-secret" user_bob="bob-secret";'
)
TOPIC = "authz-t"
AUTHZ = {
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
}


def _client(port: int, user: str, password: str):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
    from rawclient import api_versions, connect, sasl_plain

    c = connect(port)
    api_versions(c)
    r = sasl_plain(c, user, password)
    assert r.error_code.value == 0, r
    return c


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-authz"))
    kafka.overrides = {
        **AUTHZ,
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{kafka.port},CONTROLLER://127.0.0.1:{kafka.controller_port}",
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{kafka.port}",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "super.users": "User:admin;User:ANONYMOUS",  # ANONYMOUS: the KRaft controller's PLAINTEXT listener
    }
    kafka.client_config = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "admin",
        "sasl.password": "admin-secret",
    }
    port = free_port()
    tide = BrokerProcess(
        tmp_path_factory.mktemp("tidelog-authz") / "data",
        {
            **AUTHZ,
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
            "super.users": "User:admin",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
        },
        port=port,
    )
    kafka.start()
    tide.start()
    try:
        admins = {
            "kafka": _client(kafka.port, "admin", "admin-secret"),
            "tidelog": _client(tide.port, "admin", "admin-secret"),
        }
        for c in admins.values():
            r = c.request(
                19,
                {
                    "topics": [
                        {"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}
                    ],
                    "timeout": 20_000,
                    "validate_only": False,
                },
                version=5,
            )
            assert r.topics[0].error_code.value == 0, r
            records = build_batch([Record(b"k", b"v", T0)])
            for _ in range(100):  # Kafka's partition may not lead yet
                r = c.request(
                    0,
                    {
                        "transactional_id": None,
                        "acks": -1,
                        "timeout": 10_000,
                        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}],
                    },
                    version=9,
                )
                if r.responses[0].partition_responses[0].error_code.value == 0:
                    break
                time.sleep(0.2)
        for c in admins.values():
            _streams_setup(c)
        bobs = {"kafka": _client(kafka.port, "bob", "bob-secret"), "tidelog": _client(tide.port, "bob", "bob-secret")}
        for c in bobs.values():  # Kafka's ACLs take effect through its metadata log: wait for them
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                md = c.request(3, {"topics": [{"name": BOBS_IN}], "allow_auto_topic_creation": False}, version=9)
                if md.topics[0].error_code.value == 0:
                    break
                time.sleep(0.2)
        yield bobs
        for c in [*admins.values(), *bobs.values()]:
            c.close()
    finally:
        kafka.stop()
        tide.stop()
        kafka.cleanup()


BOBS_IN = "bobs-in"


def _streams_setup(admin) -> None:
    """For the streams group cases: bob may Read the group bobs-app and Describe topics named
    bobs-*, among them its source topic bobs-in; he may create no topic."""
    r = admin.request(
        19,
        {
            "topics": [
                {"name": BOBS_IN, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}
            ],
            "timeout": 20_000,
            "validate_only": False,
        },
        version=5,
    )
    assert r.topics[0].error_code.value == 0, r
    acl = {"principal": "User:bob", "host": "*", "permission_type": 3}  # ALLOW
    r = admin.request(
        30,
        {
            "creations": [
                {**acl, "resource_type": 3, "resource_name": "bobs-app", "resource_pattern_type": 3, "operation": 3},
                {**acl, "resource_type": 2, "resource_name": "bobs-", "resource_pattern_type": 4, "operation": 8},
            ]
        },
        version=3,
    )
    assert all(x.error_code.value == 0 for x in r.results), r
    deadline = time.monotonic() + 60  # Kafka's group coordinator loads its partitions first
    while True:
        found = admin.request(10, {"key": "bobs-app", "key_type": 0}, version=3).error_code.value
        described = admin.request(89, {"group_ids": ["bobs-app"], "include_authorized_operations": False}, version=0)
        if not found and described.groups[0].error_code.value == 69:  # GROUP_ID_NOT_FOUND: loaded
            break
        assert time.monotonic() < deadline, described
        time.sleep(0.3)


def _streams_heartbeat(group: str, source: str) -> dict:
    info = {"partitions": 0, "replication_factor": 0, "topic_configs": []}
    return {
        "group_id": group,
        "member_id": "bob-1",
        "member_epoch": 0,
        "endpoint_information_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30_000,
        "topology": {
            "epoch": 0,
            "subtopologies": [
                {
                    "subtopology_id": "0",
                    "source_topics": [source],
                    "source_topic_regex": [],
                    "state_changelog_topics": [
                        {**info, "name": "bobs-app-changelog"},
                        {**info, "name": "bobs-app-other-changelog"},
                    ],
                    "repartition_sink_topics": [],
                    "repartition_source_topics": [],
                    "copartition_groups": [],
                }
            ],
        },
        "active_tasks": [],
        "standby_tasks": [],
        "warmup_tasks": [],
        "process_id": "p",
        "user_endpoint": None,
        "client_tags": [],
        "task_offsets": None,
        "task_end_offsets": None,
        "shutdown_application": False,
    }


def _records() -> bytes:
    return build_batch([Record(b"k", b"v", T0)])


CASES = {
    "Metadata, named topic": (
        3,
        lambda v: [
            {
                "topics": [{"name": TOPIC}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
        ],
    ),
    "Metadata, all topics (filtered)": (
        3,
        lambda v: [
            {
                "topics": None if v >= 1 else [],  # v0: [] is "all"
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
        ],
    ),
    "Produce": (
        0,
        lambda v: [
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 5000,
                "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": _records()}]}],
            }
        ],
    ),
    "ListOffsets": (
        2,
        lambda v: [
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": TOPIC,
                        "partitions": [
                            {"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1, "max_num_offsets": 1}
                        ],
                    }
                ],
            }
        ],
    ),
    "CreateTopics": (
        19,
        lambda v: [
            {
                "topics": [
                    {
                        "name": "bob-topic",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 5000,
                "validate_only": False,
            }
        ],
    ),
    "DeleteTopics": (
        20,
        lambda v: [{"topic_names": [TOPIC], "topics": [{"name": TOPIC, "topic_id": None}], "timeout": 5000}],
    ),
    "DescribeConfigs": (
        32,
        lambda v: [
            {
                "resources": [{"resource_type": 2, "resource_name": TOPIC, "configuration_keys": ["retention.ms"]}],
                "include_synonyms": False,
                "include_documentation": False,
            }
        ],
    ),
    "IncrementalAlterConfigs": (
        44,
        lambda v: [
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": TOPIC,
                        "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
                    }
                ],
                "validate_only": False,
            }
        ],
    ),
    "CreatePartitions": (
        37,
        lambda v: [
            {"topics": [{"name": TOPIC, "count": 4, "assignments": None}], "timeout": 5000, "validate_only": False}
        ],
    ),
    "DeleteRecords": (
        21,
        lambda v: [{"topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": 1}]}], "timeout": 5000}],
    ),
    "FindCoordinator group": (10, lambda v: [{"key": "bobs-group", "key_type": 0, "coordinator_keys": ["bobs-group"]}]),
    "FindCoordinator transaction": (
        10,
        lambda v: [{"key": "bobs-txn", "key_type": 1, "coordinator_keys": ["bobs-txn"]}],
    ),
    "OffsetFetch": (
        9,
        lambda v: [
            {
                "group_id": "bobs-group",
                "require_stable": False,
                # null ("every partition") only from v2
                "topics": None if v >= 2 else [{"name": TOPIC, "partition_indexes": [0]}],
                "groups": [{"group_id": "bobs-group", "topics": None}],
            }
        ],
    ),
    "DescribeGroups": (15, lambda v: [{"groups": ["bobs-group"], "include_authorized_operations": False}]),
    "ListGroups": (16, lambda v: [{"states_filter": [], "types_filter": []}]),
    "InitProducerId transactional": (
        22,
        lambda v: [
            {"transactional_id": "bobs-txn", "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1}
        ],
    ),
    "InitProducerId idempotent": (
        22,
        lambda v: [{"transactional_id": None, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1}],
    ),
    "DescribeAcls": (
        29,
        lambda v: [
            {
                "resource_type_filter": 1,
                "resource_name_filter": None,
                "pattern_type_filter": 1,
                "principal_filter": None,
                "host_filter": None,
                "operation": 1,
                "permission_type": 1,
            }
        ],
    ),
    "CreateAcls": (
        30,
        lambda v: [
            {
                "creations": [
                    {
                        "resource_type": 2,
                        "resource_name": TOPIC,
                        "resource_pattern_type": 3,
                        "principal": "User:bob",
                        "host": "*",
                        "operation": 3,
                        "permission_type": 3,
                    }
                ]
            }
        ],
    ),
    "DescribeLogDirs": (35, lambda v: [{"topics": [{"topic": TOPIC, "partitions": [0]}]}]),
    # streams groups: Read on the group, then Describe on the topology's topics, then Create for the
    # internal topics (refused: told in the MISSING_INTERNAL_TOPICS status); then the description
    "StreamsGroupHeartbeat": (
        88,
        lambda v: [
            _streams_heartbeat("bobs-other-app", BOBS_IN),  # GROUP_AUTHORIZATION_FAILED
            _streams_heartbeat("bobs-app", TOPIC),  # TOPIC_AUTHORIZATION_FAILED
            _streams_heartbeat("bobs-app", BOBS_IN),  # joins; may not create the internal topics
        ],
    ),
    "StreamsGroupHeartbeat, then the groups described": (
        89,
        lambda v: [{"group_ids": ["bobs-app", "bobs-other-app"], "include_authorized_operations": True}],
    ),
    "DescribeProducers": (61, lambda v: [{"topics": [{"name": TOPIC, "partition_indexes": [0]}]}]),
    "ShareGroupHeartbeat": (
        76,
        lambda v: [
            {
                "group_id": "bobs-group",
                "member_id": "m-bob-0000000000001",
                "member_epoch": 0,
                "rack_id": None,
                "subscribed_topic_names": [TOPIC],
            }
        ],
    ),
    "ShareGroupDescribe": (77, lambda v: [{"group_ids": ["bobs-group"], "include_authorized_operations": False}]),
    "DescribeShareGroupOffsets": (
        90,
        lambda v: [
            {"groups": [{"group_id": "bobs-group", "topics": [{"topic_name": TOPIC, "partitions": [0]}]}]},
            {"groups": [{"group_id": "bobs-group", "topics": None}]},
        ],
    ),
    "AlterShareGroupOffsets": (
        91,
        lambda v: [
            {
                "group_id": "bobs-group",
                "topics": [{"topic_name": TOPIC, "partitions": [{"partition_index": 0, "start_offset": 0}]}],
            }
        ],
    ),
    "DeleteShareGroupOffsets": (92, lambda v: [{"group_id": "bobs-group", "topics": [{"topic_name": TOPIC}]}]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unauthorised_user_gets_the_same_answer_as_from_kafka(pairs, case):
    api_key, build = CASES[case]
    versions = _common_versions(pairs, api_key)
    assert versions, f"{case}: no version both brokers serve"
    findings = []
    for v in versions:
        cls = request_schema(api_key, v)
        for i, req in enumerate(build(v)):
            answers = {
                name: normalize(control.to_plain(c.request(api_key, _fit(cls, req), version=v)))
                for name, c in pairs.items()
            }
            findings += [
                f"{case} v{v} request {i}: {d}" for d in differences(api_key, v, answers["kafka"], answers["tidelog"])
            ]
    assert not findings, "\n".join(findings)
