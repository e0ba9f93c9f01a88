"""The recovery-point checkpoint is written while the broker runs, not only at shutdown, so a
SIGKILL after a long uptime re-checks only the tail appended since the last checkpoint."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer

from tidelog.log.manager import RECOVERY_POINT_CHECKPOINT, read_checkpoint


def test_recovery_point_checkpointed_periodically_and_used_after_kill(broker_factory):
    b = broker_factory(
        {
            "log.flush.interval.messages": "1",
            "log.flush.offset.checkpoint.interval.ms": "200",
            "num.partitions": "1",
        }
    ).start()
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for i in range(20):
        p.produce("ckpt", value=b"v%d" % i)
        p.flush(10)
    path = b.data_dir / RECOVERY_POINT_CHECKPOINT
    deadline = time.monotonic() + 15
    points: dict = {}
    while time.monotonic() < deadline:
        points = {tp: off for tp, off in read_checkpoint(path).items() if tp[0] == "ckpt"} if path.exists() else {}
        if points and max(points.values()) == 20:
            break
        time.sleep(0.1)
    assert list(points.values()) == [20], points
    b.kill()
    b.start()

    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ckpt", "auto.offset.reset": "earliest"})
    c.subscribe(["ckpt"])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 20 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert got == [b"v%d" % i for i in range(20)]
