"""Issue 26's defects, each as a scripted simulation: the fault sequence that produced it, then
what must hold. Each failed on the code before its fix (the commit that fixes it says so)."""

from __future__ import annotations

import asyncio

import pytest

from .scripted import as_client, client, log_values, produce, ready_topic, replicas, simulate, state, txn_producer

pytestmark = pytest.mark.timeout(120)


def leader_epoch_errors(sim) -> list[str]:
    return [v for v in sim.violations if "leads at epoch" in v or "differ below" in v or "went back" in v]


# ---- defect 1: a stale acks=all waiter completed after re-election ------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_acks_all_waiting_on_a_deposed_leader_is_never_acknowledged_at_an_offset_it_lost(seed):
    """A leader paused past its session with acks=all requests in its sockets: a follower is
    elected and fills the same offsets; resumed, the old leader appends the requests (it still
    believes it leads) and learns it follows while their flush runs, then leads again (preferred
    election). Every request answered without error must hold its record at the offset it was
    told (before the fix: every one was acknowledged at an offset holding a newer record)."""
    answers: list[tuple[str, int, int]] = []

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d1", configs={"min.insync.replicas": "2", "flush.messages": "1"})
        assert (await produce(c, "d1", 0, [f"warm-{i}" for i in range(5)]))[0] == 0
        old = state(sim, "d1").leader
        assert old == replicas(sim, "d1")[0]
        clients = [client(sim, f"w{i}") for i in range(8)]
        for w in clients:
            await as_client(w, w.refresh(["d1"]))
        sim.brokers[old].pause()
        waiting = []
        for i, w in enumerate(clients):
            waiting.append(
                (f"stale-{i}", asyncio.ensure_future(produce(w, "d1", 0, [f"stale-{i}"], to=old, timeout_ms=60000)))
            )
            await asyncio.sleep(0.05)
        assert await sim.until(lambda: state(sim, "d1").leader not in (old, -1), 20), state(sim, "d1")
        assert (await produce(c, "d1", 0, [f"new-{i}" for i in range(20)]))[0] == 0
        sim.loop.fsync_delay[sim.brokers[old].name] = 0.05  # its appends flush while it learns of the change
        sim.brokers[old].resume()
        # back to its preferred leader (the controller's rebalance runs every 5 s)
        assert await sim.until(lambda: state(sim, "d1").leader == old, 60), state(sim, "d1")
        for value, fut in waiting:
            code, base = await asyncio.wait_for(fut, 90)
            answers.append((value, code, base))
        await asyncio.sleep(2)
        values.update(log_values(sim, state(sim, "d1").leader, "d1"))

    values: dict[int, str] = {}
    sim = simulate(body, seed=seed, overrides={"leader.imbalance.check.interval.seconds": "2"})
    wrong = [(v, base, values.get(base)) for v, code, base in answers if code == 0 and values.get(base) != v]
    assert not wrong, f"acknowledged at offsets holding other records: {wrong}"
    assert not leader_epoch_errors(sim), sim.violations


# ---- defect 5: a restarted broker is not fenced ------------------------------------------------
@pytest.mark.parametrize("wipe", [True, False])
def test_a_leader_restarted_within_its_session_does_not_lead_at_its_old_epoch(wipe):
    """The leader crashes and comes back at once (its registration has not expired), with or
    without its disk. It must not resume leading at the same leader epoch, and no acknowledged
    record may be lost."""
    acked: dict[str, int] = {}

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d5")
        for i in range(6):
            code, base = await produce(c, "d5", 0, [f"a-{i}"])
            assert code == 0
            acked[f"a-{i}"] = base
        old = state(sim, "d5").leader
        sim.brokers[old].crash(wipe=wipe)
        await asyncio.sleep(0.05)
        sim.brokers[old].start()
        for i in range(6):
            code, base = await produce(c, "d5", 0, [f"b-{i}"], retry_s=60)
            if code == 0:
                acked[f"b-{i}"] = base
        await asyncio.sleep(15)
        values.update(log_values(sim, state(sim, "d5").leader, "d5"))

    values: dict[int, str] = {}
    sim = simulate(body)
    assert not leader_epoch_errors(sim), sim.violations
    lost = {v: o for v, o in acked.items() if values.get(o) != v}
    assert not lost, f"acknowledged records lost or moved: {lost}"


