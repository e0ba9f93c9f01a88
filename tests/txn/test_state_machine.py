"""The coordinator's transition table and the `__transaction_state` record format."""

import pytest

from tidelog.txn import records as R
from tidelog.txn.state import VALID_PREVIOUS, IllegalTransition, check_transition
from tidelog.txn.state import TxnState as S


def test_every_transition_outside_the_table_is_refused():
    for target, previous in VALID_PREVIOUS.items():
        for current in S:
            if current in previous:
                check_transition(current, target)
            else:
                with pytest.raises(IllegalTransition):
                    check_transition(current, target)


def test_a_commit_cannot_turn_into_an_abort():
    with pytest.raises(IllegalTransition):
        check_transition(S.PREPARE_COMMIT, S.PREPARE_ABORT)
    with pytest.raises(IllegalTransition):
        check_transition(S.PREPARE_COMMIT, S.COMPLETE_ABORT)


def test_kafka_state_names():
    assert [s.kafka_name for s in S] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]
    assert S.from_kafka_name("Ongoing") is S.ONGOING and S.from_kafka_name("Nope") is None


def test_log_records_round_trip_and_layout():
    v = R.TxnLogValue(7, 3, 60000, S.ONGOING, {"b": [2, 0], "a": [1]}, 1234, 1000)
    data = R.encode_value(v)
    # version 0, pid, epoch, timeout, state 1, 2 topics: "a" [1], "b" [0, 2]
    assert data[:17] == bytes.fromhex("0000000000000000000700030000ea6001")
    back = R.decode_value(data)
    assert back.partitions == {"a": [1], "b": [0, 2]} and back.state is S.ONGOING and back.start_ms == 1000
    assert R.decode_key(R.encode_key("tx-1")) == "tx-1"
    assert R.encode_key("tx") == bytes.fromhex("00000002") + b"tx"
    with pytest.raises(R.RecordFormatError):
        R.decode_value(data[:20])
    with pytest.raises(R.RecordFormatError):
        R.decode_key(b"\x00\x01\x00\x02tx")
