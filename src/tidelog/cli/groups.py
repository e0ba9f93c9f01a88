"""`tidelog groups list|describe|delete|reset-offsets|delete-offsets` (like kafka-consumer-groups;
a group's type - classic, consumer, share, streams - is found with ListGroups: share groups are
handled as kafka-share-groups does by `share_groups`, and `describe` of a streams group shows, as
kafka-streams-groups does, its offsets and lags, `--members` its members with their tasks,
`--state` its state and epochs). `tidelog consume` (records of a time window among others) lives in
`cli_consume`.

reset-offsets computes, per partition, the new offset from the broker: ListOffsets by timestamp
(the time index) for --to-datetime/--by-duration, ListOffsets earliest/latest for the other
specs and for clamping into [log start, log end]. It prints current -> new and commits only with
--execute, and only while the group has no active members (a share group: its share-partition
start offsets, with AlterShareGroupOffsets).

The commands talk to the broker they are given; in a cluster, give the group's coordinator.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
import sys
import time
from dataclasses import dataclass

from . import share_groups
from .client import ClientError, KafkaClient, error_name

EARLIEST, LATEST = -2, -1
INACTIVE = ("Empty", "Dead")


class UsageError(ValueError):
    pass


def reporting_usage_errors(cmd):
    """`cmd(args)` with a UsageError printed as `tidelog: ...` and exit status 2."""

    def run(args) -> int:
        try:
            return cmd(args)
        except UsageError as e:
            print(f"tidelog: {e}", file=sys.stderr)
            return 2

    return run


def _err(code) -> str:
    return error_name(code)


# ---- parsing times ---------------------------------------------------------------------------

_DURATION = re.compile(
    r"^([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+(?:[.,]\d+)?)S)?)?$", re.I
)


def parse_duration(text: str) -> dt.timedelta:
    """An ISO-8601 duration as java.time.Duration reads it: [-]PnDTnHnMn.nS (e.g. PT2H, P1DT30M)."""
    m = _DURATION.match(text.strip())
    if not m or text.strip().upper().endswith(("P", "T")):
        raise UsageError(f"not an ISO-8601 duration (like PT2H or P1DT30M): {text!r}")
    sign, days, hours, minutes, seconds = m.groups()
    d = dt.timedelta(
        days=int(days or 0),
        hours=int(hours or 0),
        minutes=int(minutes or 0),
        seconds=float((seconds or "0").replace(",", ".")),
    )
    return -d if sign == "-" else d


def parse_instant(text: str, now: dt.datetime | None = None) -> int:
    """Epoch milliseconds of an ISO-8601 date-time (no zone = local time, as Kafka's tool), or of a
    duration relative to now: `-PT30M` is thirty minutes ago, `PT0S` is now."""
    s = text.strip()
    now = now or dt.datetime.now(dt.UTC)
    if s.lstrip("+-").upper().startswith("P"):
        return int((now + parse_duration(s)).timestamp() * 1000)
    try:
        when = dt.datetime.fromisoformat(s)
    except ValueError:
        raise UsageError(f"not an ISO-8601 date-time (like 2026-11-23T08:00:00Z): {text!r}") from None
    if when.tzinfo is None:
        when = when.astimezone()  # local time zone
    return int(when.timestamp() * 1000)


def format_ms(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---- protocol helpers ------------------------------------------------------------------------


def parse_topic_spec(spec: str) -> tuple[str, list[int] | None]:
    """`topic` or `topic:0,1,3` (partitions)."""
    name, sep, parts = spec.partition(":")
    if not sep:
        return name, None
    try:
        return name, sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise UsageError(f"bad partition list in {spec!r}") from None


def topic_partitions(client: KafkaClient, names: list[str]) -> dict[str, int]:
    md = client.request(
        3,
        {
            "topics": [{"name": n, "topic_id": None} for n in names],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
        highest=12,
    )
    out = {}
    for t in md.topics:
        if t.error_code.value:
            raise UsageError(f"topic {t.name}: {_err(t.error_code)}")
        out[t.name] = len(t.partitions)
    return out


def list_offsets(client: KafkaClient, query: dict[tuple[str, int], int]) -> dict[tuple[str, int], tuple[int, int]]:
    """ListOffsets (v1+): (topic, partition) -> timestamp or EARLIEST/LATEST gives (offset, timestamp).
    Offset -1 means no record at or after the timestamp."""
    by_topic: dict[str, list[dict]] = {}
    for (t, p), ts in sorted(query.items()):
        by_topic.setdefault(t, []).append({"partition_index": p, "current_leader_epoch": -1, "timestamp": ts})
    resp = client.request(
        2,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        },
        highest=7,
    )
    out = {}
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code.value:
                raise UsageError(f"ListOffsets {t.name}-{p.partition_index}: {_err(p.error_code)}")
            out[(t.name, p.partition_index)] = (p.offset, p.timestamp)
    return out


def describe_group(client: KafkaClient, group: str):
    resp = client.request(15, {"groups": [group], "include_authorized_operations": False}, highest=5)
    g = resp.groups[0]
    if g.error_code.value:
        raise UsageError(f"group {group}: {_err(g.error_code)}")
    return g


def committed_offsets(client: KafkaClient, group: str) -> dict[tuple[str, int], int]:
    resp = client.request(9, {"group_id": group, "topics": None, "require_stable": False}, highest=7)
    if getattr(resp, "error_code", None) is not None and resp.error_code.value:
        raise UsageError(f"group {group}: {_err(resp.error_code)}")
    return {
        (t.name, p.partition_index): p.committed_offset
        for t in resp.topics
        for p in t.partitions
        if p.committed_offset >= 0
    }


def parse_assignment(data: bytes) -> list[tuple[str, int]]:
    """Partitions of a ConsumerProtocolAssignment (int16 version, [topic, [int32]], userdata)."""
    out = []
    try:
        pos = 2
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(max(n, 0)):
            (ln,) = struct.unpack_from(">h", data, pos)
            pos += 2
            topic = bytes(data[pos : pos + ln]).decode()
            pos += ln
            (k,) = struct.unpack_from(">i", data, pos)
            pos += 4
            for _ in range(max(k, 0)):
                out.append((topic, struct.unpack_from(">i", data, pos)[0]))
                pos += 4
    except (struct.error, UnicodeDecodeError):
        pass
    return out


def _table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [["-" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(" ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


# ---- reset-offsets plan ----------------------------------------------------------------------


@dataclass(frozen=True)
class ResetSpec:
    kind: str  # to-datetime | by-duration | to-earliest | to-latest | to-offset | shift-by
    value: int = 0  # epoch ms, offset or shift


def reset_targets(spec: ResetSpec, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The ListOffsets query the spec needs beyond earliest/latest (timestamp per partition)."""
    if spec.kind in ("to-datetime", "by-duration"):
        return {tp: spec.value for tp in tps}
    return {}


def plan_reset(
    spec: ResetSpec,
    tps: list[tuple[str, int]],
    current: dict[tuple[str, int], int],
    earliest: dict[tuple[str, int], int],
    latest: dict[tuple[str, int], int],
    by_time: dict[tuple[str, int], int],
) -> dict[tuple[str, int], int]:
    """New offset per partition, clamped into [earliest, latest] as kafka-consumer-groups does."""
    out = {}
    for tp in tps:
        lo, hi = earliest[tp], latest[tp]
        if spec.kind in ("to-datetime", "by-duration"):
            found = by_time.get(tp, -1)
            new = hi if found < 0 else found
        elif spec.kind == "to-earliest":
            new = lo
        elif spec.kind == "to-latest":
            new = hi
        elif spec.kind == "to-offset":
            new = spec.value
        elif spec.kind == "shift-by":
            if tp not in current:
                raise UsageError(f"cannot shift {tp[0]}-{tp[1]}: the group has no committed offset there")
            new = current[tp] + spec.value
        else:  # pragma: no cover - argparse restricts the kinds
            raise UsageError(spec.kind)
        out[tp] = min(max(new, lo), hi)
    return out


# ---- commands --------------------------------------------------------------------------------


def list_groups(client: KafkaClient, state: str | None = None, kind: str | None = None):
    req = {"states_filter": [state] if state else [], "types_filter": [kind] if kind else []}
    resp = client.request(16, req, highest=5)
    if resp.error_code.value:
        raise UsageError(f"listing groups: {_err(resp.error_code)}")
    return sorted(resp.groups, key=lambda g: g.group_id)


def group_type(client: KafkaClient, group: str) -> str | None:
    """classic, consumer, share or streams; None when no such group exists."""
    for g in list_groups(client):
        if g.group_id == group:
            return getattr(g, "group_type", "") or "classic"
    return None


def cmd_list(args, client: KafkaClient) -> int:
    groups = list_groups(client, args.state, args.type)
    if args.state or args.verbose:
        rows = [[g.group_id, getattr(g, "group_type", "") or "classic", g.group_state] for g in groups]
        print(_table(rows, ["GROUP", "TYPE", "STATE"]))
    else:
        for g in groups:
            print(g.group_id)
    return 0


# ---- streams groups (KIP-1071), as kafka-streams-groups shows them ------------------------------


def describe_streams_group(client: KafkaClient, group: str):
    """The StreamsGroupDescribe answer of `group`, or None when it is not a streams group."""
    resp = client.request(89, {"group_ids": [group], "include_authorized_operations": False}, version=0)
    g = resp.groups[0]
    return None if g.error_code.value else g


def _task_list(tasks) -> str:
    return "".join(f"{t.subtopology_id}:[{','.join(map(str, t.partitions))}]; " for t in tasks)


def _streams_assignments(m) -> str:
    out = ""
    for label, a in (("", m.assignment), ("TARGET-", m.target_assignment)):
        for kind, tasks in (("ACTIVE", a.active_tasks), ("STANDBY", a.standby_tasks), ("WARMUP", a.warmup_tasks)):
            if tasks:
                out += f"{label}{kind}: {_task_list(tasks)}"
    return out.strip()


def describe_streams(args, client: KafkaClient, g) -> int:
    if args.state:
        coordinator = client.request(
            10, {"key": args.group, "key_type": 0, "coordinator_keys": [args.group]}, highest=3
        )
        node = f"{coordinator.host}:{coordinator.port} ({coordinator.node_id})"
        rows = [[g.group_id, node, g.group_state, g.group_epoch, g.assignment_epoch, len(g.members)]]
        print(
            _table(rows, ["GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"])
        )
        return 0
    if args.members:
        rows = [
            [
                g.group_id,
                g.assignment_epoch,
                m.topology_epoch,
                m.member_id,
                "classic" if m.is_classic else "streams",
                m.member_epoch,
                m.process_id,
                m.client_id,
                _streams_assignments(m),
            ]
            for m in g.members
        ]
        header = ["GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL", "MEMBER-EPOCH"]
        print(_table(rows, [*header, "PROCESS", "CLIENT-ID", "ASSIGNMENTS"]))
        return 0
    # offsets: every source topic's (input and repartition) committed offsets and lags
    sources = set()
    for sub in (g.topology.subtopologies or ()) if g.topology is not None else ():
        sources.update(sub.source_topics)
        sources.update(t.name for t in sub.repartition_source_topics)
    current = {tp: o for tp, o in committed_offsets(client, args.group).items() if tp[0] in sources}
    tps = sorted(current)
    ends = {tp: off for tp, (off, _) in list_offsets(client, {tp: LATEST for tp in tps}).items()} if tps else {}
    rows = [[args.group, t, p, current[(t, p)], ends.get((t, p)), ends[(t, p)] - current[(t, p)]] for t, p in tps]
    print(f"Streams group {args.group} is {g.group_state} ({len(g.members)} members)")
    print(_table(rows, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "OFFSET-LAG"]))
    return 0


