"""Exactly-once (KIP-98): idempotent producers and transactions.

- `producers`: per-partition producer state from batch headers (dedup, sequences, epochs, open
  transactions, hence the LSO); `snapshots`: its `<offset>.snapshot` files and rebuild from the log.
- `state`: the coordinator's states and transition table; `records`: `__transaction_state` records.
- `coordinator`: the transaction coordinator (InitProducerId, AddPartitionsToTxn, EndTxn, fencing,
  timeouts, expiry); `pids`: producer id allocation.
- `service`: the broker's `txn` service tying them to the partitions, the group offsets and the
  Produce path; the API handlers live in `tidelog.server.handlers`.
"""