# ---- defect 6: an etcd write whose answer was lost is read back --------------------------------
def test_a_controller_whose_election_answer_was_lost_still_acts():
    """The controller dies; the next broker's election write is applied by etcd but its answer
    is lost. That broker must learn it won (read back), and fail the partitions over."""

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d6", partitions=3)
        ctrl = next(n for n, b in sim.brokers.items() if b.broker.cluster.controller.active)
        root = sim.brokers[ctrl].broker.cluster.keys.controller
        sim.etcd.lose_answers[root] = 1
        sim.brokers[ctrl].crash()
        assert await sim.until(
            lambda: any(b.up and b.broker.cluster.controller.active for b in sim.brokers.values()), 30
        ), "no controller acts after the answer of its election was lost"
        led = [p for p in range(3) if state(sim, "d6", p).leader == ctrl]
        assert await sim.until(lambda: all(state(sim, "d6", p).leader not in (ctrl, -1) for p in led), 30), [
            state(sim, "d6", p) for p in led
        ]

    simulate(body)


# ---- defect 7: an ISR change's answer must not overwrite newer state ------------------------------
def test_a_late_isr_change_answer_does_not_replace_newer_state():
    """The leader shrinks the ISR; etcd applies it but answers late, and meanwhile the controller
    writes a newer state (another broker died). The leader must keep the newer state: its copy
    ends equal to etcd's, and acks=all writes go on."""

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d7", configs={"min.insync.replicas": "1"})
        leader = state(sim, "d7").leader
        f, g = [b for b in replicas(sim, "d7") if b != leader]
        key = next(k for k in sim.etcd.kv if k.endswith("/topics/d7/p/0"))
        lb = sim.brokers[leader]
        sim.etcd.answer_delay[key] = 4.0  # etcd applies the leader's ISR change at once, answers late
        sim.net.sever(lb.name, sim.brokers[f].name)  # f falls behind: the leader shrinks it out
        assert (await produce(c, "d7", 0, ["x"], acks=1))[0] == 0
        assert await sim.until(lambda: f not in state(sim, "d7").isr, 20)
        sim.etcd.answer_delay.pop(key, None)
        await sim.brokers[g].shutdown()  # the controller removes g: a newer state, seen through the watch
        assert await sim.until(lambda: g not in state(sim, "d7").isr, 3)
        await asyncio.sleep(5)  # the late answer has come
        r = lb.replica_manager().replicas[("d7", 0)]
        assert r.state.version == state(sim, "d7").version, (r.state, state(sim, "d7"))
        assert (await produce(c, "d7", 0, ["after"], retry_s=10))[0] == 0

    simulate(body)


