"""`tidelog consume`: print a topic's records, like kafka-console-consumer.

    tidelog consume --topic T [--bootstrap-server HOST:PORT] [--group G]
                    [--from-beginning | --from-time ISO8601|-PT30M | --offset N] [--to-time ...]
                    [--partition P ...] [--isolation read_committed|read_uncommitted]
                    [--format text|json] [--max-messages N] [--follow]

Where it starts: with `--group`, the group's committed offsets (records are committed as they
are read; with `--partition` the consumer is assigned those partitions instead of joining the
group's rebalances), else `--from-beginning` (earliest) or the end. `--from-time` starts each partition at
its first record at or after that time (ListOffsets on the time index), `--offset N` at N.
Where it stops: by default at the end offsets it saw when it started (the high watermark, or
the first record at or after `--to-time`), so it suits scripts; `--follow` keeps reading new
records until interrupted; `--max-messages` stops after N records either way.

`--format text` prints `topic<TAB>partition<TAB>offset<TAB>timestamp<TAB>type<TAB>key<TAB>value<TAB>
headers` (keys and values as UTF-8, else 0x-hex; `null` for none; headers `k=v,...`);
`--format json` one object per record (`topic`, `partition`, `offset`, `timestamp` (ms),
`timestamp_type`, `key`, `value`, `headers`; bytes that are not UTF-8 as {"base64": ...}).
Progress goes to stderr. `--command-config FILE` / `--property K=V` pass client settings (SASL,
TLS) to librdkafka. Uses confluent-kafka (librdkafka): `pip install 'tidelog[tools]'`.
"""

from __future__ import annotations

import base64
import json
import signal
import sys
import time

from .groups import UsageError, format_ms, parse_instant, reporting_usage_errors
from .produce import add_client_options, client_properties

TS_TYPES = {0: "none", 1: "CreateTime", 2: "LogAppendTime"}
PARTITION_EOF = -191  # librdkafka's _PARTITION_EOF


def show(b: bytes | None) -> str:
    if b is None:
        return "null"
    try:
        return b.decode()
    except UnicodeDecodeError:
        return "0x" + b.hex()


def _json_bytes(b: bytes | None):
    if b is None:
        return None
    try:
        return b.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode()}


def format_text(msg) -> str:
    ttype, ts = msg.timestamp()
    headers = ",".join(f"{k}={show(v)}" for k, v in (msg.headers() or []))
    return (
        f"{msg.topic()}\t{msg.partition()}\t{msg.offset()}\t{format_ms(ts)}\t{TS_TYPES.get(ttype, ttype)}\t"
        f"{show(msg.key())}\t{show(msg.value())}\t{headers}"
    )


def format_json(msg) -> str:
    ttype, ts = msg.timestamp()
    return json.dumps(
        {
            "topic": msg.topic(),
            "partition": msg.partition(),
            "offset": msg.offset(),
            "timestamp": ts,
            "timestamp_type": TS_TYPES.get(ttype, ttype),
            "key": _json_bytes(msg.key()),
            "value": _json_bytes(msg.value()),
            "headers": [[k, _json_bytes(v)] for k, v in (msg.headers() or [])],
        },
        ensure_ascii=False,
    )


