"""The transaction coordinator's protocol logic over an in-memory state log and marker writer
(the broker's versions of both are exercised by tests/interop/test_transactions*.py)."""

import asyncio

import pytest

from tidelog.txn import coordinator as C
from tidelog.txn.pids import ProducerIdAllocator
from tidelog.txn.state import TxnState as S
from tidelog.wire.errors import NOT_COORDINATOR


class StateLog:
    def __init__(self):
        self.records = []  # (transactional id, value or None) in write order

    async def write(self, txn_id, value):
        await asyncio.sleep(0)  # not a wait: a real write suspends its caller, so this one yields too
        self.records.append((txn_id, value))


class Markers:
    def __init__(self):
        self.written = []
        self.versions = []  # the transaction version of each written marker set
        self.fail = 0
        self.gate: asyncio.Event | None = None  # when set: writes wait for it
        self.at_gate = asyncio.Event()  # a write is waiting for the gate

    async def write(self, pid, epoch, commit, partitions, transaction_version=0):
        if self.gate is not None:
            self.at_gate.set()
            await self.gate.wait()
        if self.fail:
            self.fail -= 1
            raise OSError("disk full")
        self.written.append((pid, epoch, commit, tuple(partitions)))
        self.versions.append(transaction_version)


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self):
        return self.now


def make(tmp_path, log=None, markers=None, clock=None):
    coord = C.TxnCoordinator(
        log or StateLog(),
        markers or Markers(),
        ProducerIdAllocator(tmp_path),
        max_timeout_ms=60_000,
        expiration_ms=100_000,
        clock=clock or Clock(),
    )
    coord.load(coord.store.records if log else [])
    return coord


def run(coro):
    return asyncio.run(coro)


def test_init_add_commit_and_retries(tmp_path):
    c = make(tmp_path)

    async def go():
        err, pid, epoch = await c.init_producer_id("tx", 10_000)
        assert (err, epoch) == (0, 0)
        assert await c.add_partitions("tx", pid, epoch, [("t", 0), ("t", 1)]) == {("t", 0): 0, ("t", 1): 0}
        assert c.verify(pid, epoch, ("t", 0)) == 0 and c.verify(pid, epoch, ("t", 2)) == C.INVALID_TXN_STATE
        assert await c.end_txn("tx", pid, epoch, True) == 0
        assert c.markers.written == [(pid, 0, True, (("t", 0), ("t", 1)))]
        assert await c.end_txn("tx", pid, epoch, True) == 0  # a retried commit
        assert await c.end_txn("tx", pid, epoch, False) == C.INVALID_TXN_STATE
        assert c.verify(pid, epoch, ("t", 0)) == C.INVALID_TXN_STATE  # finished: no late batches
        states = [v.state for _, v in c.store.records]
        assert states == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]

    run(go())


def test_errors_for_wrong_ids_epochs_and_timeouts(tmp_path):
    c = make(tmp_path)

    async def go():
        assert (await c.init_producer_id("tx", 61_000))[0] == C.INVALID_TRANSACTION_TIMEOUT
        _, pid, epoch = await c.init_producer_id("tx", 1000)
        assert await c.add_partitions("tx", pid + 1, epoch, [("t", 0)]) == {("t", 0): C.INVALID_PRODUCER_ID_MAPPING}
        assert await c.add_partitions("tx", pid, epoch + 1, [("t", 0)]) == {("t", 0): C.PRODUCER_FENCED}
        assert await c.end_txn("tx", pid, epoch, True) == C.INVALID_TXN_STATE  # nothing to end
        assert await c.end_txn("nope", pid, epoch, True) == C.INVALID_PRODUCER_ID_MAPPING
        c.partition_exists = lambda t, p: t == "t"
        assert await c.add_partitions("tx", pid, epoch, [("t", 0), ("gone", 0)]) == {
            ("t", 0): C.OPERATION_NOT_ATTEMPTED,
            ("gone", 0): C.UNKNOWN_TOPIC_OR_PARTITION,
        }

    run(go())


def test_a_new_instance_fences_and_aborts_the_old_ones_transaction(tmp_path):
    c = make(tmp_path)

    async def go():
        _, pid, epoch = await c.init_producer_id("tx", 10_000)
        await c.add_partitions("tx", pid, epoch, [("t", 0)])
        err, pid2, epoch2 = await c.init_producer_id("tx", 10_000)
        assert err == 0 and pid2 == pid and epoch2 == epoch + 2  # one bump to abort, one for the new instance
        assert c.markers.written == [(pid, epoch + 1, False, (("t", 0),))]
        assert await c.end_txn("tx", pid, epoch, True) == C.PRODUCER_FENCED
        assert c.verify(pid, epoch, ("t", 0)) == C.INVALID_PRODUCER_EPOCH
        # KIP-360: the current producer re-initialising with its id and epoch gets the next epoch
        assert await c.init_producer_id("tx", 10_000, pid2, epoch2) == (0, pid, epoch2 + 1)
        assert (await c.init_producer_id("tx", 10_000, pid2, epoch))[0] == C.PRODUCER_FENCED

    run(go())


