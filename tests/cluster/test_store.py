"""EtcdStore against a real etcd: revisions, compare-and-swap, leases, ordered resumable watches."""

import asyncio
import time

import pytest

from tidelog.cluster.etcd import EtcdStore
from tidelog.cluster.store import Compare, LeaseExpired, LeaseKeeper, Op, StoreUnavailable


@pytest.fixture
async def store(etcd):
    s = EtcdStore([etcd.endpoint_hostport], timeout_s=2)
    yield s
    await s.close()


async def test_kv_revisions_and_prefix(store):
    r1 = await store.put("/t/a/1", b"x")
    r2 = await store.put("/t/a/1", b"y")
    await store.put("/t/a/2", b"z")
    await store.put("/t/b", b"other")
    kv = await store.get("/t/a/1")
    assert kv.value == b"y" and kv.create_revision == r1 and kv.mod_revision == r2 and kv.version == 2
    kvs, rev = await store.get_prefix("/t/a/")
    assert [k.key for k in kvs] == ["/t/a/1", "/t/a/2"] and rev >= r2
    assert await store.delete("/t/a/2") and not await store.delete("/t/a/2")
    assert await store.get("/t/a/2") is None


async def test_txn_compare_and_swap(store):
    key = "/t/cas"
    created = await store.txn([Compare.create(key, 0)], [Op.put(key, b"1")], [Op.get(key)])
    assert created.succeeded
    again = await store.txn([Compare.create(key, 0)], [Op.put(key, b"2")], [Op.get(key)])
    assert not again.succeeded and again.responses[0][0].value == b"1"
    kv = await store.get(key)
    ok = await store.txn([Compare.mod(key, kv.mod_revision)], [Op.put(key, b"3")])
    stale = await store.txn([Compare.mod(key, kv.mod_revision)], [Op.put(key, b"4")])
    assert ok.succeeded and not stale.succeeded and (await store.get(key)).value == b"3"
    await store.txn([], [Op.put(key + "/x", b""), Op.put(key + "/y", b"")])
    await store.txn([], [Op.delete_prefix(key + "/")])
    assert (await store.get_prefix(key + "/"))[0] == []


async def test_lease_bound_key_vanishes_with_a_delete_event(store):
    lease = await store.grant(2)
    await store.put("/t/eph", b"me", lease)
    _, rev = await store.get_prefix("/t/eph")
    events = []

    async def watch():
        async for ev in store.watch("/t/eph", rev + 1):
            events.append(ev)
            return

    w = asyncio.ensure_future(watch())
    assert await store.keepalive(lease) > 0
    await asyncio.wait_for(w, 10)  # expires after ~2 s without keepalives
    assert events[0].type == "DELETE" and events[0].kv.key == "/t/eph"
    with pytest.raises(LeaseExpired):
        await store.keepalive(lease)


async def test_watch_from_an_old_revision_and_across_an_etcd_restart(store, etcd):
    first = await store.put("/t/w/1", b"a")
    await store.put("/t/w/2", b"b")
    got = []

    async def watch():
        async for ev in store.watch("/t/w/", first):
            got.append((ev.type, ev.kv.key, ev.kv.value))
            if len(got) == 4:
                return

    w = asyncio.ensure_future(watch())
    await asyncio.sleep(0.3)
    etcd.stop()
    etcd.start()
    await store.put("/t/w/3", b"c")
    await store.delete("/t/w/1")
    await asyncio.wait_for(w, 15)
    assert got == [("PUT", "/t/w/1", b"a"), ("PUT", "/t/w/2", b"b"), ("PUT", "/t/w/3", b"c"),
                   ("DELETE", "/t/w/1", b"")]


async def test_unavailable_is_bounded_and_lease_keeper_reports_loss(store, etcd):
    keeper = LeaseKeeper(store, 2)
    lost = asyncio.Event()
    keeper.on_lost = lost.set
    await keeper.start()
    assert keeper.valid()
    etcd.pause()
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await store.get("/t/x")
        assert time.monotonic() - t0 < 10
        await asyncio.sleep(2.5)
        # etcd away: no longer sure the lease lives, but not lost either (the last known state
        # is kept; only etcd saying the lease is gone ends it)
        assert not keeper.valid() and not lost.is_set()
    finally:
        etcd.resume()
    await asyncio.wait_for(lost.wait(), 10)  # etcd back: the lease expired meanwhile