# ---- defect 8: a follower without its epoch cache truncates to its high watermark ------------------
def test_a_follower_without_leader_epochs_truncates_to_its_high_watermark():
    """A follower holds an uncommitted tail the new leader never had, and lost its
    leader-epoch-checkpoint. It must truncate to its high watermark before fetching, not keep the
    divergent tail below the leader's later records."""

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d8")
        order = replicas(sim, "d8")
        leader, nxt, tail = order
        for i in range(10):
            assert (await produce(c, "d8", 0, [f"c-{i}"]))[0] == 0
        sim.net.sever(sim.brokers[leader].name, sim.brokers[nxt].name)
        for i in range(5):
            assert (await produce(c, "d8", 0, [f"u-{i}"], acks=1, to=leader))[0] == 0
        tail_log = lambda: sim.brokers[tail].plog("d8", 0)
        assert await sim.until(lambda: tail_log().log_end_offset == 15, 5)
        sim.brokers[tail].crash()  # holds the 5 uncommitted records, and loses its epoch cache
        (sim.brokers[tail].dir / "d8-0" / "leader-epoch-checkpoint").unlink()
        sim.brokers[leader].crash()
        sim.net.heal()
        assert await sim.until(lambda: state(sim, "d8").leader == nxt, 20), state(sim, "d8")
        for i in range(8):
            assert (await produce(c, "d8", 0, [f"n-{i}"], acks=1))[0] == 0
        sim.brokers[tail].start()
        sim.brokers[leader].start()
        assert await sim.until(lambda: set(state(sim, "d8").isr) == set(order), 30), state(sim, "d8")
        sim.check_now()
        logs.extend(log_values(sim, b, "d8") for b in order)

    logs: list[dict[int, str]] = []
    sim = simulate(body)
    assert not leader_epoch_errors(sim), sim.violations
    a = logs[0]
    for b in logs[1:]:
        assert a == b, {o: (a.get(o), b.get(o)) for o in sorted(set(a) | set(b)) if a.get(o) != b.get(o)}


def test_a_follower_that_is_not_registered_does_not_join_the_isr():
    """A follower cut off from etcd past its session is no registered broker (its incarnation
    ended), yet it can still fetch from the leader. However far it catches up, the leader must
    not add it to the ISR until it has registered again: etcd would list in sync a broker the
    controller considers gone."""

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d8b")
        leader = state(sim, "d8b").leader
        f = [b for b in replicas(sim, "d8b") if b != leader][0]
        lname, fname = sim.brokers[leader].name, sim.brokers[f].name
        sim.net.sever(lname, fname)
        sim.etcd.set_reachable(fname, False)
        brokers_key = next(k for k in sim.etcd.kv if k.endswith(f"/brokers/ids/{f}"))
        assert await sim.until(lambda: f not in state(sim, "d8b").isr and brokers_key not in sim.etcd.kv, 30), state(
            sim, "d8b"
        )
        for i in range(5):
            assert (await produce(c, "d8b", 0, [f"x-{i}"]))[0] == 0
        sim.net.mend(lname, fname)  # it fetches, and catches up
        flog = lambda: sim.brokers[f].plog("d8b", 0)
        llog = lambda: sim.brokers[leader].plog("d8b", 0)
        assert await sim.until(lambda: flog().log_end_offset == llog().log_end_offset, 10)
        for _ in range(50):  # 5 s, at every tenth of a second
            assert f not in state(sim, "d8b").isr, f"unregistered broker {f} joined the ISR: {state(sim, 'd8b')}"
            await asyncio.sleep(0.1)
        sim.etcd.set_reachable(fname, True)  # registered again: now it may join
        assert await sim.until(lambda: f in state(sim, "d8b").isr, 30), state(sim, "d8b")

    simulate(body)


