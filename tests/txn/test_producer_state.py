"""Producer state on batch headers: dedup, sequence and epoch checks, open transactions, the
LSO they imply, snapshots and the rebuild from a real log after a crash."""

import pytest

from tidelog.log.errors import LogAppendError
from tidelog.log.log import PartitionLog
from tidelog.log.records import CONTROL_ABORT, CONTROL_COMMIT, Record, build_batch
from tidelog.log.validation import BatchInfo
from tidelog.txn.producers import DuplicateBatch, PartitionProducers
from tidelog.txn.snapshots import load_state, snapshot_files, write_snapshot
from tidelog.wire.errors import (
    INVALID_PRODUCER_EPOCH,
    INVALID_TXN_STATE,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    UNKNOWN_PRODUCER_ID,
)


def batch(pid, epoch, seq, offset, count=1, txn=False, ts=1000):
    return BatchInfo(0, 100, offset, offset + count - 1, count, ts, ts, pid, epoch, seq, txn, False)


def append(state, *batches, **kw):
    staged = state.check(batches, **kw)
    state.apply(staged)
    return staged


def test_in_order_batches_and_duplicates_answered_with_original_offsets():
    st = PartitionProducers("t", 0)
    append(st, batch(1, 0, 0, 0, 3))
    append(st, batch(1, 0, 3, 3, 2))
    with pytest.raises(DuplicateBatch) as e:
        st.check([batch(1, 0, 0, 10, 3)])
    assert (e.value.first_offset, e.value.last_offset) == (0, 2)
    with pytest.raises(DuplicateBatch) as e:
        st.check([batch(1, 0, 3, 10, 2)])
    assert e.value.first_offset == 3


def test_only_the_last_five_batches_are_remembered():
    st = PartitionProducers("t", 0)
    for i in range(7):
        append(st, batch(1, 0, i, i))
    with pytest.raises(DuplicateBatch):
        st.check([batch(1, 0, 2, 9)])
    with pytest.raises(LogAppendError) as e:  # too old to be found: out of sequence
        st.check([batch(1, 0, 1, 9)])
    assert e.value.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER


def test_gap_is_out_of_order_and_changes_nothing():
    st = PartitionProducers("t", 0)
    append(st, batch(1, 0, 0, 0))
    with pytest.raises(LogAppendError) as e:
        st.check([batch(1, 0, 2, 1)])
    assert e.value.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
    append(st, batch(1, 0, 1, 1))
    assert st.producers[1].last_seq == 1


def test_epochs():
    st = PartitionProducers("t", 0)
    append(st, batch(1, 3, 0, 0, 5))
    with pytest.raises(LogAppendError) as e:
        st.check([batch(1, 2, 5, 5)])
    assert e.value.error_code == INVALID_PRODUCER_EPOCH
    with pytest.raises(LogAppendError) as e:
        st.check([batch(1, 4, 5, 5)])
    assert e.value.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
    append(st, batch(1, 4, 0, 5))
    assert st.producers[1].epoch == 4


def test_unknown_producer_ids():
    st = PartitionProducers("t", 0)
    with pytest.raises(LogAppendError) as e:
        st.check([batch(99, 0, 0, 0)], known=lambda pid: pid < 10)
    assert e.value.error_code == UNKNOWN_PRODUCER_ID
    append(st, batch(5, 0, 17, 0), known=lambda pid: pid < 10)  # issued, state gone: any sequence
    append(st, batch(-1, -1, -1, 1))  # not idempotent: not tracked
    assert set(st.producers) == {5}


def test_transactions_move_the_first_unstable_offset_and_aborts_give_index_entries():
    st = PartitionProducers("t", 0)
    ok = lambda pid, epoch: 0
    append(st, batch(1, 0, 0, 0, 2, txn=True), verify=ok)
    append(st, batch(2, 0, 0, 2, 1, txn=True), verify=ok)
    assert st.first_unstable_offset() == 0
    with pytest.raises(LogAppendError) as e:  # plain batch inside its own transaction
        st.check([batch(1, 0, 2, 3)])
    assert e.value.error_code == INVALID_TXN_STATE
    assert st.complete_txn(1, 0, 3, commit=True) is None
    assert st.first_unstable_offset() == 2
    aborted = st.complete_txn(2, 0, 4, commit=False)
    assert (aborted.producer_id, aborted.first_offset, aborted.last_offset, aborted.last_stable_offset) == (2, 2, 4, 5)
    assert st.first_unstable_offset() is None


