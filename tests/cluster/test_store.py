"""EtcdStore against a real etcd: revisions, compare-and-swap, leases, ordered resumable watches,
and what a call does when its answer is lost (a proxy in front of etcd drops it): reads are
retried, writes raise OutcomeUnknown and are never sent twice."""

import asyncio
import json
import logging
import re
import time

import pytest
from broker_process import free_port

from tidelog.cluster.etcd import EtcdStore
from tidelog.cluster.store import Compare, LeaseExpired, LeaseKeeper, Op, OutcomeUnknown, StoreUnavailable

# the store's timeout behind the proxy: each lost answer costs one of these
LOST_ANSWER_TIMEOUT_S = 1.0


async def until(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)  # the poll interval of this wait


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
    await until(lambda: len(got) == 2, 10, "the watch to replay the two puts")  # it runs: restart under it
    etcd.stop()
    etcd.start()
    await store.put("/t/w/3", b"c")
    await store.delete("/t/w/1")
    await asyncio.wait_for(w, 15)
    assert got == [("PUT", "/t/w/1", b"a"), ("PUT", "/t/w/2", b"b"), ("PUT", "/t/w/3", b"c"), ("DELETE", "/t/w/1", b"")]


async def test_unavailable_is_bounded_and_lease_keeper_reports_loss(store, etcd, caplog):
    caplog.set_level(logging.WARNING, logger="tidelog.cluster")
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
        # the keeper had its chance: a keepalive failed a whole TTL after the last one that
        # succeeded (it says so in the log)
        await until(
            lambda: lost.is_set() or any("etcd unreachable for a whole session" in m for m in caplog.messages),
            20,
            "the lease keeper to find etcd unreachable for a whole TTL",
        )
        # etcd away: no longer sure the lease lives, but not lost either (the last known state
        # is kept; only etcd saying the lease is gone ends it)
        assert not keeper.valid() and not lost.is_set()
    finally:
        etcd.resume()
    await asyncio.wait_for(lost.wait(), 10)  # etcd back: the lease expired meanwhile


class EtcdProxy:
    """A loopback TCP proxy in front of etcd for HTTP/1.1 requests sent one at a time per
    connection (as EtcdStore sends them). `lose_next(path)`: the next request on that path is
    forwarded to etcd but etcd's answer is dropped and the client's connection left open, so
    the client sees no answer at all (and sends nothing more on it). `replace_next(path, status,
    doc)`: forwarded, and etcd's answer replaced by this one, which closes the connection. `seen`
    lists every request path forwarded, in order."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.seen: list[str] = []
        self._lose: set[str] = set()
        self._replace: dict[str, bytes] = {}
        self._conns: set[asyncio.StreamWriter] = set()
        self._serving: set[asyncio.Task] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def hostport(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> "EtcdProxy":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def lose_next(self, path: str) -> None:
        self._lose.add(path)

    def replace_next(self, path: str, status: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self._replace[path] = (
            f"HTTP/1.1 {status} Whatever\r\nContent-Type: application/json\r\n"
            f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    def drop_connections(self) -> None:
        """Close every connection as a restarted etcd would: the client's pooled ones go stale."""
        for w in list(self._conns):
            w.close()

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        self._serving.add(asyncio.current_task())
        ureader, uwriter = await asyncio.open_connection(*self.upstream)
        self._conns |= {cwriter, uwriter}
        answer = {"drop": False}  # etcd's answers from now on: forwarded, or not

        async def back() -> None:
            while data := await ureader.read(65536):
                if not answer["drop"]:
                    cwriter.write(data)
                    await cwriter.drain()
            if not answer["drop"]:
                cwriter.close()

        pump = asyncio.ensure_future(back())
        try:
            while True:
                head = await creader.readuntil(b"\r\n\r\n")
                m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
                body = await creader.readexactly(int(m.group(1)) if m else 0)
                path = head.split(b" ", 2)[1].decode()
                self.seen.append(path)
                if path in self._lose:
                    self._lose.discard(path)
                    answer["drop"] = True
                elif path in self._replace:
                    answer["drop"] = True
                    cwriter.write(self._replace.pop(path))
                uwriter.write(head + body)
                await uwriter.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # the client went away (or was dropped): so does its etcd connection
        finally:
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
            uwriter.close()
            cwriter.close()
            self._conns -= {cwriter, uwriter}
            self._serving.discard(asyncio.current_task())

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        self.drop_connections()  # each connection's task then sees the end of its client's stream
        await asyncio.wait_for(asyncio.gather(*self._serving), 10)


@pytest.fixture
async def proxy(etcd):
    p = await EtcdProxy(etcd.endpoint_hostport).start()
    yield p
    await p.stop()


@pytest.fixture
async def via_proxy(proxy):
    s = EtcdStore([proxy.hostport], timeout_s=LOST_ANSWER_TIMEOUT_S)
    yield s
    await s.close()


