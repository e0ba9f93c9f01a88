"""`__transaction_state` values in both of Kafka's versions (txn/records.py)."""

from tidelog.txn import records as R
from tidelog.txn.state import TxnState as S


def test_transaction_log_values_in_both_of_kafkas_versions():
    v = R.TxnLogValue(7, 3, 60_000, S.PREPARE_COMMIT, {"b": [2, 0], "a": [1]}, 1000, 900, 6, 8, 2)
    # value version 1: flexible, KIP-890's tagged fields (written only when not their default)
    data = R.encode_value(v, 1)
    assert data[:2] == b"\x00\x01"
    back = R.decode_value(data)
    assert (back.prev_producer_id, back.next_producer_id, back.client_txn_version) == (6, 8, 2)
    assert back.partitions == {"a": [1], "b": [0, 2]} and back.start_ms == 900
    plain = R.TxnLogValue(7, 3, 60_000, S.EMPTY, {}, 1000, -1)
    assert R.encode_value(plain, 1).endswith(b"\x00")  # no tagged field
    # version 0 has no room for them: they read back as their defaults
    old = R.decode_value(R.encode_value(v, 0))
    assert (old.prev_producer_id, old.next_producer_id, old.client_txn_version) == (-1, -1, 0)
    assert old.partitions == back.partitions
    assert R.value_version(0) == 0 and R.value_version(1) == R.value_version(2) == 1