def test_transactional_batch_refused_when_the_coordinator_does_not_vouch_for_it():
    st = PartitionProducers("t", 0)
    with pytest.raises(LogAppendError) as e:
        st.check([batch(1, 0, 0, 0, txn=True)], verify=lambda pid, epoch: INVALID_TXN_STATE)
    assert e.value.error_code == INVALID_TXN_STATE
    assert not st.producers


def test_snapshot_round_trip():
    st = PartitionProducers("t", 0)
    append(st, batch(1, 0, 0, 0, 3))
    append(st, batch(2, 1, 0, 3, 1, txn=True), verify=lambda p, e: 0)
    back, offset = PartitionProducers.from_snapshot("t", 0, st.snapshot_bytes(4))
    assert offset == 4
    assert back.producers[1].last_seq == 2 and back.first_unstable_offset() == 3
    with pytest.raises(DuplicateBatch):
        back.check([batch(1, 0, 0, 9, 3)])


def _txn(pid, seq, values, t=1_700_000_000_000):
    return build_batch(
        [Record(b"k", v, t) for v in values], producer_id=pid, producer_epoch=0, base_sequence=seq, transactional=True
    )


def test_rebuild_from_the_log_after_a_snapshot_restores_state_and_missing_txnindex_entries(tmp_path):
    log = PartitionLog.open(tmp_path, "t", 0)
    log.append_raw(build_batch([Record(b"k", b"v", 1)], producer_id=1, producer_epoch=0, base_sequence=0))  # 0
    write_snapshot(log, load_state(log))  # snapshot at 1
    log.append_raw(_txn(2, 0, [b"a", b"b"]))  # 1-2
    log.append_raw(_txn(3, 0, [b"c"]))  # 3
    log.append_control(CONTROL_ABORT, 2, 0, 0)  # 4: index entry "lost" (never written)
    log.append_control(CONTROL_COMMIT, 3, 0, 0)  # 5
    log.append_raw(_txn(3, 1, [b"d"]))  # 6: still open
    log.close()
    log = PartitionLog.open(tmp_path, "t", 0)
    assert [o for o, _ in snapshot_files(log.dir)] == [1]
    st = load_state(log)
    assert st.producers[1].last_seq == 0
    assert st.producers[3].txn_first_offset == 6 and st.first_unstable_offset() == 6
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.collect_aborted(0, 7)] == [(2, 1, 4)]
    with pytest.raises(DuplicateBatch) as e:
        st.check([BatchInfo(0, 1, 9, 9, 1, 1, 1, 3, 0, 1, True, False)], verify=lambda p, e: 0)
    assert e.value.first_offset == 6
    # a second load does not duplicate the restored entry
    load_state(log)
    assert len(log.collect_aborted(0, 7)) == 1
    log.close()


def test_snapshot_beyond_the_log_end_is_discarded(tmp_path):
    log = PartitionLog.open(tmp_path, "t", 0)
    log.append_raw(build_batch([Record(b"k", b"v", 1)], producer_id=1, producer_epoch=0, base_sequence=0))
    (log.dir / f"{50:020d}.snapshot").write_bytes(b'{"version":1,"offset":50,"producers":[]}')
    (log.dir / f"{0:020d}.snapshot").write_bytes(b"garbage")
    st = load_state(log)
    assert st.producers[1].last_seq == 0  # rebuilt from the log start
    assert [o for o, _ in snapshot_files(log.dir)] == [0]
    log.close()


def test_rebuild_spans_segments_and_keeps_the_open_transaction(tmp_path):
    from tidelog.log.config import LogConfig

    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(segment_bytes=400))
    seq = 0
    for i in range(12):
        log.append_raw(build_batch([Record(b"k", b"v" * 20, 1)], producer_id=1, producer_epoch=0, base_sequence=seq))
        seq += 1
        if i == 3:
            log.append_raw(_txn(2, 0, [b"open"]))  # never completed
    assert len(log.segments) > 3
    open_at = 4
    log.close()
    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(segment_bytes=400))
    st = load_state(log)
    assert st.producers[1].last_seq == 11 and st.first_unstable_offset() == open_at
    # a snapshot at offset 6 claiming no producers: the rebuild starts there, in a later segment
    write_snapshot(log, PartitionProducers("t", 0), offset=6)
    st2 = load_state(log)
    assert st2.producers[1].last_seq == 11
    assert [m.first_offset for m in st2.producers[1].batches] == [8, 9, 10, 11, 12]
    assert st2.first_unstable_offset() is None  # the open transaction began before the snapshot
    log.close()
