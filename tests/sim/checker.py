"""The end-of-run checks of a simulation, after every fault was healed and the cluster converged.

For each partition of the data topic, from the final leader's log (batches decoded here,
independently of the broker's own indexes):
- convergence: every partition led, its ISR all its replicas, every replica at the same log end
  and high watermark, byte for byte identical (batch base, last offset, CRC);
- no acknowledged record lost or moved: each acknowledged value is in the log at the offset its
  acknowledgement named;
- no duplicates from idempotent producers or from producers that never retry;
- transactions: a committed one has every record in the log, committed; an aborted one has none
  committed; one with an unknown outcome is committed whole or not at all; no transaction is
  left open;
- read_committed: what the broker's own Fetch(read_committed) serves equals what the markers in
  the log say is committed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tidelog.log.records import (
    CONTROL_COMMIT,
    CONTROL_FLAG_MASK,
    H_ATTRIBUTES,
    H_LAST_OFFSET_DELTA,
    H_PRODUCER_ID,
    TRANSACTIONAL_FLAG_MASK,
    decode_batches,
    parse_control_record,
)
from tidelog.wire import fetch as fetch_codec

from .clients import History
from .cluster import SimCluster, batches_below


def converged(sim: SimCluster, topics: list[str]) -> str | None:
    """None when the cluster is whole and every replica equal; else what is not yet so."""
    cache = _any_cache(sim)
    if cache is None:
        return "no broker has a cluster view"
    for topic in topics:
        a = cache.topics.get(topic)
        if a is None:
            return f"{topic} unknown"
        for p in range(a.partitions):
            st = cache.state(topic, p)
            replicas = set(a.replicas[p])
            if st is None or st.leader < 0 or set(st.isr) != replicas:
                return f"{topic}-{p}: state {st}"
            leader = sim.brokers[st.leader]
            rm = leader.replica_manager()
            r = rm.replicas.get((topic, p)) if rm is not None else None
            if r is None or r.role != "leader" or r.leader_epoch != st.leader_epoch:
                return f"{topic}-{p}: broker {st.leader} not yet leading at epoch {st.leader_epoch}"
            ends = set()
            for b in replicas:
                plog = sim.brokers[b].plog(topic, p)
                if plog is None:
                    return f"{topic}-{p}: no log on broker {b}"
                ends.add((plog.log_end_offset, plog.high_watermark))
            if len(ends) != 1 or next(iter(ends))[0] != next(iter(ends))[1]:
                return f"{topic}-{p}: (log end, hw) per replica {sorted(ends)}"
    return None


def _any_cache(sim: SimCluster) -> Any:
    for b in sim.brokers.values():
        if b.running and b.broker is not None and getattr(b.broker.cluster, "cache", None) is not None:
            return b.broker.cluster.cache
    return None


def final_check(sim: SimCluster, h: History, topic: str) -> list[str]:
    out: list[str] = []
    cache = _any_cache(sim)
    parts = cache.topics[topic].partitions
    committed_values: dict[str, tuple[int, int]] = {}  # value -> (partition, offset), committed
    seen: dict[str, list[tuple[int, int]]] = defaultdict(list)  # value -> every (partition, offset)
    txn_state: dict[str, str] = {}  # value -> committed | aborted | open (transactional records)
    for p in range(parts):
        st = cache.state(topic, p)
        leader = sim.brokers[st.leader]
        plog = leader.plog(topic, p)
        ref = batches_below(plog, plog.high_watermark)
        for b in cache.topics[topic].replicas[p]:
            other = sim.brokers[b].plog(topic, p)
            if batches_below(other, other.high_watermark) != ref:
                out.append(f"{topic}-{p}: replica on broker {b} differs from the leader's {st.leader}")
        data = b"".join(seg.log.pread(0, seg.log.size) for seg in plog.segments)
        open_txn: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for batch in decode_batches(data):
            attrs = batch.header[H_ATTRIBUTES]
            pid = batch.header[H_PRODUCER_ID]
            if attrs & CONTROL_FLAG_MASK:
                ctype, _ = parse_control_record(batch.records[0])
                state = "committed" if ctype == CONTROL_COMMIT else "aborted"
                for v, off in open_txn.pop(pid, []):
                    txn_state[v] = state
                    if state == "committed":
                        committed_values[v] = (p, off)
                continue
            for r in batch.records:
                v = (r.value or b"").decode()
                seen[v].append((p, r.offset))
                if attrs & TRANSACTIONAL_FLAG_MASK:
                    open_txn[pid].append((v, r.offset))
                    txn_state[v] = "open"
                else:
                    committed_values[v] = (p, r.offset)
        for pid, recs in open_txn.items():
            out.append(f"{topic}-{p}: transaction of producer {pid} left open ({len(recs)} records, first {recs[0]})")
        out += _read_committed_matches(leader, topic, p, {v for v, (pp, _o) in committed_values.items() if pp == p})

    for v, (t, p, off) in sorted(h.acked.items()):
        if t != topic or txn_state.get(v) is not None or h.acked_by.get(v, "").startswith("txn"):
            continue
        where = seen.get(v)
        if not where:
            out.append(f"acknowledged {v} ({h.acked_by.get(v)}) at {t}-{p}@{off} is lost")
        elif (p, off) not in where:
            out.append(f"acknowledged {v} ({h.acked_by.get(v)}) at {t}-{p}@{off} moved to {where}")
    for v, where in seen.items():
        kind = h.sent.get(v, "")
        if len(where) > 1 and (kind.startswith("idempotent") or kind.startswith("once") or kind.startswith("txn")):
            if (
                kind.startswith("txn")
                and sum(1 for w in where if committed_values.get(v) == w) <= 1
                and txn_state.get(v) != "committed"
            ):
                continue
            out.append(f"{v} ({kind}) appears {len(where)} times: {where}")
    for txn in h.txns:
        if not txn.sent or any(t != topic for t, _p, _v in txn.sent):
            continue  # another topic's, or only offsets (an EOS copy of aborted records)
        states = {txn_state.get(v, "absent") for _t, _p, v in txn.records}
        committed = {v for _t, _p, v in txn.sent if txn_state.get(v) == "committed"}
        if txn.outcome == "committed" and states != {"committed"}:
            out.append(f"{txn.client} transaction {txn.number} was committed but its records are {sorted(states)}")
        elif txn.outcome == "aborted" and committed:
            out.append(f"{txn.client} transaction {txn.number} was aborted but {sorted(committed)} are committed")
        elif txn.outcome == "unknown" and committed and states - {"committed"}:
            out.append(f"{txn.client} transaction {txn.number} (outcome unknown) is torn: {sorted(states)}")
    return out


def _read_committed_matches(leader: Any, topic: str, p: int, expected: set[str]) -> list[str]:
    """The broker's read_committed Fetch from offset 0 equals the markers' verdict."""
    values, error = _read_committed(leader, topic, p)
    if error is not None:
        return [f"{topic}-{p}: read_committed fetch at {error[0]} answered error {error[1]}"]
    got = set(values)
    if got != expected:
        missing, extra = sorted(expected - got)[:5], sorted(got - expected)[:5]
        return [
            f"{topic}-{p}: read_committed serves {len(got)} values, the markers commit {len(expected)}: "
            f"missing {missing}, extra {extra}"
        ]
    return []


def _read_committed(leader: Any, topic: str, p: int) -> tuple[list[str], tuple[int, int] | None]:
    """The values a read_committed consumer gets from the whole partition, through the leader's
    own Fetch; and (offset, error) of a fetch below the LSO that answered an error or nothing."""
    from tidelog.server.handlers.fetch import read_all

    plog = leader.plog(topic, p)
    out: list[str] = []
    offset = plog.log_start_offset
    while offset < plog.last_stable_offset:
        req = fetch_codec.FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            isolation_level=1,
            topics=[fetch_codec.FetchRequestTopic(topic, [fetch_codec.FetchRequestPartition(p, offset, 1 << 20)])],
        )
        resp, _total, _errors, _keys = leader.proc.run(read_all, leader.broker, req, 11)
        pr = resp.responses[0].partitions[0]
        if pr.error_code or not pr.records:
            return out, (offset, pr.error_code)
        data = b"".join(bytes(c.tobytes() if hasattr(c, "tobytes") else c) for c in pr.records)
        records, after = committed_records(data, pr.aborted_transactions or (), offset)
        out += [v for v, _o in records]
        if after <= offset:
            break
        offset = after
    return out, None


def committed_records(data: bytes, aborted: Any, offset: int) -> tuple[list[tuple[str, int]], int]:
    """A read_committed consumer's view of one fetch: the (value, offset) of every record from
    `offset` that is neither a control record nor in an aborted transaction (`aborted`: the
    response's aborted transactions), and the offset after the last batch read."""
    batches = decode_batches(data)
    pending = sorted((a.first_offset, a.producer_id) for a in aborted)
    aborting: set[int] = set()
    out: list[tuple[str, int]] = []
    after = offset
    for batch in batches:
        attrs = batch.header[H_ATTRIBUTES]
        pid = batch.header[H_PRODUCER_ID]
        while pending and pending[0][0] <= batch.base_offset:
            aborting.add(pending.pop(0)[1])
        after = batch.base_offset + batch.header[H_LAST_OFFSET_DELTA] + 1
        if attrs & CONTROL_FLAG_MASK:
            if parse_control_record(batch.records[0])[0] != CONTROL_COMMIT:
                aborting.discard(pid)
            continue
        if attrs & TRANSACTIONAL_FLAG_MASK and pid in aborting:
            continue
        out += [((r.value or b"").decode(), r.offset) for r in batch.records if r.offset >= offset]
    return out, max(after, offset)


def committed_sequence(sim: SimCluster, topic: str, p: int) -> list[str]:
    """read_committed of a whole partition, through the leader's own Fetch."""
    cache = _any_cache(sim)
    return _read_committed(sim.brokers[cache.state(topic, p).leader], topic, p)[0]


def eos_check(sim: SimCluster, source: str, target: str) -> list[str]:
    """Exactly once: read_committed of `target`, per partition, is a prefix of `source`'s."""
    out = []
    cache = _any_cache(sim)
    for p in range(cache.topics[target].partitions):
        src, dst = committed_sequence(sim, source, p), committed_sequence(sim, target, p)
        src = [f"copy:{v}" for v in src]
        if dst != src[: len(dst)]:
            first = next((i for i, (a, b) in enumerate(zip(src, dst)) if a != b), min(len(src), len(dst)))
            out.append(
                f"exactly once broken on {target}-{p}: {len(dst)} copied of {len(src)}, first difference at "
                f"{first}: copied {dst[first : first + 3]}, source {src[first : first + 3]}"
            )
    return out


def diagnose(sim: SimCluster, topic: str) -> list[str]:
    """Each broker's view of each partition of `topic`: what to read when a run does not converge."""
    out = []
    for b in sim.brokers.values():
        if b.broker is None:
            continue
        cl = b.broker.cluster
        cache, rm, fm = getattr(cl, "cache", None), getattr(cl, "replicas", None), getattr(cl, "fetchers", None)
        for key, st in sorted((cache.states if cache is not None else {}).items()):
            if key[0] != topic:
                continue
            r = rm.replicas.get(key) if rm is not None else None
            plog = b.plog(*key)
            fetch = None
            if fm is not None and key in fm.where:
                f = fm.fetchers.get(fm.where[key])
                fs = f.parts.get(key) if f is not None else None
                fetch = (fm.where[key], fs, f.task.done() if f is not None else None)
            out.append(
                f"{b.name} ({b.proc.state if b.proc else '-'}) {key}: cache {st}; role "
                f"{r.role if r else None} epoch {r.leader_epoch if r else None}; log "
                f"{(plog.log_end_offset, plog.high_watermark) if plog else None}; fetching {fetch}; "
                f"registered epoch {getattr(cl, 'broker_epoch', None)}"
            )
    return out


def diagnose_transactions(sim: SimCluster, topics: list[str]) -> list[str]:
    """Each transaction left open on a partition's leader (LSO below HW), and what every
    transaction coordinator knows of its producer."""
    out = []
    cache = _any_cache(sim)
    for topic in topics:
        for p in range(cache.topics[topic].partitions):
            st = cache.state(topic, p)
            leader = sim.brokers.get(st.leader) if st is not None else None
            plog = leader.plog(topic, p) if leader is not None and leader.broker is not None else None
            if plog is None or plog.last_stable_offset >= plog.high_watermark:
                continue
            state = leader.broker.producers.states.get((topic, p))
            for pid, e in sorted((state.producers if state is not None else {}).items()):
                if e.txn_first_offset is None:
                    continue
                out.append(
                    f"{topic}-{p} on {leader.name}: producer {pid} epoch {e.epoch} open from "
                    f"{e.txn_first_offset} (LSO {plog.last_stable_offset}, HW {plog.high_watermark})"
                )
                for b in sim.brokers.values():
                    coord = b.broker.txn.coordinator if b.broker is not None else None
                    if coord is None:
                        continue
                    meta = coord.by_pid.get(pid)
                    out.append(
                        f"  coordinator {b.name}: owns {coord.owned}, loading {sorted(coord.loading)}; "
                        + (
                            f"{meta.transactional_id} epoch {meta.producer_epoch} {meta.state.kafka_name} "
                            f"{sorted(meta.partitions)}"
                            if meta is not None
                            else "producer unknown"
                        )
                    )
    return out
