"""`tidelog topics create|list|describe|delete|alter-config`, like kafka-topics/kafka-configs."""

from __future__ import annotations

import sys

from kio.schema.errors import ErrorCode

from .client import ClientError, KafkaClient


def _err(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)


def _kv(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"tidelog: --config expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def cmd_create(args, client: KafkaClient) -> int:
    resp = client.request(
        19,
        {
            "topics": [
                {
                    "name": args.topic,
                    "num_partitions": args.partitions,
                    "replication_factor": args.replication_factor,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in _kv(args.config).items()],
                }
            ],
            "timeout": 30000,
            "validate_only": False,
        },
        highest=5,
    )
    t = resp.topics[0]
    if t.error_code.value:
        print(f"Error creating topic {args.topic}: {_err(t.error_code.value)}: {t.error_message}", file=sys.stderr)
        return 1
    print(f"Created topic {args.topic}.")
    return 0


def _metadata(client: KafkaClient, topics: list[str] | None):
    req = {
        "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    return client.request(3, req, highest=12)


def cmd_list(args, client: KafkaClient) -> int:
    for t in sorted(_metadata(client, None).topics, key=lambda t: t.name or ""):
        if args.exclude_internal and t.is_internal:
            continue
        print(t.name)
    return 0


def cmd_describe(args, client: KafkaClient) -> int:
    md = _metadata(client, [args.topic] if args.topic else None)
    rc = 0
    for t in sorted(md.topics, key=lambda t: t.name or ""):
        if t.error_code.value:
            print(f"Error: topic {t.name}: {_err(t.error_code.value)}", file=sys.stderr)
            rc = 1
            continue
        cfg = client.request(
            32,
            {
                "resources": [{"resource_type": 2, "resource_name": t.name, "configuration_keys": None}],
                "include_synonyms": False,
                "include_documentation": False,
            },
            highest=4,
        )
        overrides = [f"{c.name}={c.value}" for c in cfg.results[0].configs if c.config_source == 1]
        rf = max((len(p.replica_nodes) for p in t.partitions), default=1)
        print(
            f"Topic: {t.name}\tTopicId: {t.topic_id}\tPartitionCount: {len(t.partitions)}\tReplicationFactor: {rf}\t"
            f"Configs: {','.join(overrides)}"
        )
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            print(
                f"\tTopic: {t.name}\tPartition: {p.partition_index}\tLeader: {p.leader_id}\t"
                f"Replicas: {','.join(map(str, p.replica_nodes))}\tIsr: {','.join(map(str, p.isr_nodes))}"
                + (f"\tOffline: {','.join(map(str, p.offline_replicas))}" if p.offline_replicas else "")
            )
    return rc


def cmd_delete(args, client: KafkaClient) -> int:
    resp = client.request(
        20,
        {"topic_names": [args.topic], "topics": [{"name": args.topic, "topic_id": None}], "timeout": 30000},
        highest=5,
    )
    r = resp.responses[0]
    if r.error_code.value:
        print(f"Error deleting topic {args.topic}: {_err(r.error_code.value)}", file=sys.stderr)
        return 1
    print(f"Deleted topic {args.topic}.")
    return 0


def cmd_alter_config(args, client: KafkaClient) -> int:
    configs = [{"name": k, "config_operation": 0, "value": v} for k, v in _kv(args.add_config).items()]
    configs += [{"name": k, "config_operation": 1, "value": None} for k in args.delete_config]
    resp = client.request(
        44,
        {"resources": [{"resource_type": 2, "resource_name": args.topic, "configs": configs}], "validate_only": False},
        highest=1,
    )
    r = resp.responses[0]
    if r.error_code.value:
        print(f"Error altering topic {args.topic}: {_err(r.error_code.value)}: {r.error_message}", file=sys.stderr)
        return 1
    print(f"Completed updating config for topic {args.topic}.")
    return 0


def add_parser(sub, default_bootstrap: str) -> None:
    p = sub.add_parser("topics", help="create, list, describe, delete topics and alter their configs")
    tsub = p.add_subparsers(dest="action", required=True)

    def common(sp):
        sp.add_argument("--bootstrap-server", default=default_bootstrap)
        return sp

    c = common(tsub.add_parser("create"))
    c.add_argument("--topic", required=True)
    c.add_argument("--partitions", type=int, default=-1)
    c.add_argument("--replication-factor", type=int, default=-1)
    c.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    c.set_defaults(run=cmd_create)
    lst = common(tsub.add_parser("list"))
    lst.add_argument("--exclude-internal", action="store_true")
    lst.set_defaults(run=cmd_list)
    d = common(tsub.add_parser("describe"))
    d.add_argument("--topic")
    d.set_defaults(run=cmd_describe)
    dl = common(tsub.add_parser("delete"))
    dl.add_argument("--topic", required=True)
    dl.set_defaults(run=cmd_delete)
    a = common(tsub.add_parser("alter-config"))
    a.add_argument("--topic", required=True)
    a.add_argument("--add-config", action="append", default=[], metavar="KEY=VALUE")
    a.add_argument("--delete-config", action="append", default=[], metavar="KEY")
    a.set_defaults(run=cmd_alter_config)
    p.set_defaults(func=_run)


def _run(args) -> int:
    try:
        with KafkaClient(args.bootstrap_server) as client:
            return args.run(args, client)
    except (OSError, ClientError) as e:
        print(f"tidelog: cannot talk to {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