def cmd_consume(args) -> int:
    try:
        from confluent_kafka import (
            OFFSET_BEGINNING,
            OFFSET_END,
            OFFSET_STORED,
            Consumer,
            KafkaException,
            TopicPartition,
        )
    except ImportError:
        print("tidelog consume needs confluent-kafka: pip install 'tidelog[tools]'", file=sys.stderr)
        return 2
    if sum(x is not None and x is not False for x in (args.from_time, args.offset, args.from_beginning or None)) > 1:
        raise UsageError("use one of --from-beginning, --from-time, --offset")
    start_ms = parse_instant(args.from_time) if args.from_time else None
    stop_ms = parse_instant(args.to_time) if args.to_time else None
    grouped = args.group is not None
    conf = {
        "bootstrap.servers": args.bootstrap_server,
        "group.id": args.group or "tidelog-consume",
        "enable.auto.commit": grouped,
        "enable.partition.eof": True,
        "broker.address.family": "v4",
        "isolation.level": args.isolation,
        "auto.offset.reset": "earliest" if args.from_beginning else "latest",
    }
    conf.update(client_properties(args))
    fmt = format_json if args.format == "json" else format_text
    consumer = Consumer(conf)
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        md = consumer.list_topics(args.topic, timeout=10)
        tmeta = md.topics.get(args.topic)
        if tmeta is None or tmeta.error is not None:
            print(f"tidelog: topic {args.topic} not found", file=sys.stderr)
            return 1
        parts = sorted(args.partition) if args.partition else sorted(tmeta.partitions)
        ends: dict[int, int] = {}
        if not args.follow:
            for p in parts:
                ends[p] = consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=10)[1]
            if stop_ms is not None:
                for tp in consumer.offsets_for_times(
                    [TopicPartition(args.topic, p, stop_ms) for p in parts], timeout=10
                ):
                    if tp.offset >= 0:
                        ends[tp.partition] = min(ends[tp.partition], tp.offset)
        starts: dict[int, int] = {}
        if start_ms is not None:
            for tp in consumer.offsets_for_times([TopicPartition(args.topic, p, start_ms) for p in parts], timeout=10):
                starts[tp.partition] = tp.offset if tp.offset >= 0 else OFFSET_END
        elif args.offset is not None:
            starts = {p: args.offset for p in parts}
        elif not grouped:
            starts = {p: OFFSET_BEGINNING if args.from_beginning else OFFSET_END for p in parts}
        subscribed = grouped and not starts and not args.partition
        if subscribed:
            consumer.subscribe([args.topic])
        else:
            if grouped and not starts:  # chosen partitions of a group: from its committed offsets
                starts = {p: OFFSET_STORED for p in parts}
            consumer.assign([TopicPartition(args.topic, p, starts[p]) for p in parts])
        return _loop(consumer, args, fmt, parts, ends, stop, KafkaException, subscribed)
    finally:
        consumer.close()


def _loop(consumer, args, fmt, parts, ends, stop, KafkaException, subscribed: bool) -> int:
    done: set[int] = set() if args.follow else {p for p in parts if ends[p] <= 0}
    count = 0
    last_progress = time.monotonic()
    out = sys.stdout

    def finished() -> bool:
        if stop["now"] or (args.max_messages and count >= args.max_messages):
            return True
        if args.follow:
            return False
        if subscribed:  # the group may give this member only some partitions
            assigned = {tp.partition for tp in consumer.assignment()}
            return bool(assigned) and assigned <= done
        return len(done) >= len(parts)

    while not finished():
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == PARTITION_EOF:
                if not args.follow:
                    done.add(msg.partition())
                continue
            raise KafkaException(msg.error())
        p = msg.partition()
        if not args.follow:
            if p in done:
                continue
            if msg.offset() >= ends.get(p, 0):
                done.add(p)
                continue
        print(fmt(msg), file=out, flush=args.follow)  # a follower feeds pipes line by line
        count += 1
        if not args.follow and msg.offset() + 1 >= ends.get(p, 0):
            done.add(p)
        now = time.monotonic()
        if now - last_progress > 0.5:
            last_progress = now
            print(f"\r{count} records, {len(done)}/{len(parts)} partitions done", end="", file=sys.stderr, flush=True)
    out.flush()
    print(f"\r{count} records, {len(done)}/{len(parts)} partitions done", file=sys.stderr)
    if args.group:
        try:
            consumer.commit(asynchronous=False)
        except KafkaException:
            pass  # nothing new to commit
    return 0


def add_parser(sub, default_bootstrap: str) -> None:
    c = sub.add_parser("consume", help="print a topic's records (text or JSON lines)")
    c.add_argument("--bootstrap-server", default=default_bootstrap)
    c.add_argument("--topic", required=True)
    c.add_argument("--group", help="consume as this consumer group (commits what it reads)")
    c.add_argument("--partition", type=int, action="append", metavar="P", help="only these partitions")
    c.add_argument("--from-beginning", action="store_true", help="start at the earliest offset")
    c.add_argument("--from-time", metavar="ISO8601|-PT30M", help="start at the first record at or after this time")
    c.add_argument("--offset", type=int, metavar="N", help="start at offset N")
    c.add_argument("--to-time", metavar="ISO8601|-PT5M", help="stop before the first record at or after this time")
    c.add_argument("--follow", action="store_true", help="keep waiting for new records")
    c.add_argument("--max-messages", type=int, default=0, metavar="N", help="stop after N records")
    c.add_argument(
        "--isolation",
        "--isolation-level",
        dest="isolation",
        default="read_committed",
        choices=("read_committed", "read_uncommitted"),
    )
    c.add_argument("--format", choices=("text", "json"), default="text")
    add_client_options(c)
    c.set_defaults(func=reporting_usage_errors(cmd_consume))
