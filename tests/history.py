"""A history checker for Kafka-style logs, in the spirit of Jepsen's Kafka workload: clients record
what they sent, what was acknowledged (partition, offset), what they polled; the checker reads the
final log and reports the anomaly classes Jepsen names.

Values must be unique per run (e.g. "<client>-<n>"). Events:

- `send(producer, value)`: before the client is given the record (send order per producer).
- `ack(producer, value, partition, offset)`: acknowledged at that offset.
- `fail(producer, value)`: the client reported a definite failure (the write may or may not be
  in the log: it is neither lost nor a duplicate when absent, only when present twice).
- `aborted(value)`: the value belongs to an aborted transaction.
- `poll(consumer, partition, offset, value)`: a consumer read it (in poll order);
  `reassign(consumer)`: its positions were reset (assign/seek/rebalance), ending monotonic runs.
- `final(partition, [(offset, value), ...])`: the complete log as read at the end.

Anomalies (`check()` returns {class: [examples]}, empty lists when clean):

- lost-write: acknowledged, absent from the final log (below the read end).
- duplicate: one value at two or more offsets (in the final log, or across observations).
- inconsistent-offsets: two values seen at one offset (acks, polls and the final log disagree).
- nonmonotonic-send: a producer's acknowledged offsets on one partition go backwards in send order.
- nonmonotonic-poll: a consumer's successive polls of one partition go backwards (no reassign).
- poll-skip: a consumer's successive polls of one partition jump over offsets holding records in
  the final log (no reassign).
- aborted-read: a value of an aborted transaction was polled.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Hashable

CLASSES = ("lost-write", "duplicate", "inconsistent-offsets", "nonmonotonic-send", "nonmonotonic-poll",
           "poll-skip", "aborted-read")


@dataclass
class History:
    sends: dict[Hashable, list[object]] = field(default_factory=lambda: defaultdict(list))
    acks: dict[object, tuple[int, int]] = field(default_factory=dict)
    ack_producer: dict[object, Hashable] = field(default_factory=dict)
    failed: set[object] = field(default_factory=set)
    aborted_values: set[object] = field(default_factory=set)
    polls: dict[Hashable, list[tuple[int, int, object] | None]] = field(default_factory=lambda: defaultdict(list))
    logs: dict[int, list[tuple[int, object]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    # -- recording (thread-safe) ----------------------------------------------------------------
    def send(self, producer: Hashable, value: object) -> None:
        with self.lock:
            self.sends[producer].append(value)

    def ack(self, producer: Hashable, value: object, partition: int, offset: int) -> None:
        with self.lock:
            self.acks[value] = (partition, offset)
            self.ack_producer[value] = producer

    def fail(self, producer: Hashable, value: object) -> None:
        with self.lock:
            self.failed.add(value)

    def aborted(self, value: object) -> None:
        with self.lock:
            self.aborted_values.add(value)

    def poll(self, consumer: Hashable, partition: int, offset: int, value: object) -> None:
        with self.lock:
            self.polls[consumer].append((partition, offset, value))

    def reassign(self, consumer: Hashable) -> None:
        with self.lock:
            self.polls[consumer].append(None)

    def final(self, partition: int, records: list[tuple[int, object]]) -> None:
        with self.lock:
            self.logs[partition] = sorted(records, key=lambda r: r[0])

    # -- checking -----------------------------------------------------------------------------
    def check(self) -> dict[str, list[object]]:
        out: dict[str, list[object]] = {c: [] for c in CLASSES}
        at: dict[tuple[int, int], set[object]] = defaultdict(set)  # (partition, offset) -> values
        where: dict[object, set[tuple[int, int]]] = defaultdict(set)  # value -> (partition, offset)
        for p, recs in self.logs.items():
            for off, v in recs:
                at[(p, off)].add(v)
                where[v].add((p, off))
        for v, (p, off) in self.acks.items():
            at[(p, off)].add(v)
            where[v].add((p, off))
        for events in self.polls.values():
            for e in events:
                if e is not None:
                    p, off, v = e
                    at[(p, off)].add(v)
                    where[v].add((p, off))

        ends = {p: (recs[-1][0] + 1 if recs else 0) for p, recs in self.logs.items()}
        in_log = {v for recs in self.logs.values() for _o, v in recs}
        for v, (p, off) in sorted(self.acks.items(), key=lambda kv: kv[1]):
            if p in self.logs and off < ends[p] and v not in in_log and v not in self.aborted_values:
                out["lost-write"].append((v, p, off))
        for v, places in where.items():
            if len(places) > 1:
                out["duplicate"].append((v, sorted(places)))
        for (p, off), vals in sorted(at.items(), key=lambda kv: kv[0]):
            if len(vals) > 1:
                out["inconsistent-offsets"].append((p, off, sorted(map(str, vals))))

        for producer, values in self.sends.items():
            last: dict[int, tuple[int, object]] = {}
            for v in values:
                a = self.acks.get(v)
                if a is None:
                    continue
                p, off = a
                if p in last and off <= last[p][0]:
                    out["nonmonotonic-send"].append((producer, p, last[p], (off, v)))
                last[p] = (off, v)

        offsets = {p: [o for o, _v in recs] for p, recs in self.logs.items()}
        for consumer, events in self.polls.items():
            prev: dict[int, int] = {}
            for e in events:
                if e is None:
                    prev.clear()
                    continue
                p, off, v = e
                if v in self.aborted_values:
                    out["aborted-read"].append((consumer, p, off, v))
                if p in prev:
                    if off <= prev[p]:
                        out["nonmonotonic-poll"].append((consumer, p, prev[p], off))
                    elif p in offsets:
                        offs = offsets[p]
                        i = bisect.bisect_right(offs, prev[p])  # the next record after the previous poll
                        if i < len(offs) and offs[i] < off:
                            out["poll-skip"].append((consumer, p, prev[p], off, offs[i]))
                prev[p] = off
        return out

    def summary(self) -> str:
        found = self.check()
        return ", ".join(f"{k}: {len(v)} (e.g. {v[:3]})" for k, v in found.items() if v) or "no anomalies"
