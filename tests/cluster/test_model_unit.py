"""The controller's decisions and Kafka's replica placement, without processes."""

import uuid

import pytest

from tidelog.cluster.controller import decide
from tidelog.cluster.model import (BrokerInfo, Endpoint, Keys, PartitionState, TopicAssignment, assign_replicas,
                                   root)

A = TopicAssignment("t", uuid.uuid4(), ((1, 2, 3), (2, 3, 1)))


def st(leader, epoch, isr):
    return PartitionState(leader, epoch, tuple(isr), 5, 10)


@pytest.mark.parametrize("state,live,unclean,want", [
    (None, {1, 2, 3}, False, (1, 0, (1, 2, 3))),               # new: first live replica, live ISR
    (None, {2, 3}, False, (2, 0, (2, 3))),
    (None, set(), False, None),                                  # nobody to lead yet
    (st(1, 0, [1, 2, 3]), {1, 2, 3}, False, None),               # nothing to do
    (st(1, 0, [1, 2, 3]), {2, 3}, False, (2, 1, (2, 3))),        # leader gone: next in-sync, epoch + 1
    (st(1, 0, [1, 3]), {2, 3}, False, (3, 1, (3,))),             # 2 is live but not in sync: never leads
    (st(1, 0, [1]), {2, 3}, False, (-1, 1, (1,))),               # no in-sync replica: offline, ISR kept
    (st(1, 0, [1]), {2, 3}, True, (2, 1, (2,))),                 # unclean election allowed
    (st(-1, 1, [1]), {2, 3}, False, None),                       # still offline
    (st(-1, 1, [1]), {1, 2, 3}, False, (1, 2, (1,))),            # the last in-sync replica returns
    (st(1, 0, [1, 2, 3]), {1, 3}, False, (1, 0, (1, 3))),        # a follower gone leaves the ISR
])
def test_decide(state, live, unclean, want):
    assert decide(A, 0, state, live, unclean) == want


def test_assign_replicas_round_robin_and_distinct():
    out = assign_replicas(6, 3, [(1, None), (2, None), (3, None)])
    assert [r[0] for r in out] == [1, 2, 3, 1, 2, 3]  # leaders spread
    assert all(len(set(r)) == 3 for r in out)
    with pytest.raises(ValueError):
        assign_replicas(1, 4, [(1, None), (2, None), (3, None)])


def test_assign_replicas_rack_aware():
    brokers = [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
    for r in assign_replicas(8, 2, brokers):
        racks = {dict(brokers)[b] for b in r}
        assert racks == {"a", "b"}, r


def test_keys_and_records_round_trip():
    k = Keys(root("prod"))
    assert k.broker(3) == "/tidelog/prod/brokers/ids/3"
    assert k.parse_topic_key(k.topic("orders")) == ("orders", None)
    assert k.parse_topic_key(k.partition("orders", 7)) == ("orders", 7)
    assert k.parse_topic_key(k.root + "topics/x/y") is None
    assert k.parse_broker_key(k.broker(12)) == 12
    assert k.parse_broker_key(k.brokers + "x") is None and k.parse_broker_key(k.topic("orders")) is None
    b = BrokerInfo(2, (Endpoint("PLAINTEXT", "h", 9092),), "r1")
    assert BrokerInfo.decode(b.encode(), 42) == BrokerInfo(2, b.endpoints, "r1", 42)
    assert TopicAssignment.decode("t", A.encode()) == A
    s = st(2, 4, [2, 3])
    assert PartitionState.decode(s.encode(), 10) == s


def test_preferred_election_of_a_dead_preferred_leader_is_not_available():
    """The state may still name the preferred replica as leader after it died (the controller has
    not written NO_LEADER yet): that is no leader, not ELECTION_NOT_NEEDED."""
    from tidelog.cluster.elections import choose
    from tidelog.cluster.model import PartitionState

    st = PartitionState(1, 4, (1,), 0, 17)
    assert choose((1, 2, 3), st, {2: None}, unclean=False)[0] == 80  # PREFERRED_LEADER_NOT_AVAILABLE
    assert choose((1, 2, 3), st, {1: None, 2: None}, unclean=False)[0] == 84  # alive: not needed
    code, _msg, new = choose((1, 2, 3), st, {2: None}, unclean=True)
    assert code == 0 and new is not None and (new.leader, new.leader_epoch, new.isr) == (2, 5, (2,))
