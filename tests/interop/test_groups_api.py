"""Consumer groups through real clients, without Fetch: membership, rebalances, session expiry,
static membership, offset commits and the admin group APIs (confluent-kafka, kafka-python, and
tidelog's own protocol client for the exact error codes)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.cli.client import KafkaClient

pytestmark = pytest.mark.interop

FAST = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "5",
}


@pytest.fixture
def gbroker(broker_factory):
    return broker_factory(FAST)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_topic(b, partitions: int = 6) -> str:
    name = unique("gt")
    admin = AdminClient({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4"})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return name


def ck_consumer(b, group: str, **extra) -> Consumer:
    conf = {
        "bootstrap.servers": b.bootstrap,
        "group.id": group,
        "broker.address.family": "v4",
        "enable.auto.commit": False,
        "session.timeout.ms": 2000,
        "heartbeat.interval.ms": 200,
        "auto.offset.reset": "earliest",
        "topic.metadata.refresh.interval.ms": 1000,
    }
    conf.update(extra)
    return Consumer(conf)


class Tracked:
    """A confluent consumer whose current assignment is followed through its callbacks."""

    def __init__(self, consumer: Consumer, topic: str) -> None:
        self.c = consumer
        self.assigned: set[int] = set()
        consumer.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke)

    def _assign(self, c, parts):
        self.assigned = {p.partition for p in parts}

    def _revoke(self, c, parts):
        self.assigned = set()


def poll_until(consumers, cond, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for t in consumers:
            t.c.poll(0.05)
        if cond():
            return
    raise AssertionError("condition not reached; assignments: " + repr([t.assigned for t in consumers]))


def test_two_confluent_consumers_split_and_recover_partitions(gbroker):
    topic, group = make_topic(gbroker), unique("g")
    a = Tracked(ck_consumer(gbroker, group), topic)
    poll_until([a], lambda: a.assigned == set(range(6)))
    b = Tracked(ck_consumer(gbroker, group), topic)
    poll_until([a, b], lambda: len(a.assigned) == 3 and len(b.assigned) == 3 and not a.assigned & b.assigned)
    admin = AdminClient({"bootstrap.servers": gbroker.bootstrap, "broker.address.family": "v4"})
    d = admin.describe_consumer_groups([group])[group].result(10)
    assert d.state.name == "STABLE" and len(d.members) == 2 and d.partition_assignor == "range"
    owned = sorted(tp.partition for m in d.members for tp in m.assignment.topic_partitions)
    assert owned == list(range(6))
    # Commits from a member are accepted with the current generation; reads see them.
    a.c.commit(offsets=[TopicPartition(topic, p, 10 + p) for p in a.assigned], asynchronous=False)
    got = a.c.committed([TopicPartition(topic, p) for p in range(6)], timeout=10)
    assert {tp.partition: tp.offset for tp in got if tp.offset >= 0} == {p: 10 + p for p in a.assigned}
    b.c.close()  # LeaveGroup: a takes everything back
    poll_until([a], lambda: a.assigned == set(range(6)))
    a.c.close()
    d = admin.describe_consumer_groups([group])[group].result(10)
    assert d.state.name == "EMPTY" and not d.members


CHILD = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "broker.address.family": "v4",
                  "session.timeout.ms": 1500, "heartbeat.interval.ms": 200, "enable.auto.commit": False})
    c.subscribe([sys.argv[3]], on_assign=lambda c, ps: print("assigned", len(ps), flush=True))
    while True:
        c.poll(0.1)
""")


def test_member_that_stops_heartbeating_is_expired_and_its_partitions_reassigned(gbroker):
    topic, group = make_topic(gbroker), unique("g")
    a = Tracked(ck_consumer(gbroker, group, **{"session.timeout.ms": 6000}), topic)
    poll_until([a], lambda: a.assigned == set(range(6)))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, gbroker.bootstrap, group, topic], stdout=subprocess.PIPE, text=True
    )
    try:
        poll_until([a], lambda: len(a.assigned) == 3, timeout=20)
        os.kill(child.pid, signal.SIGSTOP)  # frozen: no heartbeats, no LeaveGroup, connection open
        poll_until([a], lambda: a.assigned == set(range(6)), timeout=20)
        assert "session expired after 1500 ms" in gbroker.log()  # removed by its session, nothing else
    finally:
        child.kill()
        child.wait()
    a.c.close()


