"""The controller's decisions and Kafka's replica placement, without processes."""

import dataclasses
import uuid

import pytest

from tidelog.cluster.controller import decide
from tidelog.cluster.model import BrokerInfo, Endpoint, Keys, PartitionState, TopicAssignment, assign_replicas, root

A = TopicAssignment("t", uuid.uuid4(), ((1, 2, 3), (2, 3, 1)))


def st(leader, epoch, isr, elr=()):
    """A state chosen when brokers were at broker epoch 100 + id with directory d<id>."""
    return PartitionState(
        leader,
        epoch,
        tuple(isr),
        5,
        10,
        100 + leader if leader > 0 else -1,
        tuple((b, f"d{b}") for b in isr),
        tuple((b, f"d{b}") for b in elr),
    )


def live(ids, restarted=(), lost_disk=()):
    """Registrations: broker epoch 100 + id (200 + id once restarted), directory d<id> (e<id>
    once its disk was lost)."""
    return {
        b: BrokerInfo(
            b,
            (),
            None,
            200 + b if b in restarted or b in lost_disk else 100 + b,
            f"e{b}" if b in lost_disk else f"d{b}",
        )
        for b in ids
    }


@pytest.mark.parametrize(
    "state,brokers,unclean,want",
    [
        (None, live({1, 2, 3}), False, (1, 0, (1, 2, 3))),  # new: first live replica, live ISR
        (None, live({2, 3}), False, (2, 0, (2, 3))),
        (None, live(set()), False, None),  # nobody to lead yet
        (st(1, 0, [1, 2, 3]), live({1, 2, 3}), False, None),  # nothing to do
        (st(1, 0, [1, 2, 3]), live({2, 3}), False, (2, 1, (2, 3))),  # leader gone: next in-sync, epoch + 1
        (st(1, 0, [1, 3]), live({2, 3}), False, (3, 1, (3,))),  # 2 is live but not in sync: never leads
        (st(1, 0, [1]), live({2, 3}), False, (-1, 1, (1,))),  # no in-sync replica: offline, ISR kept
        (st(1, 0, [1]), live({2, 3}), True, (2, 1, (2,))),  # unclean election allowed
        (st(-1, 1, [1]), live({2, 3}), False, None),  # still offline
        (st(-1, 1, [1]), live({1, 2, 3}), False, (1, 2, (1,))),  # the last in-sync replica returns
        (st(1, 0, [1, 2, 3]), live({1, 3}), False, (1, 0, (1, 3))),  # a follower gone leaves the ISR
        # issue 26: incarnations
        (
            st(1, 0, [1, 2, 3]),
            live({1, 2, 3}, restarted={1}),
            False,
            (1, 1, (1, 2, 3)),
        ),  # leader restarted: chosen again, new epoch
        (st(1, 0, [1, 2, 3]), live({1, 2, 3}, lost_disk={1}), False, (2, 1, (2, 3))),  # leader back without its disk
        (st(1, 0, [1, 2, 3]), live({1, 2, 3}, lost_disk={3}), False, (1, 0, (1, 2))),  # follower back without its disk
        (st(-1, 1, [1]), live({1, 2, 3}, lost_disk={1}), False, None),  # the only in-sync one lost it: offline
        (
            st(-1, 1, [1], elr=[2]),
            live({1, 2, 3}, lost_disk={1}),
            False,
            (2, 2, (2,)),
        ),  # an eligible leader replica leads
    ],
)
def test_decide(state, brokers, unclean, want):
    new = decide(A, 0, state, brokers, unclean, min_isr=2)
    assert (None if new is None else (new.leader, new.leader_epoch, new.isr)) == want
    if new is not None and new.leader > 0:
        assert new.leader_broker_epoch == brokers[new.leader].epoch  # chosen in its present incarnation


def test_a_leader_chosen_in_an_incarnation_that_lost_its_disk_is_replaced():
    """A state that names a live incarnation as leader while its ISR entry has the directory the
    broker joined with (seed 2078: a hand-over to a follower back without its disk) leads from
    nothing: the next in-sync replica with its disk leads."""
    bad = dataclasses.replace(st(3, 1, [3, 1]), leader_broker_epoch=203)
    new = decide(A, 0, bad, live({1, 2, 3}, lost_disk={3}), False, min_isr=2)
    assert (new.leader, new.leader_epoch, new.isr) == (1, 2, (1,))


def test_the_isr_falling_below_min_isr_keeps_the_leavers_eligible():
    new = decide(A, 0, st(1, 0, [1, 2]), live({1}), False, min_isr=2)
    assert new.isr == (1,) and new.elr == ((2, "d2"),)  # 2 holds everything below the (frozen) HW
    back = decide(A, 0, st(1, 0, [1, 2, 3]), live({1, 2}), False, min_isr=2)
    assert back.isr == (1, 2) and back.elr == ()  # still min.insync.replicas in sync: nobody kept


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
    b = BrokerInfo(2, (Endpoint("PLAINTEXT", "h", 9092),), "r1", storage="dir-2")
    assert BrokerInfo.decode(b.encode(), 42) == BrokerInfo(2, b.endpoints, "r1", 42, "dir-2")
    assert TopicAssignment.decode("t", A.encode()) == A
    s = st(2, 4, [2, 3], elr=[1])
    assert PartitionState.decode(s.encode(), 10) == s


def test_preferred_election_of_a_dead_preferred_leader_is_not_available():
    """The state may still name the preferred replica as leader after it died (the controller has
    not written NO_LEADER yet): that is no leader, not ELECTION_NOT_NEEDED."""
    from tidelog.cluster.elections import choose

    state = st(1, 4, [1])
    assert choose((1, 2, 3), state, live({2}), unclean=False)[0] == 80  # PREFERRED_LEADER_NOT_AVAILABLE
    assert choose((1, 2, 3), state, live({1, 2}), unclean=False)[0] == 84  # alive: not needed
    assert choose((1, 2, 3), state, live({1, 2}, restarted={1}), unclean=False)[0] == 0  # restarted: elected anew
    code, _msg, new = choose((1, 2, 3), state, live({2}), unclean=True)
    assert code == 0 and new is not None and (new.leader, new.leader_epoch, new.isr) == (2, 5, (2,))