def cmd_describe(args, client: KafkaClient) -> int:
    kind = group_type(client, args.group)
    if kind == "share":
        return share_groups.cmd_describe(args.group, client, _table)
    streams = describe_streams_group(client, args.group) if kind == "streams" else None
    if streams is not None:
        return describe_streams(args, client, streams)
    g = describe_group(client, args.group)
    if g.group_state == "Dead":
        print(f"Consumer group '{args.group}' does not exist.", file=sys.stderr)
        return 1
    owner: dict[tuple[str, int], tuple[str, str, str]] = {}
    for m in g.members:
        for tp in parse_assignment(m.member_assignment):
            owner[tp] = (m.member_id, m.client_host, m.client_id)
    current = committed_offsets(client, args.group)
    tps = sorted(set(current) | set(owner))
    ends = {tp: off for tp, (off, _) in list_offsets(client, {tp: LATEST for tp in tps}).items()} if tps else {}
    rows = []
    for tp in tps:
        cur, end = current.get(tp), ends.get(tp)
        lag = end - cur if cur is not None and end is not None else None
        mid, host, cid = owner.get(tp, (None, None, None))
        rows.append([args.group, tp[0], tp[1], cur, end, lag, mid, host, cid])
    print(f"Group {args.group} is {g.group_state} ({len(g.members)} members, protocol {g.protocol_data or '-'})")
    print(
        _table(
            rows,
            [
                "GROUP",
                "TOPIC",
                "PARTITION",
                "CURRENT-OFFSET",
                "LOG-END-OFFSET",
                "LAG",
                "CONSUMER-ID",
                "HOST",
                "CLIENT-ID",
            ],
        )
    )
    return 0