def test_static_member_rejoins_without_rebalance(gbroker):
    topic, group = make_topic(gbroker), unique("g")
    first = Tracked(ck_consumer(gbroker, group, **{"group.instance.id": "inst-1", "session.timeout.ms": 10000}), topic)
    poll_until([first], lambda: first.assigned == set(range(6)))
    admin = AdminClient({"bootstrap.servers": gbroker.bootstrap, "broker.address.family": "v4"})
    before = admin.describe_consumer_groups([group])[group].result(10).members[0]
    assert before.group_instance_id == "inst-1"
    first.c.close()  # a static member does not leave the group on close
    d = admin.describe_consumer_groups([group])[group].result(10)
    assert d.state.name == "STABLE" and len(d.members) == 1
    second = Tracked(ck_consumer(gbroker, group, **{"group.instance.id": "inst-1", "session.timeout.ms": 10000}), topic)
    poll_until([second], lambda: second.assigned == set(range(6)))
    after = admin.describe_consumer_groups([group])[group].result(10)
    assert after.state.name == "STABLE" and len(after.members) == 1
    assert after.members[0].member_id != before.member_id
    assert "static member" in gbroker.log()
    second.c.close()


def test_confluent_admin_group_offsets(gbroker):
    topic, group = make_topic(gbroker, 3), unique("g")
    admin = AdminClient({"bootstrap.servers": gbroker.bootstrap, "broker.address.family": "v4"})
    admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 5), TopicPartition(topic, 2, 9)])]
    )[group].result(10)
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
    assert {(tp.partition, tp.offset) for tp in res.topic_partitions} == {(0, 5), (2, 9)}
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(10).valid}
    assert listed[group].state.name == "EMPTY"
    # While a member is active, admin commits are refused and the group cannot be deleted.
    c = Tracked(ck_consumer(gbroker, group), topic)
    poll_until([c], lambda: c.assigned == {0, 1, 2})
    try:
        refused = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 1, 1)])]
        )[group].result(10)
        errors = [tp.error.name() for tp in refused.topic_partitions]
    except KafkaException as e:
        errors = [e.args[0].name()]
    assert errors == ["UNKNOWN_MEMBER_ID"]
    with pytest.raises(KafkaException) as e:
        admin.delete_consumer_groups([group])[group].result(10)
    assert e.value.args[0].name() == "NON_EMPTY_GROUP"
    c.c.close()
    admin.delete_consumer_groups([group])[group].result(10)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(10).valid}
    with pytest.raises(KafkaException) as e:
        admin.delete_consumer_groups([group])[group].result(10)
    assert e.value.args[0].name() == "GROUP_ID_NOT_FOUND"


def test_kafka_python_admin_and_simple_consumer(gbroker):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata

    topic, group = make_topic(gbroker, 3), unique("kp")
    consumer = KafkaConsumer(bootstrap_servers=gbroker.bootstrap, group_id=group, enable_auto_commit=False)
    consumer.assign([KTP(topic, 0), KTP(topic, 1)])
    consumer.commit({KTP(topic, 0): OffsetAndMetadata(3, "meta", -1), KTP(topic, 1): OffsetAndMetadata(4, "", -1)})
    assert consumer.committed(KTP(topic, 0)) == 3
    assert consumer.committed(KTP(topic, 2)) is None
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=gbroker.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["group_state"] == "Empty" and listed[group]["protocol_type"] == ""
        offsets = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 3, 1: 4}
        assert offsets[KTP(topic, 0)].metadata == "meta"
        admin.alter_group_offsets(group, {KTP(topic, 2): OffsetAndMetadata(7, "", -1)})
        deleted = admin.delete_group_offsets(group, [KTP(topic, 1)])
        assert all(err.errno == 0 for err in deleted.values())
        offsets = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 3, 2: 7}
        desc = admin.describe_groups([group])[group]
        assert desc["group_state"] == "Empty" and desc["members"] == [] and desc["error"] is None
        admin.delete_groups([group])
        assert admin.list_group_offsets({group: None})[group] == {}
    finally:
        admin.close()


# ---- exact protocol answers, through tidelog's own client -----------------------------------

SUB = bytes.fromhex("0000 00000001 0001") + b"t" + bytes.fromhex("ffffffff")


def join(client, group, member_id="", version=7, instance=None, session=1000, **kw):
    return client.request(
        11,
        {
            "group_id": group,
            "session_timeout": session,
            "rebalance_timeout": 5000,
            "member_id": member_id,
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUB}],
            **kw,
        },
        version=version,
    )