# ---- defect 2: a transaction marker written by a deposed leader -----------------------------------
def test_a_marker_written_by_a_deposed_leader_is_not_counted():
    """The transaction coordinator sends COMMIT markers to a data partition's leader that is
    paused past its session; a follower is elected. Resumed, the old leader writes the marker at
    its stale epoch and learns it follows while the marker's flush runs, then leads again. The
    coordinator must not complete the commit on that marker: the committed records must end
    committed (a COMMIT marker after them) on the partition's final leader."""
    from .clients import History, TxnProducer

    outcome: dict[str, object] = {}

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d2")
        old = state(sim, "d2").leader
        tc = client(sim, "txn-client", timeout_s=90)  # waits for EndTxn rather than disconnecting
        h = History()
        for n in range(50):  # a transactional id whose coordinator is another broker
            tid = f"d2-txn-{n}"
            host, _port = await as_client(tc, tc.find_coordinator(tid))
            if host != sim.brokers[old].host:
                break
        tp = TxnProducer(tc, h, "d2", tid)
        await as_client(tc, tp.init_metadata())
        await as_client(tc, tp.init())
        resp = await as_client(
            tc,
            tp._coord_call(
                24,
                3,
                {
                    "v3_and_below_transactional_id": tid,
                    "v3_and_below_producer_id": tp.pid,
                    "v3_and_below_producer_epoch": tp.epoch,
                    "v3_and_below_topics": [{"name": "d2", "partitions": [0]}],
                },
            ),
        )
        assert _errors(resp) == 0
        assert await as_client(tc, tp.deliver(0, ["t-0", "t-1"], tid)) == 0
        sim.brokers[old].pause()
        end = tc.proc.spawn(
            tp._coord_call(
                26, 3, {"transactional_id": tid, "producer_id": tp.pid, "producer_epoch": tp.epoch, "committed": True}
            )
        )
        assert await sim.until(lambda: state(sim, "d2").leader not in (old, -1), 20), state(sim, "d2")
        assert (await produce(c, "d2", 0, [f"new-{i}" for i in range(5)]))[0] == 0
        sim.loop.fsync_delay[sim.brokers[old].name] = 0.05
        sim.brokers[old].resume()
        assert await sim.until(lambda: state(sim, "d2").leader == old, 60), state(sim, "d2")
        try:
            outcome["end"] = _errors(await asyncio.wait_for(end, 60))
        except Exception as e:  # noqa: BLE001 - a client that gave up: the outcome is unknown
            outcome["end"] = repr(e)
        await asyncio.sleep(20)  # the coordinator completes, or times the transaction out
        outcome["log"] = committed_values(sim, state(sim, "d2").leader, "d2")

    simulate(body, overrides={"leader.imbalance.check.interval.seconds": "2"})
    if outcome["end"] == 0:  # the client was told it committed
        assert {"t-0", "t-1"} <= outcome["log"], outcome


def _errors(resp) -> int:
    from .clients import _first_error

    return _first_error(resp)


def committed_values(sim, node: int, topic: str, p: int = 0) -> set[str]:
    """The values a read_committed reader sees in broker `node`'s copy, by the markers."""
    from tidelog.log.records import CONTROL_COMMIT, decode_batches, parse_control_record

    plog = sim.brokers[node].plog(topic, p)
    data = b"".join(seg.log.pread(0, seg.log.size) for seg in plog.segments)
    out: set[str] = set()
    open_: dict[int, list[str]] = {}
    for b in decode_batches(data):
        pid = b.header[9]
        if b.attributes & 0x20:
            if parse_control_record(b.records[0])[0] == CONTROL_COMMIT:
                out.update(open_.pop(pid, []))
            else:
                open_.pop(pid, None)
        elif b.attributes & 0x10:
            open_.setdefault(pid, []).extend((r.value or b"").decode() for r in b.records)
        else:
            out.update((r.value or b"").decode() for r in b.records)
    return out


# ---- defect 9: a write answered "not written" after it was written ---------------------------------
def test_a_write_interrupted_by_a_leadership_change_is_not_answered_as_never_written():
    """A leader hands its partition over (controlled shutdown) while an acks=all write waits for a
    paused follower; the new leader holds the write. The old leader must not answer it
    NOT_LEADER_OR_FOLLOWER: librdkafka sends such a write again without counting a retry, and a
    producer with retries=0 wrote it twice (six values twice, six offsets apart, in issue 26)."""
    from .clients import History, Producer

    found: dict[str, list[int]] = {}

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d9")
        leader = state(sim, "d9").leader
        f, g = [b for b in replicas(sim, "d9") if b != leader]
        once = client(sim, "once", timeout_s=30)
        await as_client(once, once.refresh(["d9"]))
        sim.brokers[g].pause()  # in the ISR until it lags out: acks=all writes wait for it
        p = Producer(once, History(), "d9", idempotent=False, retries=0, kind="once")
        sending = once.proc.spawn(p.deliver(0, ["w-0", "w-1", "w-2"]))
        assert await sim.until(lambda: sim.brokers[f].plog("d9", 0).log_end_offset == 3, 2)
        await sim.brokers[leader].shutdown()  # hands d9-0 over to f, which holds the write
        sim.brokers[g].resume()
        await asyncio.wait_for(sending, 90)
        await asyncio.sleep(5)
        for off, v in log_values(sim, state(sim, "d9").leader, "d9").items():
            found.setdefault(v, []).append(off)

    simulate(body)
    twice = {v: offs for v, offs in found.items() if len(offs) > 1}
    assert not twice, f"written twice: {twice}"