def cmd_delete(args, client: KafkaClient) -> int:
    resp = client.request(42, {"groups_names": [args.group]}, highest=2)
    r = resp.results[0]
    if r.error_code.value:
        print(f"Error deleting group {args.group}: {_err(r.error_code)}", file=sys.stderr)
        return 1
    print(f"Deletion of requested consumer group '{args.group}' was successful.")
    return 0


def _reset_spec(args) -> ResetSpec:
    if args.to_datetime is not None:
        return ResetSpec("to-datetime", parse_instant(args.to_datetime))
    if args.by_duration is not None:
        d = parse_duration(args.by_duration)
        return ResetSpec("by-duration", int((time.time() - abs(d.total_seconds())) * 1000))
    if args.to_earliest:
        return ResetSpec("to-earliest")
    if args.to_latest:
        return ResetSpec("to-latest")
    if args.to_offset is not None:
        return ResetSpec("to-offset", args.to_offset)
    return ResetSpec("shift-by", args.shift_by)


def cmd_reset_offsets(args, client: KafkaClient) -> int:
    spec = _reset_spec(args)
    share = group_type(client, args.group) == "share"
    g = share_groups.describe(client, args.group) if share else describe_group(client, args.group)
    state = g.group_state if g is not None else "Empty"  # a share group made by this reset is empty
    members = len(g.members) if g is not None else 0
    active = state not in INACTIVE
    if active and args.execute:
        print(
            f"Error: Assignments can only be reset if the group '{args.group}' is inactive, but the current "
            f"state is {state} ({members} active members). Stop its consumers first.",
            file=sys.stderr,
        )
        return 1
    if share:
        current = {tp: start for tp, (start, _) in share_groups.start_offsets(client, args.group).items()}
    else:
        current = committed_offsets(client, args.group)
    specs = [parse_topic_spec(t) for t in args.topic]
    if args.all_topics:
        specs += [(t, None) for t in sorted({t for t, _ in current})]
    if not specs:
        raise UsageError("name the partitions to reset: --topic T[:P,...] or --all-topics")
    counts = topic_partitions(client, sorted({t for t, _ in specs}))
    tps: list[tuple[str, int]] = []
    for name, parts in specs:
        for p in range(counts[name]) if parts is None else parts:
            if not 0 <= p < counts[name]:
                raise UsageError(f"topic {name} has no partition {p}")
            tps.append((name, p))
    tps = sorted(set(tps))
    earliest = {tp: o for tp, (o, _) in list_offsets(client, {tp: EARLIEST for tp in tps}).items()}
    latest = {tp: o for tp, (o, _) in list_offsets(client, {tp: LATEST for tp in tps}).items()}
    query = reset_targets(spec, tps)
    by_time = {tp: o for tp, (o, _) in list_offsets(client, query).items()} if query else {}
    new = plan_reset(spec, tps, current, earliest, latest, by_time)
    rows = [[args.group, t, p, current.get((t, p)), new[(t, p)]] for t, p in tps]
    print(_table(rows, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]))
    if not args.execute:
        note = " (the group is active: --execute would be refused)" if active else ""
        if not args.dry_run:
            print(
                f"No action performed: add --execute to commit these offsets (or --dry-run to only show them){note}.",
                file=sys.stderr,
            )
        elif note:
            print(note.strip(" ()").capitalize() + ".", file=sys.stderr)
        return 0
    if share:
        errors = share_groups.commit(client, args.group, new)
        for line in errors:
            print(line, file=sys.stderr)
        if errors:
            return 1
        print(f"Altered {len(new)} share-partition start offsets of share group {args.group}.")
        return 0
    by_topic: dict[str, list[dict]] = {}
    for (t, p), off in sorted(new.items()):
        by_topic.setdefault(t, []).append(
            {"partition_index": p, "committed_offset": off, "committed_leader_epoch": -1, "committed_metadata": ""}
        )
    resp = client.request(
        8,
        {
            "group_id": args.group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        },
        highest=8,
    )
    failed = [
        (t.name, p.partition_index, _err(p.error_code)) for t in resp.topics for p in t.partitions if p.error_code.value
    ]
    for t, p, e in failed:
        print(f"Error committing {t}-{p}: {e}", file=sys.stderr)
    if failed:
        return 1
    print(f"Committed {len(new)} offsets for group {args.group}.")
    return 0