def test_protocol_errors_real_clients_rely_on(gbroker):
    group = unique("raw")
    with KafkaClient(gbroker.bootstrap, client_id="raw") as c:
        fc = c.request(10, {"key_type": 1, "coordinator_keys": [group, "txn-1"]}, version=4)
        assert [(x.key, x.error_code.value, x.node_id) for x in fc.coordinators] == [(group, 0, 1), ("txn-1", 0, 1)]
        assert c.request(10, {"key": group}, version=0).port == gbroker.port
        assert c.request(10, {"key": group, "key_type": 2}, version=3).error_code.value == 42  # INVALID_REQUEST
        assert join(c, group, session=10).error_code.value == 26  # INVALID_SESSION_TIMEOUT
        first = join(c, group, version=4)
        assert first.error_code.value == 79 and first.member_id.startswith("raw-")  # MEMBER_ID_REQUIRED
        r = join(c, group, member_id=first.member_id, version=4)
        assert r.error_code.value == 0 and r.generation_id == 1 and r.leader == first.member_id
        assert [m.member_id for m in r.members] == [first.member_id]
        mid = first.member_id
        hb = lambda gen, m=mid: c.request(12, {"group_id": group, "generation_id": gen, "member_id": m}, version=4)
        # The leader's SyncGroup completes the generation.
        s = c.request(
            14,
            {
                "group_id": group,
                "generation_id": 1,
                "member_id": mid,
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": [{"member_id": mid, "assignment": b"A"}],
            },
            version=5,
        )
        assert s.error_code.value == 0 and s.assignment == b"A" and s.protocol_name == "range"
        assert hb(1).error_code.value == 0
        assert hb(0).error_code.value == 22  # ILLEGAL_GENERATION
        assert hb(1, "nobody").error_code.value == 25  # UNKNOWN_MEMBER_ID
        assert join(c, group, member_id="nobody").error_code.value == 25
        assert join(c, unique("other"), member_id="x").error_code.value == 25
        # Offsets: v0 (derived schema), v8 multi-group fetch, all-partitions fetch.
        oc = c.request(
            8,
            {
                "group_id": group,
                "generation_id_or_member_epoch": 1,
                "member_id": mid,
                "topics": [
                    {
                        "name": "__consumer_offsets",
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 12, "committed_metadata": "m"},
                            {"partition_index": 99, "committed_offset": 1, "committed_metadata": ""},
                        ],
                    }
                ],
            },
            version=8,
        )
        assert [p.error_code.value for p in oc.topics[0].partitions] == [0, 3]
        stale = c.request(
            8,
            {
                "group_id": group,
                "generation_id_or_member_epoch": 0,
                "member_id": mid,
                "topics": [
                    {
                        "name": "__consumer_offsets",
                        "partitions": [{"partition_index": 1, "committed_offset": 1, "committed_metadata": ""}],
                    }
                ],
            },
            version=8,
        )
        assert stale.topics[0].partitions[0].error_code.value == 22
        f8 = c.request(
            9,
            {
                "groups": [
                    {"group_id": group, "topics": None},
                    {"group_id": "none-such", "topics": [{"name": "x", "partition_indexes": [0]}]},
                ],
                "require_stable": True,
            },
            version=8,
        )
        g1, g2 = f8.groups
        assert [
            (t.name, p.partition_index, p.committed_offset, p.metadata) for t in g1.topics for p in t.partitions
        ] == [("__consumer_offsets", 0, 12, "m")]
        assert g2.topics[0].partitions[0].committed_offset == -1
        f0 = c.request(
            9, {"group_id": group, "topics": [{"name": "__consumer_offsets", "partition_indexes": [0]}]}, version=0
        )
        assert f0.topics[0].partitions[0].committed_offset == 12
        v0 = c.request(
            8,
            {
                "group_id": unique("simple"),
                "topics": [
                    {
                        "name": "__consumer_offsets",
                        "partitions": [{"partition_index": 2, "committed_offset": 3, "committed_metadata": ""}],
                    }
                ],
            },
            version=0,
        )
        assert v0.topics[0].partitions[0].error_code.value == 0
        # Static membership: a second instance claiming a taken instance id with a stale member id is fenced.
        static_group = unique("static")
        s1 = join(c, static_group, instance="i1", version=5)
        assert s1.error_code.value == 0
        assert (
            c.request(
                14,
                {
                    "group_id": static_group,
                    "generation_id": 1,
                    "member_id": s1.member_id,
                    "group_instance_id": "i1",
                    "assignments": [{"member_id": s1.member_id, "assignment": b"S"}],
                },
                version=3,
            ).error_code.value
            == 0
        )
        s2 = join(c, static_group, instance="i1", version=5)  # the instance restarted: replaces s1
        assert s2.error_code.value == 0 and s2.member_id != s1.member_id
        assert s2.generation_id == s1.generation_id and s2.members == ()  # no rebalance, nothing to assign
        assert (
            c.request(
                14,
                {
                    "group_id": static_group,
                    "generation_id": 1,
                    "member_id": s2.member_id,
                    "group_instance_id": "i1",
                    "assignments": [],
                },
                version=3,
            ).assignment
            == b"S"
        )
        assert (
            c.request(
                12,
                {
                    "group_id": static_group,
                    "generation_id": s1.generation_id,
                    "member_id": s1.member_id,
                    "group_instance_id": "i1",
                },
                version=4,
            ).error_code.value
            == 82
        )  # FENCED_INSTANCE_ID
        # Restarted again with other subscription bytes (a new client version, user data) but the same
        # protocol: still no rebalance and the assignment is kept, as Kafka (only the selected protocol counts).
        other_sub = SUB + b"\x00\x00\x00\x01x"
        s3 = c.request(
            11,
            {
                "group_id": static_group,
                "session_timeout": 1000,
                "rebalance_timeout": 5000,
                "member_id": "",
                "group_instance_id": "i1",
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": other_sub}],
            },
            version=5,
        )
        assert s3.error_code.value == 0 and s3.generation_id == s1.generation_id and s3.members == ()
        assert (
            c.request(
                14,
                {
                    "group_id": static_group,
                    "generation_id": 1,
                    "member_id": s3.member_id,
                    "group_instance_id": "i1",
                    "assignments": [],
                },
                version=3,
            ).assignment
            == b"S"
        )
        # LeaveGroup v3+ batch; DescribeGroups; ListGroups with a state filter.
        lv = c.request(13, {"group_id": group, "members": [{"member_id": mid}, {"member_id": "ghost"}]}, version=5)
        assert lv.error_code.value == 0 and [m.error_code.value for m in lv.members] == [0, 25]
        d = c.request(15, {"groups": [group, "none-such"], "include_authorized_operations": False}, version=5)
        assert [(g.group_id, g.group_state) for g in d.groups] == [(group, "Empty"), ("none-such", "Dead")]
        lg = c.request(16, {"states_filter": ["Stable"]}, version=4)
        assert [g.group_id for g in lg.groups] == [static_group]
        od = c.request(
            47,
            {"group_id": group, "topics": [{"name": "__consumer_offsets", "partitions": [{"partition_index": 0}]}]},
            version=0,
        )
        assert od.error_code.value == 0 and od.topics[0].partitions[0].error_code.value == 0
        assert c.request(42, {"groups_names": [static_group]}, version=2).results[0].error_code.value == 68


