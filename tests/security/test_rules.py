"""The authorization table: every routed API has a rule, and the rules answer refusals with
Kafka's error codes in the shape of each API's response (transactions included, whether or not
their handlers are routed in this build)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tidelog.core.acls import AclBinding, Permission
from tidelog.core.acls import Operation as Op
from tidelog.core.acls import PatternType as P
from tidelog.core.acls import ResourceType as R
from tidelog.core.config import load_config
from tidelog.server.broker import Broker
from tidelog.server.router import NO_RESPONSE
from tidelog.server.security.rules import RULES, Partial, Reply
from tidelog.server.security.session import Session
from tidelog.wire import control
from tidelog.wire.frame import FrameDecoder
from tidelog.wire.schemas import request_schema


@pytest.fixture
def broker(tmp_path):
    config = load_config(
        None,
        [
            f"log.dirs={tmp_path}",
            "listeners=SASL_PLAINTEXT://127.0.0.1:0",
            "authorizer.class.name=tidelog",
            "super.users=User:root",
        ],
    )
    return Broker(config)


def session_for(broker, principal: str) -> Session:
    conn = SimpleNamespace(
        peer=("10.1.1.1", 5555),
        transport=None,
        listener_name="SASL_PLAINTEXT",
        close_with=lambda reason: None,
        decoder=FrameDecoder(10**8),
    )
    s = broker.security.session(conn)
    s._principal, s.authenticated = principal, True
    return s


def grant(broker, rt, name, op, principal="User:alice"):
    broker.security.acls.add(
        [AclBinding(int(rt), name, int(P.LITERAL), principal, "*", int(op), int(Permission.ALLOW))]
    )


def run(broker, session, api_key, version, data):
    req = control.build(request_schema(api_key, version), data)
    ctx = SimpleNamespace(api_version=version, broker=broker, connection=session.conn)
    return RULES[api_key](session, ctx, req), req


def test_every_routed_api_has_a_rule(broker):
    missing = sorted(set(broker.router.routes) - set(RULES))
    assert not missing, f"APIs without an authorization rule: {missing}"


def test_no_session_without_sasl_or_authorizer(tmp_path):
    config = load_config(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0"])
    b = Broker(config)
    assert b.security.session(SimpleNamespace(listener_name="PLAINTEXT")) is None


def code(x) -> int:
    return int(getattr(x, "value", x))


def test_txn_rules(broker):
    alice = session_for(broker, "User:alice")
    verdict, _ = run(broker, alice, 22, 4, {"transactional_id": "t1", "transaction_timeout": 60000})
    assert isinstance(verdict, Reply) and code(verdict.response["error_code"]) == 53
    verdict, _ = run(broker, alice, 22, 4, {"transactional_id": None, "transaction_timeout": -1})
    assert code(verdict.response["error_code"]) == 31  # idempotence: no IdempotentWrite, no topic Write
    grant(broker, R.TOPIC, "orders", Op.WRITE)
    assert run(broker, alice, 22, 4, {"transactional_id": None, "transaction_timeout": -1})[0] is None  # KIP-679
    grant(broker, R.TRANSACTIONAL_ID, "t1", Op.WRITE)
    assert run(broker, alice, 22, 4, {"transactional_id": "t1", "transaction_timeout": 60000})[0] is None

    verdict, _ = run(
        broker,
        alice,
        24,
        3,
        {
            "v3_and_below_transactional_id": "t1",
            "v3_and_below_topics": [{"name": "orders", "partitions": [0]}, {"name": "secret", "partitions": [0, 1]}],
        },
    )
    codes = {
        (t["name"], p["partition_index"]): p["partition_error_code"]
        for t in verdict.response["results_by_topic_v3_and_below"]
        for p in t["results_by_partition"]
    }
    assert codes == {("orders", 0): 55, ("secret", 0): 29, ("secret", 1): 29}  # OPERATION_NOT_ATTEMPTED
    verdict, _ = run(broker, alice, 24, 5, {"transactions": []})
    assert code(verdict.response["error_code"]) == 31  # v4+ is broker-to-broker: ClusterAction

    verdict, _ = run(broker, alice, 25, 3, {"transactional_id": "t1", "group_id": "g"})
    assert code(verdict.response["error_code"]) == 30  # sendOffsetsToTransaction needs Read on the group
    grant(broker, R.GROUP, "g", Op.READ)
    assert run(broker, alice, 25, 3, {"transactional_id": "t1", "group_id": "g"})[0] is None
    verdict, _ = run(broker, alice, 26, 3, {"transactional_id": "t2", "committed": True})
    assert code(verdict.response["error_code"]) == 53
    verdict, _ = run(
        broker,
        alice,
        27,
        1,
        {"markers": [{"producer_id": 7, "topics": [{"name": "orders", "partition_indexes": [0, 1]}]}]},
    )
    assert [p["error_code"] for p in verdict.response["markers"][0]["topics"][0]["partitions"]] == [31, 31]

    verdict, req = run(
        broker,
        alice,
        28,
        3,
        {
            "transactional_id": "t1",
            "group_id": "g",
            "topics": [
                {"name": "orders", "partitions": [{"partition_index": 0}]},
                {"name": "secret", "partitions": [{"partition_index": 0}]},
            ],
        },
    )
    grant(broker, R.TOPIC, "orders", Op.READ)
    verdict, req = run(
        broker,
        alice,
        28,
        3,
        {
            "transactional_id": "t1",
            "group_id": "g",
            "topics": [
                {"name": "orders", "partitions": [{"partition_index": 0}]},
                {"name": "secret", "partitions": [{"partition_index": 0}]},
            ],
        },
    )
    assert isinstance(verdict, Partial) and [t.name for t in verdict.request.topics] == ["orders"]
    merged = verdict.merge(
        {"throttle_time": 0, "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "error_code": 0}]}]}
    )
    assert [(t["name"], t["partitions"][0]["error_code"]) for t in merged["topics"]] == [("orders", 0), ("secret", 29)]
    verdict, _ = run(
        broker,
        alice,
        28,
        3,
        {
            "transactional_id": "t9",
            "group_id": "g",
            "topics": [{"name": "orders", "partitions": [{"partition_index": 0}]}],
        },
    )
    assert verdict.response["topics"][0]["partitions"][0]["error_code"] == 53


def test_produce_rule_transactional_and_acks0(broker):
    from tidelog.wire import produce as c

    alice = session_for(broker, "User:alice")
    grant(broker, R.TOPIC, "orders", Op.WRITE)
    ctx = SimpleNamespace(api_version=9, broker=broker, connection=alice.conn)

    def req(txn, acks=-1):
        return c.ProduceRequest(
            acks,
            1000,
            [
                c.ProduceRequestTopic("orders", [c.ProduceRequestPartition(0, b"x")]),
                c.ProduceRequestTopic("secret", [c.ProduceRequestPartition(0, b"x")]),
            ],
            transactional_id=txn,
        )

    verdict = RULES[0](alice, ctx, req("t-unknown"))
    assert {p.error_code for t in verdict.response.responses for p in t.partition_responses} == {53}
    verdict = RULES[0](alice, ctx, req(None))
    assert [t.name for t in verdict.request.topic_data] == ["orders"]
    merged = verdict.merge(c.ProduceResponse([c.ProduceResponseTopic("orders", [c.ProduceResponsePartition(0, 0)])]))
    assert [(t.name, t.partition_responses[0].error_code) for t in merged.responses] == [("orders", 0), ("secret", 29)]
    only_secret = c.ProduceRequest(0, 1000, [c.ProduceRequestTopic("secret", [c.ProduceRequestPartition(0, b"x")])])
    assert RULES[0](alice, ctx, only_secret).response is NO_RESPONSE  # acks=0: refused silently, as Kafka


def test_super_user_passes_everything(broker):
    root = session_for(broker, "User:root")
    for key, version, data in (
        (22, 4, {"transactional_id": "x"}),
        (27, 1, {"markers": []}),
        (29, 1, {}),
        (51, 0, {}),
        (11, 5, {"group_id": "g"}),
        (10, 3, {"key": "g"}),
    ):
        assert run(broker, root, key, version, data)[0] is None


def test_authorized_operations_bit_fields(broker):
    alice = session_for(broker, "User:alice")
    grant(broker, R.TOPIC, "orders", Op.READ)
    verdict, _ = run(
        broker,
        alice,
        3,
        10,
        {
            "topics": [{"name": "orders"}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": True,
        },
    )
    merged = verdict.merge({"topics": [{"name": "orders", "error_code": 0, "partitions": []}]})
    assert merged["topics"][0]["topic_authorized_operations"] == (1 << 3) | (1 << 8)  # READ, DESCRIBE
    verdict, _ = run(broker, alice, 3, 10, {"topics": [{"name": "orders"}], "allow_auto_topic_creation": False})
    assert verdict is None  # nothing asked, nothing added
    root = session_for(broker, "User:root")
    verdict, _ = run(broker, root, 60, 1, {"include_cluster_authorized_operations": True})
    ops = verdict.merge({"error_code": 0})["cluster_authorized_operations"]
    assert ops == sum(1 << o for o in (5, 7, 8, 9, 10, 11, 12))
    grant(broker, R.GROUP, "g", Op.READ)
    verdict, _ = run(broker, alice, 15, 5, {"groups": ["g"], "include_authorized_operations": True})
    assert verdict.merge({"groups": [{"group_id": "g", "error_code": 0}]})["groups"][0]["authorized_operations"] == (
        1 << 3
    ) | (1 << 8)


def test_every_refusal_encodes_in_every_version(broker):
    """Each rule's refusal, for a principal with no rights, is a valid response at every version."""
    from tidelog.wire.schemas import response_schema

    nobody = session_for(broker, "User:nobody")
    checked = 0
    for api_key, fn in sorted(RULES.items()):
        if api_key in (0, 1, 2):  # tidelog's own codecs: covered by the produce test and interop
            continue
        for version in range(0, 20):
            cls = request_schema(api_key, version)
            if cls is None or response_schema(api_key, version) is None:
                continue
            req = control.build(
                cls,
                {
                    "topics": [],
                    "groups": [],
                    "group_id": "g",
                    "key": "k",
                    "transactional_id": "t",
                    "resources": [],
                    "creations": [{}],
                    "filters": [{}],
                    "markers": [],
                    "coordinator_keys": ["k"],
                },
            )
            ctx = SimpleNamespace(api_version=version, broker=broker, connection=nobody.conn)
            verdict = fn(nobody, ctx, req)
            if isinstance(verdict, Reply) and verdict.response is not NO_RESPONSE:
                control.encode_response(api_key, version, verdict.response)
                checked += 1
    assert checked > 60


def test_find_coordinator_share_keys_need_cluster_action(broker):
    """v6 share coordinator keys: Kafka authorizes ClusterAction on the cluster and fails the whole
    request when it is missing (group keys keep their Describe-on-the-group check)."""
    alice = session_for(broker, "User:alice")
    keys = {"key_type": 2, "coordinator_keys": ["g:AAAAAAAAAAAAAAAAAAAAAQ:0", "g:AAAAAAAAAAAAAAAAAAAAAQ:1"]}
    verdict, _ = run(broker, alice, 10, 6, keys)
    assert isinstance(verdict, Reply)
    cluster_denied = 31  # CLUSTER_AUTHORIZATION_FAILED
    assert [(c["key"], c["error_code"]) for c in verdict.response["coordinators"]] == [
        (k, cluster_denied) for k in keys["coordinator_keys"]
    ]
    control.encode_response(10, 6, verdict.response)
    assert run(broker, alice, 10, 5, keys)[0] is None  # before v6 the handler refuses the key itself
    grant(broker, R.CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)
    assert run(broker, alice, 10, 6, keys)[0] is None
