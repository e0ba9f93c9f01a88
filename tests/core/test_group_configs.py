"""Group configs (`kafka-configs --entity-type groups`): which values a group may set, checked as
Kafka's GroupConfig checks them, and the defaults a group without its own value gets."""

from tidelog.core.config import load_config
from tidelog.core.group_configs import GroupConfigs


def configs(**overrides: str) -> GroupConfigs:
    return GroupConfigs(load_config(None, [f"{k.replace('_', '.')}={v}" for k, v in overrides.items()]), None)


def test_numeric_values_must_lie_within_the_broker_bounds():
    g = configs()
    assert g.invalid("share.record.lock.duration.ms", "30000") is None
    assert g.invalid("share.record.lock.duration.ms", "2000") == (
        "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"
    )
    assert "less than or equal to group.share.max.record.lock.duration.ms" in g.invalid(
        "share.record.lock.duration.ms", "600000"
    )
    assert g.invalid("share.delivery.count.limit", "11") is not None
    assert g.invalid("consumer.session.timeout.ms", "10000") is not None
    assert g.invalid("share.heartbeat.interval.ms", "5000") is None
    # a broker that allows shorter locks (tests use 2 s ones)
    assert (
        configs(group_share_min_record_lock_duration_ms="1000").invalid("share.record.lock.duration.ms", "2000") is None
    )


def test_other_values_and_defaults():
    g = configs(group_share_record_lock_duration_ms="20000")
    assert g.invalid("share.auto.offset.reset", "by_duration:PT1H") is None
    assert g.invalid("share.auto.offset.reset", "soon") is not None
    assert g.invalid("no.such.key", "1") == "Unknown group config name: no.such.key"
    assert g.get_int("g", "share.record.lock.duration.ms") == 20000
    g.set("g", {"share.record.lock.duration.ms": "45000"})
    assert g.get_int("g", "share.record.lock.duration.ms") == 45000 and g.own("g") == {
        "share.record.lock.duration.ms": "45000"
    }


def test_streams_values_are_bounded_too():
    g = configs()
    assert g.invalid("streams.session.timeout.ms", "45000") is None
    assert "group.streams.min.session.timeout.ms" in g.invalid("streams.session.timeout.ms", "1000")
    assert "group.streams.max.standby.replicas" in g.invalid("streams.num.standby.replicas", "3")
    assert g.invalid("streams.num.standby.replicas", "2") is None


def test_a_groups_record_lock_limit_lies_within_the_broker_bounds():
    g = configs()
    assert g.get_int("g", "share.partition.max.record.locks") == 2000  # group.share.partition.max.record.locks
    assert g.invalid("share.partition.max.record.locks", "100") is None
    assert g.invalid("share.partition.max.record.locks", "99") == (
        "share.partition.max.record.locks must be greater than or equal to group.share.min.partition.max.record.locks"
    )
    assert g.invalid("share.partition.max.record.locks", "4001") is not None  # group.share.max.partition.max...
    assert (
        configs(group_share_max_partition_max_record_locks="5000").invalid("share.partition.max.record.locks", "4001")
        is None
    )