def test_every_listed_version_of_every_group_api(gbroker):
    """One member's whole life at each JoinGroup version (0-7) with the matching SyncGroup,
    Heartbeat, OffsetCommit, OffsetFetch and LeaveGroup versions, then every version of
    FindCoordinator, DescribeGroups, ListGroups, DeleteGroups and OffsetCommit/OffsetFetch 8."""
    topic = make_topic(gbroker, 2)
    with KafkaClient(gbroker.bootstrap, client_id="sweep") as c:
        for v in range(8):
            group = unique(f"v{v}")
            r = join(c, group, version=v)
            if v >= 4:
                assert r.error_code.value == 79, v  # MEMBER_ID_REQUIRED
                r = join(c, group, member_id=r.member_id, version=v)
            assert r.error_code.value == 0 and r.generation_id == 1 and r.leader == r.member_id, v
            assert [(m.member_id, m.metadata) for m in r.members] == [(r.member_id, SUB)], v
            mid = r.member_id
            s = c.request(
                14,
                {
                    "group_id": group,
                    "generation_id": 1,
                    "member_id": mid,
                    "protocol_type": "consumer",
                    "protocol_name": "range",
                    "assignments": [{"member_id": mid, "assignment": b"A%d" % v}],
                },
                version=min(v, 5),
            )
            assert s.error_code.value == 0 and s.assignment == b"A%d" % v, v
            assert (
                c.request(
                    12, {"group_id": group, "generation_id": 1, "member_id": mid}, version=min(v, 4)
                ).error_code.value
                == 0
            ), v
            commit_v = max(v, 1) if v < 7 else 8  # v0 carries no member: it is for offsets-only groups
            oc = c.request(
                8,
                {
                    "group_id": group,
                    "generation_id_or_member_epoch": 1,
                    "member_id": mid,
                    "retention_time": -1,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [
                                {"partition_index": 1, "committed_offset": 100 + v, "committed_metadata": "m"}
                            ],
                        }
                    ],
                },
                version=commit_v,
            )
            assert oc.topics[0].partitions[0].error_code.value == 0, v
            if v == 7:
                f = c.request(
                    9,
                    {"groups": [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0, 1]}]}]},
                    version=8,
                ).groups[0]
                assert f.error_code.value == 0
                topics = f.topics
            else:
                f = c.request(
                    9, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0, 1]}]}, version=v
                )
                topics = f.topics
            assert [(p.partition_index, p.committed_offset, p.metadata) for p in topics[0].partitions] == [
                (0, -1, ""),
                (1, 100 + v, "m"),
            ], v
            if v >= 3:
                lv = c.request(13, {"group_id": group, "members": [{"member_id": mid}]}, version=min(v, 5))
                assert lv.error_code.value == 0 and [m.error_code.value for m in lv.members] == [0], v
            else:
                assert c.request(13, {"group_id": group, "member_id": mid}, version=v).error_code.value == 0, v
            d = c.request(15, {"groups": [group], "include_authorized_operations": False}, version=min(v, 5))
            assert (d.groups[0].group_state, d.groups[0].members) == ("Empty", ()), v
        simple = unique("simple")
        assert (
            c.request(
                8,
                {
                    "group_id": simple,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}],
                        }
                    ],
                },
                version=0,
            )
            .topics[0]
            .partitions[0]
            .error_code.value
            == 0
        )
        assert (
            c.request(9, {"group_id": simple, "topics": None}, version=2).topics[0].partitions[0].committed_offset == 5
        )
        for v in range(5):
            fc = c.request(10, {"key": simple, "coordinator_keys": [simple]}, version=v)
            node = fc.coordinators[0] if v >= 4 else fc
            assert (node.error_code.value, node.node_id, node.port) == (0, 1, gbroker.port), v
        for v in range(6):
            d = c.request(15, {"groups": [simple], "include_authorized_operations": False}, version=v)
            assert d.groups[0].group_state == "Empty", v
            assert simple in [g.group_id for g in c.request(16, {}, version=v).groups], v
        for v in range(3):
            victim = unique(f"del{v}")
            c.request(
                8,
                {
                    "group_id": victim,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
                        }
                    ],
                },
                version=2,
            )
            res = c.request(42, {"groups_names": [victim, unique("none")]}, version=v).results
            assert [r.error_code.value for r in res] == [0, 69], v  # GROUP_ID_NOT_FOUND
            assert c.request(9, {"group_id": victim, "topics": None}, version=2).topics == (), v


