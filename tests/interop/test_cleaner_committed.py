"""The cleaner never loses a committed value (KIP-98's cleaner rules), with real clients.

A compacted topic: K = committed-v0, K = committed-v1, then a transactional producer writes
K = ABORTED and aborts (or leaves the transaction open while the cleaner runs, then aborts). A
read_committed consumer must see committed-v1 after the cleaner as before it. The same for
`__consumer_offsets`: an aborted send_offsets_to_transaction never shadows the group's committed
offset, also after a restart replays the cleaned log.

Each check follows a cleaner pass that is seen to have run: the broker's "cleaned <partition>:"
log line, written after the check's records, with the number of records the pass removed."""

from __future__ import annotations

import re
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

BROKER_OVERRIDES = {
    "log.retention.check.interval.ms": "200",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.segment.bytes": "2048",
    "transaction.state.log.num.partitions": "1",
}
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",
    "min.compaction.lag.ms": "0",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "86400000",
}


# min.compaction.lag.ms that keeps the cleaner off a topic until a test lifts it (_set_config)
HELD_LAG_MS = "3600000"


def _topic(broker, **config: str) -> str:
    name = f"cmp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(name, 1, 1, config={**TOPIC_CONFIG, **config})]).values():
        f.result(30)
    return name


def _set_config(broker, topic: str, key: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)],
    )
    admin.incremental_alter_configs([res])[res].result(20)


def _values(broker, topic: str, key: bytes, isolation: str) -> list[bytes]:
    """Every value of `key` a consumer with `isolation` reads from the start (until the high
    watermark, or 2 s without a message: read_committed stops at the LSO)."""
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.assign([TopicPartition(topic, 0, lo)])
    out, last = [], time.monotonic()
    while time.monotonic() - last < 2.0:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        last = time.monotonic()
        if m.key() == key:
            out.append(m.value())
        if m.offset() + 1 >= hi:
            break
    c.close()
    return out


def _filler(broker, topic: str, n: int = 40) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(n):
        p.produce(topic, key=b"filler-%d" % i, value=b"x" * 100)
        p.flush(10)  # one batch each: segments roll on the size limit


def _cleaned(broker, partition: str, since: int, timeout: float = 20.0) -> int:
    """Waits for the broker's log line saying the cleaner rewrote `partition` (after offset
    `since` of the broker's log file); the number of records that pass removed."""
    line = re.compile(rf"cleaned {re.escape(partition)}: \d+ segments rewritten, (\d+) records")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = line.search(_full_log(broker), since)
        if m:
            return int(m.group(1))
        time.sleep(0.2)  # the poll interval of this wait
    raise AssertionError(f"the cleaner did not clean {partition} within {timeout} s:\n{broker.log()[-3000:]}")


def _full_log(broker) -> str:
    return broker.log_path.read_text(errors="replace")


def _committed_then_aborted(broker, topic: str, close_txn_before_cleaning: bool) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce(topic, key=b"K", value=b"committed-v0")
    p.produce(topic, key=b"K", value=b"committed-v1")
    p.flush(10)
    if not close_txn_before_cleaning:
        _filler(broker, topic)  # committed-v0 and -v1 in closed segments, ahead of the transaction
    tp = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"})
    tp.init_transactions(20)
    tp.begin_transaction()
    tp.produce(topic, key=b"K", value=b"ABORTED")
    tp.flush(10)
    if not close_txn_before_cleaning:
        # The topic's cleaner was held off (HELD_LAG_MS) until the transaction's segment is closed
        # too: a cleaner that ignored the open transaction would now count ABORTED as K's latest
        # value and remove committed-v1. Lifting the lag lets the next pass run; it must clean
        # the prefix ahead of the transaction (removing committed-v0) and leave committed-v1 alone.
        _filler(broker, topic)
        mark = len(_full_log(broker))
        _set_config(broker, topic, "min.compaction.lag.ms", "0")
        assert _cleaned(broker, f"{topic}-0", mark) >= 1  # a pass ran, and removed committed-v0
        assert _values(broker, topic, b"K", "read_committed") == [b"committed-v1"]
    mark = len(_full_log(broker))
    tp.abort_transaction(20)
    _filler(broker, topic)
    # the cleaner ran: the aborted value (and committed-v0) are gone from the log, committed-v1 stays
    assert _cleaned(broker, f"{topic}-0", mark) >= 1
    assert _values(broker, topic, b"K", "read_uncommitted") == [b"committed-v1"]
    assert _values(broker, topic, b"K", "read_committed") == [b"committed-v1"]


def test_aborted_value_does_not_shadow_committed(module_broker):
    _committed_then_aborted(module_broker, _topic(module_broker), close_txn_before_cleaning=True)


def test_open_transaction_is_not_cleaned(module_broker):
    topic = _topic(module_broker, **{"min.compaction.lag.ms": HELD_LAG_MS})
    _committed_then_aborted(module_broker, topic, close_txn_before_cleaning=False)


def test_aborted_txn_offset_commit_does_not_shadow_committed_offset(module_broker):
    broker = module_broker
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    _filler(broker, topic, 10)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    tp = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"})
    tp.init_transactions(20)
    tp.begin_transaction()
    tp.produce(topic, key=b"t", value=b"t")
    tp.send_offsets_to_transaction([TopicPartition(topic, 0, 9)], c.consumer_group_metadata(), 20)
    tp.abort_transaction(20)
    mark = len(_full_log(broker))
    # other groups' commits roll __consumer_offsets' 2 KiB segments
    for i in range(60):
        o = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": f"{group}-f{i % 3}", "enable.auto.commit": False}
        )
        o.commit(offsets=[TopicPartition(topic, 0, i)], asynchronous=False)
        o.close()
    assert _cleaned(broker, "__consumer_offsets-0", mark) >= 1  # the other groups' older commits
    assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 5
    c.close()
    broker.restart()  # the group store replays the cleaned __consumer_offsets
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    assert c.committed([TopicPartition(topic, 0)], timeout=20)[0].offset == 5
    c.close()
