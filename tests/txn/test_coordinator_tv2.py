"""Transaction version 2 (KIP-890 part 2) in the coordinator: every EndTxn bumps the epoch, the
markers carry the bumped epoch, retries are known by their epoch, an exhausted epoch moves the
producer to a new id, and what a successor coordinator needs is in the records (over the same
in-memory state log and marker writer as test_coordinator.py)."""

import asyncio

from txn.test_coordinator import Clock, Markers, StateLog, make, run

from tidelog.txn import coordinator as C
from tidelog.txn import records as R
from tidelog.txn.epoch_bump import MAX_EPOCH
from tidelog.txn.state import TxnState as S


def test_end_txn_bumps_the_epoch_and_answers_it(tmp_path):
    c = make(tmp_path)

    async def go():
        _, pid, e = await c.init_producer_id("tx", 10_000)
        # a transaction version 2 client: the broker adds the partitions for its Produce
        assert await c.add_partitions("tx", pid, e, [("t", 0)], client_version=2) == {("t", 0): 0}
        assert await c.end_txn_bumping("tx", pid, e, True) == (0, pid, e + 1)
        # the markers carry the bumped epoch and the transaction version
        assert c.markers.written == [(pid, e + 1, True, (("t", 0),))] and c.markers.versions == [2]
        meta = c.txns["tx"]
        assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (S.COMPLETE_COMMIT, e + 1, e)
        # the ended epoch is fenced everywhere; a retry of the EndTxn is answered with the new epoch
        assert await c.add_partitions("tx", pid, e, [("t", 0)], 2) == {("t", 0): C.PRODUCER_FENCED}
        assert c.verify(pid, e, ("t", 0)) == C.INVALID_PRODUCER_EPOCH
        assert await c.end_txn_bumping("tx", pid, e, True) == (0, pid, e + 1)
        assert await c.end_txn_bumping("tx", pid, e, False) == (C.INVALID_TXN_STATE, -1, -1)
        # the next transaction runs at the new epoch, then ends with another bump
        assert await c.add_partitions("tx", pid, e + 1, [("t", 1)], 2) == {("t", 1): 0}
        assert await c.end_txn_bumping("tx", pid, e + 1, False) == (0, pid, e + 2)
        assert c.markers.written[-1] == (pid, e + 2, False, (("t", 1),)) and c.markers.versions[-1] == 2
        states = [(v.state, v.producer_epoch, v.client_txn_version) for _, v in c.store.records]
        assert states[1:] == [
            (S.ONGOING, e, 2),
            (S.PREPARE_COMMIT, e + 1, 2),
            (S.COMPLETE_COMMIT, e + 1, 2),
            (S.ONGOING, e + 1, 2),
            (S.PREPARE_ABORT, e + 2, 2),
            (S.COMPLETE_ABORT, e + 2, 2),
        ]

    run(go())


def test_the_decision_table_for_completed_and_empty_states(tmp_path):
    c = make(tmp_path)

    async def go():
        _, pid, e = await c.init_producer_id("tx", 10_000)
        assert await c.end_txn_bumping("tx", pid, e, True) == (C.INVALID_TXN_STATE, -1, -1)  # Empty: commit
        assert await c.end_txn_bumping("tx", pid, e - 1, False) == (C.PRODUCER_FENCED, -1, -1)  # Empty: retry
        # an abort with nothing added bumps the epoch (no marker to write)
        assert await c.end_txn_bumping("tx", pid, e, False) == (0, pid, e + 1)
        assert c.markers.written == [(pid, e + 1, False, ())] and c.markers.versions == [2]
        assert await c.end_txn_bumping("tx", pid, e, False) == (0, pid, e + 1)  # CompleteAbort: a retry
        assert await c.end_txn_bumping("tx", pid, e, True) == (C.INVALID_TXN_STATE, -1, -1)
        assert await c.end_txn_bumping("tx", pid, e + 1, False) == (0, pid, e + 2)  # another empty abort
        assert await c.end_txn_bumping("tx", pid, e + 5, False) == (C.PRODUCER_FENCED, -1, -1)
        assert await c.end_txn_bumping("tx", pid + 1, e + 2, False) == (C.INVALID_PRODUCER_ID_MAPPING, -1, -1)
        # CompleteCommit: a retried commit is fine, an abort of the current epoch bumps again
        await c.add_partitions("tx", pid, e + 2, [("t", 0)], 2)
        assert await c.end_txn_bumping("tx", pid, e + 2, True) == (0, pid, e + 3)
        assert await c.end_txn_bumping("tx", pid, e + 2, True) == (0, pid, e + 3)
        assert await c.end_txn_bumping("tx", pid, e + 2, False) == (C.INVALID_TXN_STATE, -1, -1)
        assert await c.end_txn_bumping("tx", pid, e + 3, True) == (C.INVALID_TXN_STATE, -1, -1)
        assert await c.end_txn_bumping("tx", pid, e + 3, False) == (0, pid, e + 4)

    run(go())


