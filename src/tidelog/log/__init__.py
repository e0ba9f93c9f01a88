"""tidelog.log: the storage engine under every partition (no sockets, no asyncio).

Entry points: `LogManager` (all partitions of the broker's log dirs), `PartitionLog` (one
partition), `LogConfig` (topic settings), `records` (v2 batches), `legacy` (magic 0/1).
`schema_records` and `schema_state` are the schema registry's `_schemas` record format and the
state its records make: pure code, here so that both the registry and the Spark export (which
reads `_schemas` straight from the log dirs) can use it.
"""

from .config import LogConfig
from .errors import LogAppendError, LogError, OffsetOutOfRangeError
from .log import AppendInfo, FetchInfo, PartitionLog
from .manager import LogManager
from .records import Record, build_batch, build_control_batch, decode_records
from .segment import FileSlice
from .txnindex import AbortedTxn

__all__ = [
    "AbortedTxn",
    "AppendInfo",
    "FetchInfo",
    "FileSlice",
    "LogAppendError",
    "LogConfig",
    "LogError",
    "LogManager",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "Record",
    "build_batch",
    "build_control_batch",
    "decode_records",
]
