"""The ACL authorizer's rules (deny wins, implied operations, patterns, super users, no-ACL
default) and the ACL store (filters, persistence)."""

from __future__ import annotations

import pytest

from tidelog.core.acls import AclBinding, AclFilter, AclStore, Permission
from tidelog.core.acls import Operation as Op
from tidelog.core.acls import PatternType as P
from tidelog.core.acls import ResourceType as R
from tidelog.server.security.authorizer import Authorizer, parse_super_users

ALLOW, DENY = Permission.ALLOW, Permission.DENY


def b(rt, name, op, perm=ALLOW, principal="User:alice", host="*", pattern=P.LITERAL) -> AclBinding:
    return AclBinding(int(rt), name, int(pattern), principal, host, int(op), int(perm))


@pytest.fixture
def store(tmp_path) -> AclStore:
    s = AclStore(tmp_path)
    s.add(
        [
            b(R.TOPIC, "orders", Op.READ),
            b(R.TOPIC, "pay-", Op.ALL, pattern=P.PREFIXED),
            b(R.TOPIC, "pay-secret", Op.WRITE, DENY),
            b(R.TOPIC, "*", Op.DESCRIBE, principal="User:*"),
            b(R.TOPIC, "local", Op.WRITE, host="10.0.0.1"),
            b(R.GROUP, "g", Op.READ, principal="User:bob"),
            b(R.TRANSACTIONAL_ID, "tx", Op.WRITE),
            b(R.TOPIC, "configs", Op.ALTER_CONFIGS),
        ]
    )
    return s


@pytest.mark.parametrize(
    "principal,host,rt,name,op,expected",
    [
        ("User:alice", "1.2.3.4", R.TOPIC, "orders", Op.READ, True),
        ("User:alice", "1.2.3.4", R.TOPIC, "orders", Op.WRITE, False),
        ("User:alice", "1.2.3.4", R.TOPIC, "orders", Op.DESCRIBE, True),  # READ implies DESCRIBE
        ("User:bob", "1.2.3.4", R.TOPIC, "orders", Op.DESCRIBE, True),  # User:* on "*"
        ("User:bob", "1.2.3.4", R.TOPIC, "orders", Op.READ, False),
        ("User:alice", "1.2.3.4", R.TOPIC, "pay-in", Op.WRITE, True),  # prefixed ALL
        ("User:alice", "1.2.3.4", R.TOPIC, "pay-secret", Op.WRITE, False),  # deny wins
        ("User:alice", "1.2.3.4", R.TOPIC, "pay-secret", Op.READ, True),
        ("User:alice", "1.2.3.4", R.TOPIC, "pa", Op.WRITE, False),
        ("User:alice", "10.0.0.1", R.TOPIC, "local", Op.WRITE, True),
        ("User:alice", "10.0.0.2", R.TOPIC, "local", Op.WRITE, False),
        ("User:bob", "1.2.3.4", R.GROUP, "g", Op.READ, True),
        ("User:alice", "1.2.3.4", R.GROUP, "g", Op.READ, False),
        ("User:alice", "1.2.3.4", R.TRANSACTIONAL_ID, "tx", Op.WRITE, True),
        ("User:alice", "1.2.3.4", R.TRANSACTIONAL_ID, "tx", Op.DESCRIBE, True),  # WRITE implies DESCRIBE
        ("User:alice", "1.2.3.4", R.TRANSACTIONAL_ID, "tx2", Op.WRITE, False),  # no ACL, default deny
        ("User:alice", "1.2.3.4", R.TOPIC, "configs", Op.DESCRIBE_CONFIGS, True),  # ALTER_CONFIGS implies it
        ("User:alice", "1.2.3.4", R.TOPIC, "configs", Op.ALTER, False),
        ("User:root", "1.2.3.4", R.TOPIC, "pay-secret", Op.WRITE, True),  # super user
        ("User:root", "1.2.3.4", R.CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION, True),
    ],
)
def test_authorize(store, principal, host, rt, name, op, expected):
    az = Authorizer(store, parse_super_users("User:root; User:other"))
    assert az.authorize(principal, host, int(rt), name, int(op)) is expected