def test_an_exhausted_epoch_moves_the_producer_to_a_new_id(tmp_path):
    c = make(tmp_path)

    async def go():
        _, pid, _e = await c.init_producer_id("tx", 10_000)
        c.txns["tx"].producer_epoch = MAX_EPOCH - 1  # the last epoch a client may use
        await c.add_partitions("tx", pid, MAX_EPOCH - 1, [("t", 0)], 2)
        err, new_pid, epoch = await c.end_txn_bumping("tx", pid, MAX_EPOCH - 1, True)
        assert (err, epoch) == (0, 0) and new_pid != pid
        # the markers were written by the old id at the last epoch; the id then changed
        assert c.markers.written == [(pid, MAX_EPOCH, True, (("t", 0),))]
        meta = c.txns["tx"]
        assert (meta.producer_id, meta.prev_producer_id, meta.next_producer_id) == (new_pid, pid, -1)
        assert c.by_pid[new_pid] is meta and pid not in c.by_pid
        prepare = [v for _, v in c.store.records if v.state == S.PREPARE_COMMIT][-1]
        assert (prepare.producer_id, prepare.next_producer_id) == (pid, new_pid)
        # a retry with the old id and epoch is answered with the new ones
        assert await c.end_txn_bumping("tx", pid, MAX_EPOCH - 1, True) == (0, new_pid, 0)
        assert await c.add_partitions("tx", new_pid, 0, [("t", 0)], 2) == {("t", 0): 0}

    run(go())


def test_a_successor_completes_a_prepared_tv2_transaction_as_the_client_ran_it(tmp_path):
    """The records carry the client's transaction version and the next producer id: a coordinator
    that loads an id left in PrepareCommit (a crash between the prepare and the markers) writes
    the markers with the bumped epoch and moves the producer to its new id."""
    store = StateLog()
    markers = Markers()
    c = make(tmp_path, log=store, markers=markers)

    async def go():
        _, pid, _ = await c.init_producer_id("tx", 10_000)
        c.txns["tx"].producer_epoch = MAX_EPOCH - 1
        await c.add_partitions("tx", pid, MAX_EPOCH - 1, [("t", 0)], 2)
        markers.gate = asyncio.Event()
        end = asyncio.ensure_future(c.end_txn_bumping("tx", pid, MAX_EPOCH - 1, True))
        await asyncio.wait_for(markers.at_gate.wait(), 5)  # prepared; the "crash" comes now
        end.cancel()
        # the records go through Kafka's byte format (value version 1) to the successor
        records = [(k, R.decode_value(R.encode_value(v, 1))) for k, v in store.records]
        successor = make(tmp_path / "next", log=StateLog(), markers=Markers())
        successor.load(records)
        meta = successor.txns["tx"]
        assert (meta.state, meta.producer_epoch, meta.client_txn_version) == (S.PREPARE_COMMIT, MAX_EPOCH, 2)
        next_pid = meta.next_producer_id
        assert next_pid >= 0 and meta.prev_producer_id == pid
        await successor.resume()
        assert successor.markers.written == [(pid, MAX_EPOCH, True, (("t", 0),))] and successor.markers.versions == [2]
        assert (meta.state, meta.producer_id, meta.producer_epoch) == (S.COMPLETE_COMMIT, next_pid, 0)

    (tmp_path / "next").mkdir()
    run(go())


def test_tv1_end_txn_keeps_the_epoch_after_a_tv2_add(tmp_path):
    """A client that writes with Produce v12 (the broker adds its partitions) but ends with EndTxn
    v4 ends at version 0, as Kafka: no bump, markers at its epoch."""
    c = make(tmp_path)

    async def go():
        _, pid, e = await c.init_producer_id("tx", 10_000)
        await c.add_partitions("tx", pid, e, [("t", 0)], 2)
        assert await c.end_txn("tx", pid, e, True) == 0
        assert c.markers.written == [(pid, e, True, (("t", 0),))] and c.markers.versions == [0]
        assert c.txns["tx"].producer_epoch == e

    run(go())


def test_a_timeout_abort_is_made_at_the_brokers_transaction_version(tmp_path):

    clock = Clock()
    c = make(tmp_path, clock=clock)

    async def go():
        _, pid, e = await c.init_producer_id("tx", 5_000)
        await c.add_partitions("tx", pid, e, [("t", 0)])
        clock.now += 6_000
        assert await c.abort_timed_out() == 1
        assert c.markers.written == [(pid, e + 1, False, (("t", 0),))] and c.markers.versions == [2]
        assert c.txns["tx"].client_txn_version == 2

    run(go())


def test_verify_request_answers_as_kafkas_coordinator(tmp_path):
    c = make(tmp_path)

    async def go():
        _, pid, e = await c.init_producer_id("tx", 10_000)
        await c.add_partitions("tx", pid, e, [("t", 0)])
        assert c.verify_request("tx", pid, e, [("t", 0), ("t", 1)]) == {("t", 0): 0, ("t", 1): C.TRANSACTION_ABORTABLE}
        assert c.verify_request("tx", pid, e + 1, [("t", 0)]) == {("t", 0): C.PRODUCER_FENCED}
        assert c.verify_request("tx", pid + 1, e, [("t", 0)]) == {("t", 0): C.INVALID_PRODUCER_ID_MAPPING}
        assert c.verify_request("nope", pid, e, [("t", 0)]) == {("t", 0): C.INVALID_PRODUCER_ID_MAPPING}

    run(go())