async def test_a_cas_whose_answer_is_lost_raises_outcome_unknown_and_is_not_resent(store, proxy, via_proxy):
    # the compare-and-swap commits in etcd, its answer never comes back: a retry would "fail"
    # against its own first write (create_revision is no longer 0) and the caller would believe
    # it lost while etcd holds its value
    key = "/t/lost/cas"
    proxy.lose_next("/v3/kv/txn")
    try:
        result = await via_proxy.txn([Compare.create(key, 0)], [Op.put(key, b"mine")], [Op.get(key)])
    except OutcomeUnknown as e:
        assert "txn" in str(e) and key in str(e)
    else:
        pytest.fail(
            f"a compare-and-swap whose answer was lost returned {result} (sent {proxy.seen.count('/v3/kv/txn')} times)"
        )
    assert proxy.seen.count("/v3/kv/txn") == 1
    kv = await store.get(key)  # etcd itself, not through the proxy: the write did commit
    assert kv is not None and kv.value == b"mine" and kv.version == 1


@pytest.mark.parametrize("call", ["put", "delete", "grant", "revoke"])
async def test_other_writes_whose_answer_is_lost_raise_outcome_unknown(store, proxy, via_proxy, call):
    key = f"/t/lost/{call}"
    await store.put(key, b"before")
    lease = await store.grant(60)
    path, write = {
        "put": ("/v3/kv/put", lambda: via_proxy.put(key, b"after")),
        "delete": ("/v3/kv/deleterange", lambda: via_proxy.delete(key)),
        "grant": ("/v3/lease/grant", lambda: via_proxy.grant(60)),
        "revoke": ("/v3/lease/revoke", lambda: via_proxy.revoke(lease)),
    }[call]
    proxy.lose_next(path)
    with pytest.raises(OutcomeUnknown):
        await write()
    assert proxy.seen.count(path) == 1


@pytest.mark.parametrize("call", ["get", "get_prefix", "txn of gets", "keepalive"])
async def test_a_read_whose_answer_is_lost_is_retried(store, proxy, via_proxy, call):
    key = "/t/lost/read"
    await store.put(key, b"v")
    lease = await store.grant(60)
    path, read, expect = {
        "get": ("/v3/kv/range", lambda: via_proxy.get(key), lambda r: r.value == b"v"),
        "get_prefix": ("/v3/kv/range", lambda: via_proxy.get_prefix(key), lambda r: r[0][0].value == b"v"),
        "txn of gets": (
            "/v3/kv/txn",
            lambda: via_proxy.txn([Compare(key, "version", ">", 0)], [Op.get(key)]),
            lambda r: r.succeeded and r.responses[0][0].value == b"v",
        ),
        "keepalive": ("/v3/lease/keepalive", lambda: via_proxy.keepalive(lease), lambda r: r > 0),
    }[call]
    proxy.lose_next(path)
    assert expect(await read())
    assert proxy.seen.count(path) == 2


async def test_a_write_goes_to_the_next_endpoint_when_the_first_refuses_connections(proxy):
    dead = f"127.0.0.1:{free_port()}"  # nothing listens: sent nowhere, so safe to send elsewhere
    s = EtcdStore([dead, proxy.hostport], timeout_s=LOST_ANSWER_TIMEOUT_S)
    try:
        key = "/t/failover/cas"
        assert (await s.txn([Compare.create(key, 0)], [Op.put(key, b"1")])).succeeded
        await s.close()
        s = EtcdStore([dead, proxy.hostport], timeout_s=LOST_ANSWER_TIMEOUT_S)  # the dead one first again
        assert await s.put(key + "/2", b"2") > 0
    finally:
        await s.close()
    assert proxy.seen == ["/v3/kv/txn", "/v3/kv/put"]


async def test_a_write_after_etcd_closed_the_pooled_connections_is_sent_and_answered(proxy, via_proxy):
    assert await via_proxy.get("/t/stale") is None  # leaves a kept-alive connection in the pool
    proxy.drop_connections()
    assert await via_proxy.put("/t/stale", b"x") > 0
    assert (await via_proxy.get("/t/stale")).value == b"x"
    assert proxy.seen.count("/v3/kv/put") == 1


async def test_an_etcd_error_after_a_write_was_sent_is_ambiguous_only_when_it_may_still_commit(store, proxy, via_proxy):
    # etcd's "request timed out" (503): the proposal may still commit
    proxy.replace_next(
        "/v3/kv/put",
        503,
        {"error": "etcdserver: request timed out", "code": 14, "message": "etcdserver: request timed out"},
    )
    with pytest.raises(OutcomeUnknown):
        await via_proxy.put("/t/err/put", b"x")
    # the same on a read is a plain failure
    proxy.replace_next(
        "/v3/kv/range",
        503,
        {"error": "etcdserver: request timed out", "code": 14, "message": "etcdserver: request timed out"},
    )
    with pytest.raises(StoreUnavailable) as info:
        await via_proxy.get("/t/err/put")
    assert not isinstance(info.value, OutcomeUnknown)
    # a refusal (4xx) is definite: nothing was written
    with pytest.raises(StoreUnavailable) as info:
        await via_proxy.txn([], [Op.put("/t/err/dup", b"1"), Op.put("/t/err/dup", b"2")])
    assert not isinstance(info.value, OutcomeUnknown) and "400" in str(info.value)
    assert await store.get("/t/err/dup") is None
    with pytest.raises(LeaseExpired):
        await via_proxy.put("/t/err/leased", b"x", lease=0x7E57)
