"""`tidelog produce`: records from stdin lines, like kafka-console-producer.

    tidelog produce --topic T [--bootstrap-server HOST:PORT] [--partition N]
                    [--header K=V ...] [--timestamp MS|ISO8601] [--parse-headers] [--parse-timestamp]
                    [--transactional-id ID [--transaction-size N] [--abort]]
                    [--acks all|1|0] [--compression none|gzip|snappy|lz4|zstd] [--idempotence]
                    [--batch-size BYTES] [--linger-ms MS] [--command-config FILE] [--property K=V ...]

Each line is `key<TAB>value`; a line without a tab is a value with a null key. With
`--parse-timestamp` the line starts with `timestamp<TAB>` (epoch ms or ISO-8601); with
`--parse-headers` it then has `k1:v1,k2:v2<TAB>` (an empty field for none). `--header` and
`--timestamp` apply to every record. With `--transactional-id` the records go in transactions of
`--transaction-size` records (default: one transaction for everything), committed, or aborted with
`--abort`. Progress and the final count go to stderr; the exit status is 1 if a record failed.
`--command-config FILE` (key=value lines) and `--property K=V` pass client settings to
librdkafka, e.g. `security.protocol=SASL_SSL` for a secured listener.

Uses confluent-kafka (librdkafka): `pip install 'tidelog[tools]'`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from .groups import UsageError, reporting_usage_errors  # one usage error for every client command


@dataclass
class Line:
    key: bytes | None
    value: bytes
    timestamp: int | None = None
    headers: list[tuple[str, bytes]] = field(default_factory=list)


def parse_timestamp(text: str) -> int:
    s = text.strip()
    if s.lstrip("-").isdigit():
        return int(s)
    from .groups import parse_instant

    return parse_instant(s)


def parse_headers(text: str) -> list[tuple[str, bytes]]:
    out = []
    for item in [x for x in text.split(",") if x]:
        k, sep, v = item.partition(":")
        if not sep:
            raise UsageError(f"header {item!r} is not key:value")
        out.append((k, v.encode()))
    return out


def parse_line(raw: str, sep: str, with_ts: bool, with_headers: bool) -> Line:
    """One input line (without its newline) -> the record it describes."""
    rest = raw
    ts = None
    headers: list[tuple[str, bytes]] = []
    if with_ts:
        first, found, rest = rest.partition("\t")
        if not found:
            raise UsageError(f"expected timestamp<TAB>... in {raw!r}")
        ts = parse_timestamp(first)
    if with_headers:
        first, found, rest = rest.partition("\t")
        if not found:
            raise UsageError(f"expected headers<TAB>... in {raw!r}")
        headers = parse_headers(first)
    key, found, value = rest.partition(sep)
    if not found:
        return Line(None, rest.encode(), ts, headers)
    return Line(key.encode(), value.encode(), ts, headers)


def cmd_produce(args) -> int:
    try:
        from confluent_kafka import KafkaException, Producer
    except ImportError:
        print("tidelog produce needs confluent-kafka: pip install 'tidelog[tools]'", file=sys.stderr)
        return 2
    conf = {
        "bootstrap.servers": args.bootstrap_server,
        "acks": args.acks,
        "linger.ms": args.linger_ms,
        "batch.size": args.batch_size,
        "compression.type": args.compression,
        "broker.address.family": "v4",
        "enable.idempotence": args.idempotence or bool(args.transactional_id),
    }
    if args.transactional_id:
        conf["transactional.id"] = args.transactional_id
    conf.update(client_properties(args))
    common_headers = parse_headers(",".join(h.replace("=", ":", 1) for h in args.header))
    common_ts = parse_timestamp(args.timestamp) if args.timestamp else None
    producer = Producer(conf)
    state = {"delivered": 0, "failed": 0}

    def delivered(err, _msg) -> None:
        if err is None:
            state["delivered"] += 1
        else:
            state["failed"] += 1
            if state["failed"] <= 5:
                print(f"tidelog: delivery failed: {err}", file=sys.stderr)

    txn = bool(args.transactional_id)
    in_txn = 0
    sent = 0
    last_progress = time.monotonic()
    try:
        if txn:
            producer.init_transactions(30)
        for raw in sys.stdin:
            raw = raw.rstrip("\n").rstrip("\r")
            if not raw and args.skip_empty:
                continue
            line = parse_line(raw, args.key_separator, args.parse_timestamp, args.parse_headers)
            if txn and in_txn == 0:
                producer.begin_transaction()
            kw = {}
            if args.partition is not None:
                kw["partition"] = args.partition
            ts = line.timestamp if line.timestamp is not None else common_ts
            if ts is not None:
                kw["timestamp"] = ts
            headers: list[tuple[str, str | bytes | None]] = [*common_headers, *line.headers]
            while True:
                try:
                    producer.produce(
                        args.topic, value=line.value, key=line.key, headers=headers or None, on_delivery=delivered, **kw
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
            sent += 1
            in_txn += 1
            if txn and args.transaction_size and in_txn >= args.transaction_size:
                _end(producer, args.abort)
                in_txn = 0
            now = time.monotonic()
            if now - last_progress > 1.0:
                last_progress = now
                print(f"\r{sent} records sent, {state['delivered']} delivered", end="", file=sys.stderr, flush=True)
        if txn and in_txn:
            _end(producer, args.abort)
        producer.flush(60)
    except KafkaException as e:
        print(f"\ntidelog: {e}", file=sys.stderr)
        return 1
    ended = "aborted" if txn and args.abort else "delivered"
    print(f"\r{sent} records sent, {state['delivered']} {ended}, {state['failed']} failed", file=sys.stderr)
    return 1 if state["failed"] or state["delivered"] != sent else 0


def _end(producer, abort: bool) -> None:
    if abort:
        producer.flush(60)
        producer.abort_transaction(60)
    else:
        producer.commit_transaction(60)


def add_parser(sub, default_bootstrap: str) -> None:
    p = sub.add_parser("produce", help="send stdin lines (key<TAB>value) as records")
    p.add_argument("--bootstrap-server", default=default_bootstrap)
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, help="all records to this partition (default: by key)")
    p.add_argument("--key-separator", default="\t", help="between key and value (default TAB)")
    p.add_argument("--header", action="append", default=[], metavar="KEY=VALUE", help="on every record")
    p.add_argument("--timestamp", metavar="MS|ISO8601", help="CreateTime of every record")
    p.add_argument("--parse-timestamp", action="store_true", help="lines start with timestamp<TAB>")
    p.add_argument("--parse-headers", action="store_true", help="lines have k1:v1,k2:v2<TAB> before the key")
    p.add_argument("--skip-empty", action="store_true", help="ignore empty lines")
    p.add_argument("--transactional-id", help="produce in transactions with this id")
    p.add_argument(
        "--transaction-size",
        type=int,
        default=0,
        metavar="N",
        help="records per transaction (default: one transaction)",
    )
    p.add_argument("--abort", action="store_true", help="abort the transactions instead of committing")
    p.add_argument("--acks", default="all", choices=("all", "-1", "1", "0"))
    p.add_argument("--compression", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    p.add_argument("--batch-size", type=int, default=1_000_000, metavar="BYTES", help="largest batch (default 1000000)")
    p.add_argument("--linger-ms", type=int, default=5, help="wait this long to fill a batch (default 5)")
    p.add_argument("--idempotence", action="store_true", help="idempotent producer (implied by transactions)")
    add_client_options(p)
    p.set_defaults(func=reporting_usage_errors(cmd_produce))


def client_properties(args) -> dict[str, str]:
    """librdkafka settings from `--command-config FILE` (key=value lines) then `--property K=V`,
    for secured listeners (`security.protocol`, `sasl.mechanism`, `sasl.username`, ...)."""
    out: dict[str, str] = {}
    if getattr(args, "command_config", None):
        from ..core.config import read_properties

        out.update(read_properties(args.command_config))
    for item in getattr(args, "property", None) or []:
        k, sep, v = item.partition("=")
        if not sep:
            raise UsageError(f"--property {item!r} is not KEY=VALUE")
        out[k.strip()] = v
    return out


def add_client_options(p) -> None:
    p.add_argument("--command-config", metavar="FILE", help="client properties file (e.g. SASL/TLS settings)")
    p.add_argument(
        "--property", action="append", default=[], metavar="KEY=VALUE", help="a librdkafka client property (repeatable)"
    )
