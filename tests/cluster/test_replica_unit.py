"""The partition owner's high-watermark rule (cluster/replica.py), on a real log, no etcd: the
HW advances over the maximal ISR (KIP-497) but only while the *committed* ISR has
min.insync.replicas members (KIP-966, Kafka's `isUnderMinIsr`)."""

from __future__ import annotations

from tidelog.cluster.model import PartitionState
from tidelog.cluster.replica import LEADER, Partition, ReplicaManager
from tidelog.log.config import LogConfig
from tidelog.log.manager import LogManager
from tidelog.log.records import Record, build_batch


class _Notified:
    def __init__(self) -> None:
        self.woken: list[tuple[str, int]] = []

    def notify(self, topic: str, partition: int) -> None:
        self.woken.append((topic, partition))


def leading(tmp_path, isr: tuple[int, ...], records: int) -> tuple[ReplicaManager, Partition]:
    """Broker 1 leads t-0 with `isr` (committed), `records` appended; min.insync.replicas=2."""
    plog = LogManager([tmp_path], LogConfig()).get_or_create("t", 0)
    plog.start_replication()
    plog.append(build_batch([Record(b"k", b"v%d" % i, 1_767_225_600_000 + i) for i in range(records)]))
    rm = ReplicaManager(
        1,
        None,
        None,
        None,
        _Notified(),
        {"replica.lag.time.max.ms": 5000},
        lambda: True,
        lambda topic: 2,
        lambda: 101,
        None,
    )
    p = Partition(
        "t", 0, plog, role=LEADER, state=PartitionState(1, 3, isr, 7, 1, 101, tuple((b, f"d{b}") for b in isr), ())
    )
    return rm, p


def test_a_pending_expansion_counts_for_the_hw_only_once_the_isr_has_min_isr_members(tmp_path):
    # committed ISR [1] (below min.insync.replicas=2), broker 3 caught up, its addition proposed
    # but not written: the controller would elect from [1] and the eligible leader replicas,
    # which need not hold what 1 and 3 hold - the HW must wait for the write
    rm, p = leading(tmp_path, (1,), 5)
    p.follower_leo[3], p.pending_isr = 5, (1, 3)
    rm.maybe_advance_hw(p)
    assert p.plog.high_watermark == 0
    # committed ISR [1, 2] with 3 pending: all three count (KIP-497), 2 lags
    rm, p = leading(tmp_path / "b", (1, 2), 5)
    p.follower_leo.update({2: 2, 3: 5})
    p.pending_isr = (1, 2, 3)
    rm.maybe_advance_hw(p)
    assert p.plog.high_watermark == 2
    p.follower_leo[2] = 5
    rm.maybe_advance_hw(p)
    assert p.plog.high_watermark == 5


def _two_leading(tmp_path):
    """Broker 1 leads a-0 and b-0 at epoch 3 with ISR [1, 2], five records each, HW 0."""
    rm, a = leading(tmp_path / "a", (1, 2), 5)
    _rm, b = leading(tmp_path / "b", (1, 2), 5)
    b.topic = "b"
    a.follower_leo[2] = b.follower_leo[2] = 0
    return rm, a, b


def test_one_request_waits_for_all_its_appends_and_answers_each(tmp_path):
    import asyncio

    from tidelog.cluster.partition import Lease

    async def run():
        rm, a, b = _two_leading(tmp_path)
        a.follower_leo[2] = 5  # a is replicated already: its wait is answered as it parks
        task = asyncio.ensure_future(rm.wait_all_replicated([(Lease(a, 3), 4), (Lease(b, 3), 4)], 5.0))
        for _ in range(5):
            await asyncio.sleep(0)
        # a's answer alone must not end the request while b's append waits
        assert not task.done() and a.plog.high_watermark == 5 and b.plog.high_watermark == 0
        rm.on_follower_fetch(b, 2, 3)  # HW 3: not past offset 4
        await asyncio.sleep(0)
        assert not task.done()
        rm.on_follower_fetch(b, 2, 5)
        assert await task == [0, 0] and not a.waiting and not b.waiting

    asyncio.run(run())


def test_a_request_times_out_and_fails_on_a_role_change_per_append(tmp_path):
    import asyncio

    from tidelog.cluster.partition import UNKNOWN_OUTCOME, Lease

    async def run():
        rm, a, b = _two_leading(tmp_path)
        # b's wait outlives the request timeout; a is answered 0
        task = asyncio.ensure_future(rm.wait_all_replicated([(Lease(a, 3), 4), (Lease(b, 3), 4)], 0.05))
        await asyncio.sleep(0)
        rm.on_follower_fetch(a, 2, 5)
        assert await task == [0, 7] and not b.waiting  # REQUEST_TIMED_OUT
        # a leadership change fails what waits (UNKNOWN_OUTCOME), a lease of another epoch at once
        task = asyncio.ensure_future(rm.wait_all_replicated([(Lease(b, 3), 4), (Lease(b, 2), 4)], 5.0))
        await asyncio.sleep(0)
        b.fail_waiting()
        assert await task == [UNKNOWN_OUTCOME, UNKNOWN_OUTCOME]
        # a cancelled request leaves nothing parked
        task = asyncio.ensure_future(rm.wait_all_replicated([(Lease(b, 3), 4)], 5.0))
        await asyncio.sleep(0)
        assert len(b.waiting) == 1
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert not b.waiting

    asyncio.run(run())