# ---- defect 11: a coordinator answered from a record that was never committed -------------------
def test_a_new_transaction_coordinator_answers_only_from_committed_state():
    """The coordinator's leader L appends an AddPartitionsToTxn record that follower F copies and
    the third replica G, cut off from both, never does (L, cut off from etcd, cannot shrink G out,
    so nothing is committed). L's session ends, F leads; it must not answer from that record
    while it is not committed: F is lost too and G, an eligible leader replica, becomes the
    coordinator without it. Before the fix F answered the retried AddPartitionsToTxn "already
    added", the producer wrote its records and G never heard of them: a transaction left open for
    ever (seed 115 of the simulation). Whatever the producer is told, every transaction on the
    data topic must end."""

    from .clients import _first_error

    seen: dict[str, object] = {}

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d11", configs={"min.insync.replicas": "1"})
        tid = "d11-txn"
        tc, tp, sp = await txn_producer(sim, "d11", tid)
        L, F, G = replicas(sim, "__transaction_state", sp)
        assert state(sim, "__transaction_state", sp).leader == L
        name = {n: sim.brokers[n].name for n in (L, F, G)}
        sim.etcd.set_reachable(name[L], False)
        sim.net.sever(name[L], name[G])
        sim.net.sever(name[F], name[G])
        add = {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": tp.pid,
            "v3_and_below_producer_epoch": tp.epoch,
            "v3_and_below_topics": [{"name": "d11", "partitions": [0]}],
        }
        adding = tc.proc.spawn(tp._coord_call(24, 3, add))
        ends = lambda n: sim.brokers[n].plog("__transaction_state", sp).log_end_offset
        assert await sim.until(lambda: ends(F) == ends(L) > ends(G), 5), (ends(L), ends(F), ends(G))
        assert await sim.until(lambda: state(sim, "__transaction_state", sp).leader == F, 30), state(
            sim, "__transaction_state", sp
        )
        try:
            seen["add"] = _first_error(await asyncio.wait_for(adding, 60))
        except Exception as e:  # noqa: BLE001 - gave up: not added
            seen["add"] = repr(e)
        if seen["add"] == 0:
            seen["deliver"] = await as_client(tc, tp.deliver(0, ["t-0"], tid))
        sim.brokers[F].crash()
        assert await sim.until(lambda: state(sim, "__transaction_state", sp).leader == G, 30), state(
            sim, "__transaction_state", sp
        )
        sim.heal_network()
        sim.brokers[F].start()
        try:
            end = await as_client(
                tc,
                tp._coord_call(
                    26,
                    3,
                    {"transactional_id": tid, "producer_id": tp.pid, "producer_epoch": tp.epoch, "committed": True},
                ),
            )
            seen["end"] = _first_error(end)
        except Exception as e:  # noqa: BLE001
            seen["end"] = repr(e)
        # the transaction's timeout (15 s) and more: every transaction has ended by now
        assert await sim.until(lambda: not open_transactions(sim, "d11"), 60), seen

    simulate(body)


def open_transactions(sim, topic: str) -> bool:
    st = state(sim, topic)
    plog = sim.brokers[st.leader].plog(topic, 0) if st is not None and st.leader > 0 else None
    return plog is None or plog.last_stable_offset < plog.high_watermark