def test_offsets_expire_in_a_running_broker(broker_factory):
    """The retention timer runs: OffsetCommit v2 retention_time gives offsets an expiry, the check
    every 200 ms removes them and then the group that has nothing left. (Expiry of an Empty
    group's offsets offsets.retention.minutes after it emptied is in test_groups_coordinator.)"""
    b = broker_factory({**FAST, "offsets.retention.check.interval.ms": "200"})
    topic = make_topic(b, 1)
    short, kept = unique("short"), unique("kept")
    with KafkaClient(b.bootstrap, client_id="retention") as c:
        for group, retention in ((short, 500), (kept, -1)):
            r = c.request(
                8,
                {
                    "group_id": group,
                    "generation_id_or_member_epoch": -1,
                    "member_id": "",
                    "retention_time": retention,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [{"partition_index": 0, "committed_offset": 9, "committed_metadata": ""}],
                        }
                    ],
                },
                version=2,
            )
            assert r.topics[0].partitions[0].error_code.value == 0
        fetch = lambda g: [
            p.committed_offset
            for t in c.request(9, {"group_id": g, "topics": None}, version=2).topics
            for p in t.partitions
        ]
        listed = lambda: {g.group_id for g in c.request(16, {}, version=3).groups}
        assert fetch(short) == [9] and {short, kept} <= listed()
        deadline = time.monotonic() + 20
        while short in listed() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert fetch(short) == [] and short not in listed()
        assert fetch(kept) == [9] and kept in listed()  # a week of retention left
    b.restart()  # the expiry was written: tombstones, not just forgotten in memory
    with KafkaClient(b.bootstrap, client_id="retention") as c:
        assert c.request(9, {"group_id": short, "topics": None}, version=2).topics == ()
        assert [
            p.committed_offset
            for t in c.request(9, {"group_id": kept, "topics": None}, version=2).topics
            for p in t.partitions
        ] == [9]
