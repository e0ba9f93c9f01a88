"""Controller election, failover decisions written with compare-and-swap, fencing of a deposed
controller, and producer-id blocks, against the in-memory store (fake_store.py): the same code
the brokers run, without processes or etcd."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from fake_store import FakeStore

from tidelog.cluster.controller import Controller
from tidelog.cluster.metadata import MetadataCache
from tidelog.cluster.model import BrokerInfo, Endpoint, Keys, PartitionState, TopicAssignment, root
from tidelog.cluster.pids import ClusterProducerIds

KEYS = Keys(root("unit"))


class Node:
    """One broker's cluster view: its lease, registration, metadata cache and controller."""

    def __init__(self, store: FakeStore, node_id: int, unclean: bool = False) -> None:
        self.store, self.node_id = store, node_id
        self.cache = MetadataCache(store, KEYS)
        self.lease = 0
        self.controller = Controller(store, KEYS, self.cache, node_id, lambda: self.lease, lambda _t: unclean)
        self.tasks: list[asyncio.Task] = []

    async def start(self) -> Node:
        self.lease = await self.store.grant(3)
        await self.store.put(
            KEYS.broker(self.node_id),
            BrokerInfo(self.node_id, (Endpoint("PLAINTEXT", "127.0.0.1", 9000 + self.node_id),)).encode(),
            self.lease,
        )
        await self.cache.load()
        self.tasks = [asyncio.ensure_future(self.cache.run()), asyncio.ensure_future(self.controller.run())]
        return self

    def die(self) -> None:
        for t in self.tasks:
            t.cancel()
        self.store.expire(self.lease)

    def stop(self) -> None:
        for t in self.tasks:
            t.cancel()


async def until(cond, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def make_topic(store: FakeStore, replicas: tuple[tuple[int, ...], ...]) -> None:
    await store.put(KEYS.topic("t"), TopicAssignment("t", uuid.uuid4(), replicas).encode())


def state(store: FakeStore, p: int = 0) -> PartitionState:
    kv = store.kv[KEYS.partition("t", p)]
    return PartitionState.decode(kv.value, kv.mod_revision)


async def test_one_controller_elected_and_replaced_when_it_dies():
    store = FakeStore()
    nodes = [await Node(store, i).start() for i in (1, 2, 3)]
    try:
        await until(lambda: sum(n.controller.active for n in nodes) == 1)
        first = next(n for n in nodes if n.controller.active)
        epoch = first.controller.epoch
        assert all(n.cache.controller_id == first.node_id for n in nodes)
        first.die()
        rest = [n for n in nodes if n is not first]
        await until(lambda: sum(n.controller.active for n in rest) == 1)
        second = next(n for n in rest if n.controller.active)
        assert second.controller.epoch > epoch  # the new controller key's create_revision
    finally:
        for n in nodes:
            n.stop()


async def test_new_topic_leaders_and_failover_with_epoch_bump():
    store = FakeStore()
    nodes = {i: await Node(store, i).start() for i in (1, 2, 3)}
    try:
        await make_topic(store, ((1, 2, 3), (2, 3, 1)))
        await until(lambda: KEYS.partition("t", 1) in store.kv)
        assert (state(store, 0).leader, state(store, 0).leader_epoch, state(store, 0).isr) == (1, 0, (1, 2, 3))
        assert state(store, 1).leader == 2
        ctrl = next(n for n in nodes.values() if n.controller.active)
        victim = 1 if ctrl.node_id != 1 else 2
        nodes[victim].die()
        p = 0 if victim == 1 else 1
        await until(lambda: state(store, p).leader not in (victim,))
        s = state(store, p)
        assert s.leader_epoch == 1 and victim not in s.isr and s.leader == s.isr[0]
        other = state(store, 1 - p)  # the partition it followed: out of the ISR, same leader and epoch
        assert victim not in other.isr and other.leader_epoch == 0
    finally:
        for n in nodes.values():
            n.stop()


@pytest.mark.parametrize("unclean", [False, True])
async def test_no_in_sync_replica_left_goes_offline_unless_unclean(unclean):
    store = FakeStore()
    nodes = {i: await Node(store, i, unclean).start() for i in (1, 2, 3)}
    try:
        await make_topic(store, ((1, 2, 3),))
        await until(lambda: KEYS.partition("t", 0) in store.kv)
        # the ISR shrank to the leader alone (as the leader would write it)
        s = state(store, 0)
        await store.put(KEYS.partition("t", 0), PartitionState(1, s.leader_epoch, (1,), s.controller_epoch).encode())
        ctrl = next(n for n in nodes.values() if n.controller.active)
        if ctrl.node_id == 1:  # keep a controller alive: move it off broker 1 first
            ctrl.die()
            await until(lambda: any(n.controller.active for i, n in nodes.items() if i != 1))
        nodes[1].die()
        await until(lambda: state(store, 0).leader != 1)
        s = state(store, 0)
        if unclean:
            assert s.leader in (2, 3) and s.isr == (s.leader,), s  # a live replica outside the ISR
        else:
            assert s.leader == -1 and s.isr == (1,), s  # offline; the last in-sync replica is kept
    finally:
        for n in nodes.values():
            n.stop()


async def test_a_deposed_controller_cannot_write():
    store = FakeStore()
    a = await Node(store, 1).start()
    await until(lambda: a.controller.active)
    b = await Node(store, 2).start()
    await make_topic(store, ((1, 2),))
    await until(lambda: KEYS.partition("t", 0) in store.kv)
    a.stop()  # A stalls (a long GC pause, a partition from etcd) ...
    store.expire(a.lease)  # ... its lease expires, B takes over and moves the leadership to itself
    await until(lambda: b.controller.active and state(store).leader == 2)
    settled = store.kv[KEYS.partition("t", 0)]
    # A wakes up still believing it is the controller (its cache is stale: broker 1 alive, the
    # old state) and acts on it: it would shrink the ISR to itself
    a.cache.controller_id, a.cache.controller_epoch = 1, a.controller.epoch
    a.cache.brokers.pop(2, None)
    a.cache.states[("t", 0)] = PartitionState.decode(settled.value, settled.mod_revision)
    assert await a.controller.reconcile() == 0  # every write compares the controller key: refused
    assert store.kv[KEYS.partition("t", 0)] == settled  # B's state stands
    assert (state(store).leader, state(store).leader_epoch, state(store).isr) == (2, 1, (2,))
    b.stop()


async def test_producer_id_blocks_never_overlap():
    store = FakeStore()
    caches = [MetadataCache(store, KEYS) for _ in range(3)]
    allocs = [ClusterProducerIds(store, KEYS.producer_ids, c) for c in caches]
    await asyncio.gather(*(a.start() for a in allocs))
    seen: set[int] = set()
    for _ in range(1500):  # more than a block each: refills while others allocate
        for a in allocs:
            try:
                pid = a.next_id()
            except Exception:  # noqa: BLE001 - next block still being reserved
                await asyncio.sleep(0.01)
                continue
            assert pid not in seen
            seen.add(pid)
        await asyncio.sleep(0)
    assert len(seen) > 3000