# ---- defect 12: a coordinator partition taken while the lease was uncertain ---------------------
def test_a_coordinator_partition_led_right_after_an_etcd_outage_is_coordinated():
    """etcd is down past the session: no broker hears a keepalive for a whole TTL, so none is sure
    of its lease (etcd keeps the leases across its outage). etcd returns and at once a preferred
    election moves a __transaction_state partition to a broker whose next keepalive has not come
    yet. That broker waits for a sure lease before it coordinates - and must coordinate once the
    keepalive comes. Before the fix it never did until the next leadership change: the ids of
    that partition could not begin or end a transaction (simulation seed 342)."""

    from .clients import ClientError, _first_error

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d12")
        tid = "d12-txn"
        tc, tp, sp = await txn_producer(sim, "d12", tid)
        st = lambda: state(sim, "__transaction_state", sp)
        pref = replicas(sim, "__transaction_state", sp)[0]
        if st().leader == pref:  # hand its leaderships over, and come back: led elsewhere
            await sim.brokers[pref].shutdown()
            sim.brokers[pref].start()
        assert await sim.until(lambda: st().leader not in (pref, -1) and pref in st().isr, 30), st()
        sim.etcd_down()
        await asyncio.sleep(8)
        sim.etcd_up()
        resp = await as_client(
            c,
            c.any_broker(
                43,
                2,
                {
                    "election_type": 0,
                    "topic_partitions": [{"topic": "__transaction_state", "partitions": [sp]}],
                    "timeout": 30000,
                },
            ),
        )
        assert _first_error(resp) == 0 and st().leader == pref, (resp, st())
        assert not sim.brokers[pref].broker.cluster.lease_valid(), "the election came after a keepalive"
        try:
            await as_client(tc, asyncio.wait_for(tp.init(), 40))
        except (TimeoutError, ClientError) as e:
            raise AssertionError(f"{tid} not coordinated by {pref}: {e!r}") from None

    simulate(body, overrides={"auto.leader.rebalance.enable": "false"})


# ---- defect 13: a deposed coordinator answered a retried EndTxn from memory ---------------------
def test_a_deposed_transaction_coordinator_does_not_answer_from_memory():
    """Coordinator L commits a transaction T1, then is cut off from etcd and from the other
    brokers (not from clients): still believing it leads `__transaction_state`, it serves what it
    remembers, while the new coordinator N begins T2 under the same producer epoch. The producer's
    EndTxn(commit) of T2 times out at N and its retry reaches L, which remembers T1 committed: it
    must not answer "committed" (a retried EndTxn) without proving it still coordinates. Before the
    fix it did, at once; N aborted T2 on its timeout (simulation seed 4676)."""

    from .clients import ClientError, _first_error

    seen: dict[str, object] = {}

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d13")
        tid = "d13-txn"
        tc, tp, sp = await txn_producer(sim, "d13", tid)
        st = lambda: state(sim, "__transaction_state", sp)
        L = st().leader
        await as_client(tc, tp.one_transaction(commit=True))
        assert tp.h.txns[-1].outcome == "committed", tp.h.txns
        stale = tc.brokers[L]
        sim.etcd.set_reachable(sim.brokers[L].name, False)
        for n in sim.brokers:
            if n != L:
                sim.net.sever(sim.brokers[L].name, sim.brokers[n].name)
        assert await sim.until(lambda: st().leader not in (L, -1) and state(sim, "d13").leader != L, 30), st()
        tc.bootstrap = [a for a in tc.bootstrap if a != stale]
        tc.brokers.pop(L)
        tp.coordinator = None
        add = {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": tp.pid,
            "v3_and_below_producer_epoch": tp.epoch,
            "v3_and_below_topics": [{"name": "d13", "partitions": [0]}],
        }
        assert _first_error(await as_client(tc, tp._coord_call(24, 3, add))) == 0
        await as_client(tc, tc.refresh(["d13"]))
        assert await as_client(tc, tp.deliver(0, ["t2"], tid)) == 0
        assert sim.brokers[L].broker.txn.coordinator.status(tid) == 0, "L knows it was deposed"
        try:
            end = await as_client(
                tc,
                tc.call(
                    stale,
                    26,
                    3,
                    {"transactional_id": tid, "producer_id": tp.pid, "producer_epoch": tp.epoch, "committed": True},
                ),
            )
            seen["end"] = _first_error(end)
        except ClientError as e:
            seen["end"] = repr(e)
        sim.heal_network()
        sim.etcd.set_reachable(sim.brokers[L].name, True)
        # T2's timeout (15 s) and more: it has ended, one way or the other
        assert await sim.until(lambda: not open_transactions(sim, "d13"), 60), seen
        seen["log"] = committed_values(sim, state(sim, "d13").leader, "d13")

    simulate(body)
    assert seen["end"] != 0 or "t2" in seen["log"], f"told committed, but not: {seen}"