def test_answers_from_memory_are_confirmed_by_a_write_in_cluster_mode(tmp_path):
    """A retried EndTxn, partitions already added and an epoch bump already made are answered
    from memory; in cluster mode each first writes the state again, so that a deposed coordinator
    (whose writes cannot be replicated) answers NOT_COORDINATOR, not success (seed 4676)."""
    from tidelog.log.errors import LogError

    class Deposable(StateLog):
        deposed = False

        async def write(self, txn_id, value):
            if self.deposed:
                raise LogError(NOT_COORDINATOR, "__transaction_state-0 is led elsewhere now")
            await super().write(txn_id, value)

    store = Deposable()
    c = make(tmp_path, log=store)
    c.owned = {p: 0 for p in range(c.num_partitions)}

    async def go():
        _, pid, epoch = await c.init_producer_id("tx", 10_000)
        _, pid, epoch = await c.init_producer_id("tx", 10_000, pid, epoch)  # KIP-360 bump
        assert await c.add_partitions("tx", pid, epoch, [("t", 0)]) == {("t", 0): 0}
        n = len(store.records)
        assert await c.add_partitions("tx", pid, epoch, [("t", 0)]) == {("t", 0): 0}
        assert len(store.records) == n + 1 and store.records[-1][1] == store.records[-2][1]  # unchanged
        store.deposed = True
        assert await c.add_partitions("tx", pid, epoch, [("t", 0)]) == {("t", 0): NOT_COORDINATOR}
        store.deposed = False
        assert await c.end_txn("tx", pid, epoch, True) == 0
        store.deposed = True
        assert await c.end_txn("tx", pid, epoch, True) == NOT_COORDINATOR
        assert await c.init_producer_id("tx", 10_000, pid, epoch - 1) == (NOT_COORDINATOR, -1, -1)
        store.deposed = False
        assert await c.end_txn("tx", pid, epoch, True) == 0  # the retry, where it is coordinated
        assert await c.init_producer_id("tx", 10_000, pid, epoch - 1) == (0, pid, epoch)

    run(go())


def test_timeout_aborts_with_a_bumped_epoch_and_expiry_forgets_the_id(tmp_path):
    clock = Clock()
    c = make(tmp_path, clock=clock)

    async def go():
        _, pid, epoch = await c.init_producer_id("tx", 5_000)
        await c.add_partitions("tx", pid, epoch, [("t", 0)])
        clock.now += 4_000
        assert await c.abort_timed_out() == 0
        clock.now += 2_000
        assert await c.abort_timed_out() == 1
        meta = c.txns["tx"]
        assert meta.state == S.COMPLETE_ABORT and meta.producer_epoch == epoch + 1
        assert await c.end_txn("tx", pid, epoch, True) == C.PRODUCER_FENCED
        clock.now += 100_001
        assert await c.expire_ids() == 1
        assert "tx" not in c.txns and c.store.records[-1] == ("tx", None)

    run(go())


def test_concurrent_requests_while_markers_are_written(tmp_path):
    markers = Markers()
    c = make(tmp_path, markers=markers)

    async def go():
        _, pid, epoch = await c.init_producer_id("tx", 10_000)
        await c.add_partitions("tx", pid, epoch, [("t", 0)])
        markers.gate = asyncio.Event()
        end = asyncio.ensure_future(c.end_txn("tx", pid, epoch, True))
        await asyncio.wait_for(markers.at_gate.wait(), 5)  # the commit is writing its markers
        assert c.txns["tx"].state == S.PREPARE_COMMIT
        assert await c.add_partitions("tx", pid, epoch, [("t", 1)]) == {("t", 1): C.CONCURRENT_TRANSACTIONS}
        assert (await c.init_producer_id("tx", 10_000))[0] == C.CONCURRENT_TRANSACTIONS
        assert await c.end_txn("tx", pid, epoch, True) == C.CONCURRENT_TRANSACTIONS
        markers.gate.set()
        assert await end == 0

    run(go())


def test_restart_finishes_a_prepared_commit(tmp_path):
    log, markers = StateLog(), Markers()
    c = make(tmp_path, log=log, markers=markers)

    async def go():
        _, pid, epoch = await c.init_producer_id("tx", 10_000)
        await c.add_partitions("tx", pid, epoch, [("t", 0), ("u", 3)])
        markers.fail = 1
        with pytest.raises(OSError):
            await c.end_txn("tx", pid, epoch, True)
        assert log.records[-1][1].state == S.PREPARE_COMMIT
        # "restart": a new coordinator from the same state log
        again = C.TxnCoordinator(log, markers, ProducerIdAllocator(tmp_path), clock=Clock())
        again.load(list(log.records))
        assert again.txns["tx"].state == S.PREPARE_COMMIT
        assert (await again.init_producer_id("tx", 10_000))[0] == C.CONCURRENT_TRANSACTIONS
        await again.resume()
        assert markers.written == [(pid, epoch, True, (("t", 0), ("u", 3)))]
        assert again.txns["tx"].state == S.COMPLETE_COMMIT
        assert (await again.init_producer_id("tx", 10_000))[1:] == (pid, epoch + 1)
        assert ProducerIdAllocator(tmp_path).next_id() > pid  # ids are never handed out twice

    run(go())


def test_list_filters(tmp_path):
    clock = Clock()
    c = make(tmp_path, clock=clock)

    async def go():
        _, a, ea = await c.init_producer_id("a", 10_000)
        _, b, _ = await c.init_producer_id("b", 10_000)
        await c.add_partitions("a", a, ea, [("t", 0)])
        clock.now += 5_000
        assert [m.transactional_id for m in c.list()[1]] == ["a", "b"]
        assert c.list(["Ongoing", "Bogus"]) == (["Bogus"], [c.txns["a"]])
        assert [m.transactional_id for m in c.list(producer_ids=[b])[1]] == ["b"]
        assert [m.transactional_id for m in c.list(["Ongoing"], min_duration_ms=4_000)[1]] == ["a"]
        assert c.list(["Ongoing"], min_duration_ms=6_000)[1] == []
        assert c.active_count() == 1

    run(go())
