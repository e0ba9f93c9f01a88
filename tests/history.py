"""A history checker for Kafka-style logs, in the spirit of Jepsen's Kafka workload: clients record
what they sent, what was acknowledged (partition, offset), what they polled; the checker reads the
final log and reports the anomaly classes Jepsen names.

Values must be unique per run (e.g. "<client>-<n>"). Events:

- `send(producer, value)`: before the client is given the record (send order per producer).
- `ack(producer, value, partition, offset)`: acknowledged at that offset.
- `fail(producer, value)`: the client reported a definite failure (the write may or may not be
  in the log: it is neither lost nor a duplicate when absent, only when present twice).
- `aborted(value)`: the value belongs to an aborted transaction.
- `txn(producer, values, outcome)`: a transaction ended: "committed" (commit_transaction
  returned), "aborted" (abort_transaction returned: each value as `aborted`) or "unknown" (the
  producer failed between: the transaction may have been committed or aborted, but only whole).
- `poll(consumer, partition, offset, value)`: a consumer read it (in poll order);
  `reassign(consumer)`: its positions were reset (assign/seek/rebalance), ending monotonic runs.
- `final(partition, [(offset, value), ...], read_committed=False, complete=False)`: the log as
  read at the end; `read_committed`: read under read_committed (no aborted value may be in it);
  `complete`: read up to the high watermark after every fault was healed (an acknowledged value
  missing from it is lost whatever its offset, also past the end of what was read).

Every acknowledgement also records when it came (`ack_times`, time.monotonic()), so that a test can
place an anomaly among the faults it injected; `producer_of(value)` names who sent a value.

Anomalies (`check()` returns {class: [examples]}, empty lists when clean):

- lost-write: acknowledged, absent from the final log (below the read end, or anywhere when the
  final read was `complete`); values of transactions are checked by txn-lost/txn-partial instead.
- duplicate: one value at two or more offsets (in the final log, or across observations). This
  is the rule for idempotent producers and for a non-idempotent producer with retries=0 alike: no
  producer of a checked history may write a value twice, even one it was told failed.
- inconsistent-offsets: two values seen at one offset (acks, polls and the final log disagree).
- nonmonotonic-send: a producer's acknowledged offsets on one partition go backwards in send order
  (not checked for the producers named in `unordered`: Kafka promises order only to idempotent
  producers; librdkafka sends a non-idempotent batch again after later ones when its broker leaves).
- nonmonotonic-poll: a consumer's successive polls of one partition go backwards (no reassign).
- poll-skip: a consumer's successive polls of one partition jump over offsets holding records in
  the final log (no reassign).
- aborted-read: a value of an aborted transaction was polled, or is in a read_committed final log.
- txn-lost: a committed transaction whose values are not all in the final log (read_committed).
- txn-partial: a transaction of unknown outcome partly in the final log (read_committed): only all
  or none of its values may be there.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field

CLASSES = (
    "lost-write",
    "duplicate",
    "inconsistent-offsets",
    "nonmonotonic-send",
    "nonmonotonic-poll",
    "poll-skip",
    "aborted-read",
    "txn-lost",
    "txn-partial",
)


@dataclass
class History:
    unordered: frozenset[Hashable] = frozenset()  # producers whose sends may be reordered
    sends: dict[Hashable, list[object]] = field(default_factory=lambda: defaultdict(list))
    acks: dict[object, tuple[int, int]] = field(default_factory=dict)
    ack_producer: dict[object, Hashable] = field(default_factory=dict)
    ack_times: dict[object, float] = field(default_factory=dict)
    sent_by: dict[object, Hashable] = field(default_factory=dict)
    failed: set[object] = field(default_factory=set)
    aborted_values: set[object] = field(default_factory=set)
    unknown_values: set[object] = field(default_factory=set)  # of transactions of unknown outcome
    txns: list[tuple[Hashable, tuple[object, ...], str]] = field(default_factory=list)
    polls: dict[Hashable, list[tuple[int, int, object] | None]] = field(default_factory=lambda: defaultdict(list))
    logs: dict[int, list[tuple[int, object]]] = field(default_factory=dict)
    committed_logs: set[int] = field(default_factory=set)  # partitions whose final log is read_committed
    complete_logs: set[int] = field(default_factory=set)  # partitions whose final log was read to the HW
    lock: threading.Lock = field(default_factory=threading.Lock)

    # -- recording (thread-safe) ----------------------------------------------------------------
    def send(self, producer: Hashable, value: object) -> None:
        with self.lock:
            self.sends[producer].append(value)
            self.sent_by[value] = producer

    def ack(self, producer: Hashable, value: object, partition: int, offset: int) -> None:
        with self.lock:
            self.acks[value] = (partition, offset)
            self.ack_producer[value] = producer
            self.ack_times[value] = time.monotonic()

    def fail(self, producer: Hashable, value: object) -> None:
        with self.lock:
            self.failed.add(value)

    def aborted(self, value: object) -> None:
        with self.lock:
            self.aborted_values.add(value)

    def txn(self, producer: Hashable, values: list[object], outcome: str) -> None:
        assert outcome in ("committed", "aborted", "unknown"), outcome
        with self.lock:
            self.txns.append((producer, tuple(values), outcome))
            if outcome == "aborted":
                self.aborted_values.update(values)
            elif outcome == "unknown":
                self.unknown_values.update(values)

    def producer_of(self, value: object) -> Hashable | None:
        return self.sent_by.get(value)

    def poll(self, consumer: Hashable, partition: int, offset: int, value: object) -> None:
        with self.lock:
            self.polls[consumer].append((partition, offset, value))

    def reassign(self, consumer: Hashable) -> None:
        with self.lock:
            self.polls[consumer].append(None)

    def final(
        self, partition: int, records: list[tuple[int, object]], read_committed: bool = False, complete: bool = False
    ) -> None:
        with self.lock:
            self.logs[partition] = sorted(records, key=lambda r: r[0])
            (self.committed_logs.add if read_committed else self.committed_logs.discard)(partition)
            (self.complete_logs.add if complete else self.complete_logs.discard)(partition)

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
        in_txn = {v for _pr, vals, _o in self.txns for v in vals}
        for v, (p, off) in sorted(self.acks.items(), key=lambda kv: kv[1]):
            if (
                p in self.logs
                and (off < ends[p] or p in self.complete_logs)
                and v not in in_log
                and v not in self.aborted_values
                and v not in in_txn
            ):
                out["lost-write"].append((v, p, off))
        if self.logs and self.committed_logs == set(self.logs):  # transactions read under read_committed
            for i, (producer, vals, outcome) in enumerate(self.txns):
                missing = [v for v in vals if v not in in_log]
                if outcome == "committed" and missing:
                    out["txn-lost"].append((producer, i, f"{len(missing)} of {len(vals)} missing", missing[:3]))
                elif outcome == "unknown" and 0 < len(missing) < len(vals):
                    out["txn-partial"].append((producer, i, f"{len(missing)} of {len(vals)} missing", missing[:3]))
            for p in sorted(self.committed_logs):
                for off, v in self.logs[p]:
                    if v in self.aborted_values:
                        out["aborted-read"].append(("final", p, off, v))
        for v, places in where.items():
            if len(places) > 1:
                out["duplicate"].append((v, sorted(places)))
        for (p, off), vals in sorted(at.items(), key=lambda kv: kv[0]):
            if len(vals) > 1:
                out["inconsistent-offsets"].append((p, off, sorted(map(str, vals))))

        for producer, values in self.sends.items():
            if producer in self.unordered:
                continue
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

    def by_client(self, found: dict[str, list[object]] | None = None) -> dict[str, dict[str, int]]:
        """{class: {client: count}}: the producer of the value (lost-write, duplicate, aborted-read,
        inconsistent-offsets: each value seen there), the producer or consumer named otherwise."""
        found = self.check() if found is None else found
        out: dict[str, dict[str, int]] = {}
        by_name = {str(v): v for v in self.sent_by} if found.get("inconsistent-offsets") else {}
        for cls, examples in found.items():
            counts: dict[str, int] = defaultdict(int)
            for e in examples:
                if cls in ("lost-write", "duplicate"):
                    names = [self.producer_of(e[0])]
                elif cls == "aborted-read":
                    names = [self.producer_of(e[3])]
                elif cls == "inconsistent-offsets":
                    names = sorted({str(self.producer_of(by_name.get(v, v))) for v in e[2]})
                else:
                    names = [e[0]]
                for n in names:
                    counts[str(n)] += 1
            if counts:
                out[cls] = dict(counts)
        return out

    def summary(self) -> str:
        found = self.check()
        return ", ".join(f"{k}: {len(v)} (e.g. {v[:3]})" for k, v in found.items() if v) or "no anomalies"