# ---- found by the 10,000 seeds (seed 2078): a hand-over to a replica that lost its disk --------
def test_a_controlled_shutdown_hands_over_only_to_a_replica_that_kept_its_disk():
    """While no controller acts, a follower comes back without its disk (it is still listed in the
    ISR, with the directory it joined with) and the leader stops cleanly. The leader must not hand
    its partition over to that follower: it may lack acknowledged records, and it would lead from
    outside the ISR (it leaves it as soon as a controller looks). Once the controller is back, the
    partition converges with its leader in the ISR, and no acknowledged record is lost."""
    acked: dict[str, int] = {}

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "d20", partitions=3)
        ctrl = next(n for n, b in sim.brokers.items() if b.broker.cluster.controller.active)
        # a partition whose replicas are (leader, follower, controller)
        p = next(
            i
            for i in range(3)
            if replicas(sim, "d20", i)[-1] == ctrl and state(sim, "d20", i).leader == replicas(sim, "d20", i)[0]
        )
        leader, follower = replicas(sim, "d20", p)[:2]
        for i in range(6):
            code, base = await produce(c, "d20", p, [f"a-{i}"])
            assert code == 0
            acked[f"a-{i}"] = base
        old = storage(sim, leader, follower)
        sim.brokers[follower].crash(wipe=True)
        sim.brokers[follower].start()  # registers once its earlier registration expires (<= 6 s)
        # before that, stop the controller (virtual seconds): it would remove the follower from the
        # ISR when the old registration goes, and its own session ends only >= 4 s after this
        await asyncio.sleep(3)
        assert follower in state(sim, "d20", p).isr
        sim.brokers[ctrl].pause()
        # registered again, with its new (empty) directory; the ISR still lists it with the old one
        assert await sim.until(lambda: storage(sim, leader, follower) not in (None, old), 10)
        assert follower in state(sim, "d20", p).isr
        await sim.brokers[leader].shutdown()
        st = state(sim, "d20", p)
        assert st.leader != follower, f"handed over to broker {follower}, which lost its disk: {st}"
        sim.brokers[ctrl].resume()
        sim.brokers[leader].start()
        assert await sim.until(lambda: (s := state(sim, "d20", p)).leader in s.isr and len(s.isr) == 3, 60), state(
            sim, "d20", p
        )
        values.update(log_values(sim, state(sim, "d20", p).leader, "d20", p))

    values: dict[int, str] = {}
    # the restarted follower stays in the ISR until it lags out: long enough for the shutdown
    sim = simulate(body, overrides={"replica.lag.time.max.ms": "60000"})
    assert not sim.violations, sim.violations
    lost = {v: o for v, o in acked.items() if values.get(o) != v}
    assert not lost, f"acknowledged records lost or moved: {lost}"


def storage(sim, node: int, broker: int) -> str | None:
    """The data directory `broker` is registered with, as broker `node`'s metadata copy has it."""
    info = sim.brokers[node].broker.cluster.cache.brokers.get(broker)
    return None if info is None else info.storage
