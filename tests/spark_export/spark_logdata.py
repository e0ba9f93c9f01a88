"""Builds partition logs with the log engine (PartitionLog + build_batch) and keeps a model of them.

`LogWriter` appends plain batches with every codec, transactional batches committed or aborted
(ABORT markers with their `.txnindex` entries, as the transaction coordinator writes them),
transactions left open, tombstones and headers; segments are small so that many roll. The
model (`Model`) answers what a read_committed reader of the closed segments must see, and what a
brute-force compaction of it is.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from tidelog.core.topics import TopicRegistry
from tidelog.log.config import LogConfig
from tidelog.log.log import PartitionLog
from tidelog.log.records import CONTROL_ABORT, CONTROL_COMMIT, Record, build_batch
from tidelog.log.txnindex import AbortedTxn

DAY_MS = 86_400_000
T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z


@dataclass
class Row:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: list[tuple[str, bytes | None]]
    producer_id: int
    transactional: bool
    state: str = "committed"  # committed | aborted | open

    def ident(self) -> tuple:
        return (
            self.partition,
            self.offset,
            self.key,
            self.value,
            self.timestamp,
            tuple(self.headers),
            self.producer_id,
            self.transactional,
        )


@dataclass
class Model:
    rows: list[Row] = field(default_factory=list)

    def committed(self, closed_end: dict[int, int]) -> list[Row]:
        """Rows a read_committed reader of the closed segments sees (below each partition's LSO)."""
        lso = dict(closed_end)
        for r in self.rows:
            if r.state == "open" and r.offset < lso[r.partition]:
                lso[r.partition] = min(lso[r.partition], r.offset)
        return [r for r in self.rows if r.state == "committed" and r.offset < lso[r.partition]]

    @staticmethod
    def compact(rows: list[Row]) -> dict[tuple[int, bytes], Row]:
        """Brute force: the last row of every (partition, key), tombstones removed."""
        latest: dict[tuple[int, bytes], Row] = {}
        for r in sorted(rows, key=lambda r: (r.partition, r.offset)):
            if r.key is not None:
                latest[(r.partition, r.key)] = r
        return {k: r for k, r in latest.items() if r.value is not None}


class LogWriter:
    def __init__(
        self,
        log_dir: Path,
        topic: str,
        partitions: int = 2,
        segment_bytes: int = 8192,
        seed: int = 1,
        keys: int = 40,
        compact: bool = False,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.topic = topic
        self.rng = random.Random(seed)
        self.keys = [b"key-%03d" % i for i in range(keys)]
        self.model = Model()
        reg = TopicRegistry(self.log_dir, node_id=1)
        if reg.get(topic) is None:
            reg.create(topic, partitions, {"cleanup.policy": "compact"} if compact else {})
        cfg = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=512, retention_ms=-1)
        self.logs = [PartitionLog.open(self.log_dir, topic, p, cfg) for p in range(partitions)]
        self.next_pid = 1000 + seed * 100
        self.open_txns: dict[int, tuple[int, list[Row]]] = {}  # partition -> (pid, rows)
        self.clock = T0

    # -- single steps -------------------------------------------------------------------------

    def _records(self, n: int, tombstones: bool = True) -> list[Record]:
        out = []
        for _ in range(n):
            self.clock += self.rng.randint(0, 3_600_000)  # spreads rows over several days
            key = self.rng.choice(self.keys)
            value = None if tombstones and self.rng.random() < 0.08 else self.rng.randbytes(self.rng.randint(0, 60))
            headers = [(f"h{i}", self.rng.choice([None, b"x" * i])) for i in range(self.rng.choice([0, 0, 1, 2]))]
            out.append(Record(key, value, self.clock, headers))
        return out

    def _append(self, partition: int, records: list[Record], state: str, **kw) -> list[Row]:
        info = self.logs[partition].append_raw(build_batch(records, **kw), now_ms=self.clock)
        rows = [
            Row(
                partition,
                info.first_offset + i,
                r.key,
                r.value,
                r.timestamp,
                r.headers,
                kw.get("producer_id", -1),
                kw.get("transactional", False),
                state,
            )
            for i, r in enumerate(records)
        ]
        self.model.rows += rows
        return rows

    def plain(self, partition: int, n: int | None = None, codec: int | None = None) -> list[Row]:
        recs = self._records(n or self.rng.randint(1, 25))
        return self._append(partition, recs, "committed", codec=self.rng.randint(0, 4) if codec is None else codec)

    def begin(self, partition: int, batches: int = 2) -> int:
        pid = self.next_pid
        self.next_pid += 1
        rows: list[Row] = []
        for i in range(batches):
            rows += self._append(
                partition,
                self._records(self.rng.randint(1, 10)),
                "open",
                codec=self.rng.randint(0, 4),
                producer_id=pid,
                producer_epoch=0,
                base_sequence=len(rows),
                transactional=True,
            )
            if i + 1 < batches:
                self.plain(partition)  # interleaved non-transactional data
        self.open_txns[partition] = (pid, rows)
        return pid

    def end(self, partition: int, commit: bool) -> None:
        pid, rows = self.open_txns.pop(partition)
        log = self.logs[partition]
        marker = log.append_control(CONTROL_COMMIT if commit else CONTROL_ABORT, pid, 0, 0, now_ms=self.clock)
        if not commit:
            log.append_aborted_txn(AbortedTxn(pid, rows[0].offset, marker.first_offset, marker.first_offset + 1))
        for r in rows:
            r.state = "committed" if commit else "aborted"

    # -- scenarios ----------------------------------------------------------------------------

    def fill(self, steps: int = 60) -> None:
        """Plain batches and transactions (about a third aborted) in every partition."""
        for _ in range(steps):
            for p in range(len(self.logs)):
                if self.rng.random() < 0.25 and p not in self.open_txns:
                    self.begin(p, batches=self.rng.randint(1, 3))
                    if self.rng.random() < 0.5:
                        self.plain(p)
                    self.end(p, commit=self.rng.random() < 0.65)
                else:
                    self.plain(p)

    def roll(self) -> dict[int, int]:
        """Close every active segment; returns {partition: end of closed data}."""
        for log in self.logs:
            log.roll(now_ms=self.clock)
        return self.closed_end()

    def closed_end(self) -> dict[int, int]:
        return {p: log.segments[-1].base_offset for p, log in enumerate(self.logs)}

    def close(self) -> None:
        for log in self.logs:
            log.close()