def cmd_delete_offsets(args, client: KafkaClient) -> int:
    """A group's offsets of whole topics: a share group's share state (DeleteShareGroupOffsets),
    a consumer group's committed offsets (OffsetDelete)."""
    topics = list(dict.fromkeys(args.topic))
    if group_type(client, args.group) == "share":
        return share_groups.cmd_delete_offsets(args.group, topics, client)
    counts = topic_partitions(client, topics)
    resp = client.request(
        47,
        {
            "group_id": args.group,
            "topics": [{"name": t, "partitions": [{"partition_index": p} for p in range(counts[t])]} for t in topics],
        },
        highest=0,
    )
    if resp.error_code.value:
        print(f"Error deleting the offsets of group {args.group}: {_err(resp.error_code)}", file=sys.stderr)
        return 1
    failed = [
        (t.name, p.partition_index, _err(p.error_code)) for t in resp.topics for p in t.partitions if p.error_code.value
    ]
    for t, p, e in failed:
        print(f"Error deleting the offset of {t}-{p}: {e}", file=sys.stderr)
    if not failed:
        print(f"Deleted the offsets of group {args.group} for {', '.join(topics)}.")
    return 1 if failed else 0


# ---- argparse --------------------------------------------------------------------------------


def add_parser(sub, default_bootstrap: str) -> None:
    p = sub.add_parser(
        "groups", help="list, describe, delete groups (classic, consumer, share, streams) and reset their offsets"
    )
    gsub = p.add_subparsers(dest="action", required=True)

    def common(sp):
        sp.add_argument("--bootstrap-server", default=default_bootstrap)
        return sp

    lst = common(gsub.add_parser("list"))
    lst.add_argument("--state", help="only groups in this state (Empty, Stable, ...)")
    lst.add_argument("--type", choices=("classic", "consumer", "share", "streams"), help="only groups of this type")
    lst.add_argument("--verbose", action="store_true", help="show each group's type and state")
    lst.set_defaults(run=cmd_list)
    d = common(gsub.add_parser("describe"))
    d.add_argument("--group", required=True)
    shown = d.add_mutually_exclusive_group()
    shown.add_argument("--members", action="store_true", help="a streams group's members and their tasks")
    shown.add_argument("--state", action="store_true", help="a streams group's state and epochs")
    d.set_defaults(run=cmd_describe)
    dl = common(gsub.add_parser("delete"))
    dl.add_argument("--group", required=True)
    dl.set_defaults(run=cmd_delete)
    r = common(gsub.add_parser("reset-offsets", help="rewind or forward a group's committed offsets"))
    r.add_argument("--group", required=True)
    r.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,...]")
    r.add_argument("--all-topics", action="store_true", help="every topic the group has committed offsets for")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-datetime", metavar="ISO8601", help="first offset at or after this time")
    how.add_argument("--by-duration", metavar="PnDTnHnM", help="first offset at or after now minus this")
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-offset", type=int, metavar="N")
    how.add_argument("--shift-by", type=int, metavar="N")
    act = r.add_mutually_exclusive_group()
    act.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    act.add_argument("--execute", action="store_true", help="commit the new offsets")
    r.set_defaults(run=cmd_reset_offsets)

    do = common(gsub.add_parser("delete-offsets", help="delete a group's offsets of whole topics"))
    do.add_argument("--group", required=True)
    do.add_argument("--topic", action="append", required=True, metavar="TOPIC")
    do.set_defaults(run=cmd_delete_offsets)
    p.set_defaults(func=_run)


def _run(args) -> int:
    try:
        with KafkaClient(args.bootstrap_server) as client:
            return args.run(args, client)
    except UsageError as e:
        print(f"tidelog: {e}", file=sys.stderr)
        return 2
    except (OSError, ClientError) as e:
        print(f"tidelog: cannot talk to {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