def test_allow_everyone_if_no_acl_found(store):
    az = Authorizer(store, allow_if_no_acl=True)
    assert az.authorize("User:x", "h", int(R.TRANSACTIONAL_ID), "no-acls-here", int(Op.WRITE))
    assert not az.authorize("User:x", "h", int(R.TRANSACTIONAL_ID), "tx", int(Op.WRITE))  # ACLs exist: not alice


def test_authorize_any_topic_write(store):
    az = Authorizer(store)
    assert az.authorize_any("User:alice", "h", int(R.TOPIC), int(Op.WRITE))
    assert not az.authorize_any("User:bob", "h", int(R.TOPIC), int(Op.WRITE))


def test_filters_and_persistence(store, tmp_path):
    assert len(store.find(AclFilter())) == 8
    assert [
        x.resource_name
        for x in store.find(AclFilter(resource_type=R.TOPIC, resource_name="pay-secret", pattern_type=P.MATCH))
    ] == ["*", "pay-", "pay-secret"]
    assert len(store.find(AclFilter(principal="User:bob"))) == 1
    assert len(store.find(AclFilter(pattern_type=P.PREFIXED))) == 1
    gone = store.remove(AclFilter(resource_type=R.TOPIC, permission=DENY))
    assert [g.resource_name for g in gone] == ["pay-secret"]
    reread = AclStore(tmp_path)
    assert reread.bindings == store.bindings and len(reread.bindings) == 7
    assert Authorizer(reread).authorize("User:alice", "h", int(R.TOPIC), "pay-secret", int(Op.WRITE))


@pytest.mark.parametrize(
    "binding,reason",
    [
        (b(R.ANY, "x", Op.READ), "resource type"),
        (b(R.TOPIC, "x", Op.ANY), "operation"),
        (b(R.TOPIC, "x", Op.READ, pattern=P.MATCH), "pattern"),
        (b(R.CLUSTER, "other", Op.ALTER), "kafka-cluster"),
        (b(R.TOPIC, "x", Op.READ, principal="alice"), "TYPE:NAME"),
        (b(R.TOPIC, "x", Op.READ, Permission.ANY), "permission"),
        (b(R.SUBJECT, "s", Op.CREATE), "does not apply to the schema registry"),
        (b(R.SUBJECT, "", Op.READ), "empty resource name"),
        (b(R.REGISTRY, "x", Op.DESCRIBE_CONFIGS), "without a name"),
        (b(R.REGISTRY, "", Op.DESCRIBE_CONFIGS, pattern=P.PREFIXED), "without a name"),
    ],
)
def test_invalid_bindings(binding, reason):
    assert reason in binding.invalid_reason()
    assert b(R.TOPIC, "x", Op.READ).invalid_reason() is None
    assert b(R.SUBJECT, "orders-", Op.WRITE, pattern=P.PREFIXED).invalid_reason() is None
    assert b(R.REGISTRY, "", Op.ALTER_CONFIGS).invalid_reason() is None


def test_the_schema_registrys_bindings_are_found_by_their_type_only(store):
    """A filter of resource type ANY is Kafka's (DescribeAcls, DeleteAcls): it never selects them."""
    subject = b(R.SUBJECT, "orders-", Op.READ, pattern=P.PREFIXED)
    store.add([subject, b(R.REGISTRY, "", Op.DESCRIBE)])
    assert len(store.find(AclFilter())) == 8
    assert store.find(AclFilter(resource_type=R.SUBJECT, resource_name="orders-v", pattern_type=P.MATCH)) == [subject]
    assert Authorizer(store).authorize("User:alice", "h", int(R.SUBJECT), "orders-v", int(Op.DESCRIBE))
    assert not Authorizer(store).authorize("User:alice", "h", int(R.TOPIC), "orders-v", int(Op.READ))
