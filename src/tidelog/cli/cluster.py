"""`tidelog cluster status`: brokers, the controller, how many group and transaction coordinator
partitions (`__consumer_offsets` / `__transaction_state` leaderships) each broker holds,
under-replicated and offline partitions, read from any broker's Metadata (as
kafka-topics --under-replicated-partitions does)."""

from __future__ import annotations

import sys
from typing import Any

from .client import ClientError, KafkaClient


def status(client: KafkaClient) -> dict[str, Any]:
    md = client.request(3, {"topics": None, "allow_auto_topic_creation": False}, highest=9)
    under, offline = [], []
    coordinators: dict[int, list[int]] = {b.node_id: [0, 0] for b in md.brokers}
    for t in md.topics:
        for p in t.partitions:
            if t.name in ("__consumer_offsets", "__transaction_state") and p.leader_id in coordinators:
                coordinators[p.leader_id][0 if t.name == "__consumer_offsets" else 1] += 1
            if p.leader_id < 0:
                offline.append((t.name, p.partition_index))
            elif len(p.isr_nodes) < len(p.replica_nodes):
                under.append((t.name, p.partition_index, list(p.replica_nodes), list(p.isr_nodes)))
    return {
        "brokers": sorted((b.node_id, b.host, b.port, b.rack) for b in md.brokers),
        "controller": md.controller_id,
        "coordinators": coordinators,
        "under_replicated": sorted(under),
        "offline": sorted(offline),
    }


def cmd_status(args: Any) -> int:
    try:
        with KafkaClient(args.bootstrap_server, client_id="tidelog-cluster") as client:
            st = status(client)
    except (OSError, ClientError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    print(f"Controller: {st['controller']}")
    for node, host, port, rack in st["brokers"]:
        groups, txns = st["coordinators"].get(node, (0, 0))
        print(
            f"Broker: {node}\t{host}:{port}"
            + (f"\track {rack}" if rack else "")
            + f"\tCoordinates: {groups} group / {txns} transaction partitions"
        )
    print(f"UnderReplicatedPartitions: {len(st['under_replicated'])}")
    for t, p, replicas, isr in st["under_replicated"]:
        print(f"\t{t}-{p}\tReplicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}")
    print(f"OfflinePartitions: {len(st['offline'])}")
    for t, p in st["offline"]:
        print(f"\t{t}-{p}")
    return 1 if st["offline"] else 0


def cmd_elect_leaders(args: Any) -> int:
    """As kafka-leader-election: ElectLeaders for the named partitions (or all), one line each."""
    parts: list[dict[str, Any]] | None = None
    if args.topic:
        parts = [{"topic": args.topic, "partitions": [args.partition] if args.partition is not None else []}]
        if args.partition is None:
            try:
                with KafkaClient(args.bootstrap_server, client_id="tidelog-cluster") as client:
                    md = client.request(
                        3, {"topics": [{"name": args.topic}], "allow_auto_topic_creation": False}, highest=9
                    )
            except (OSError, ClientError) as e:
                print(f"Error: {e}", file=sys.stderr)
                return 1
            parts[0]["partitions"] = sorted(p.partition_index for t in md.topics for p in t.partitions)
    elif not args.all_topic_partitions:
        raise SystemExit("tidelog cluster elect-leaders: --topic or --all-topic-partitions")
    try:
        with KafkaClient(args.bootstrap_server, client_id="tidelog-cluster") as client:
            r = client.request(
                43,
                {
                    "election_type": 0 if args.election_type == "preferred" else 1,
                    "topic_partitions": parts,
                    "timeout": 60000,
                },
                version=2,
            )
    except (OSError, ClientError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    rc = 0
    for t in r.replica_election_results:
        for pr in t.partition_result:
            code = pr.error_code.value
            if code == 0:
                print(
                    f"Successfully completed leader election ({args.election_type.upper()}) "
                    f"for {t.topic}-{pr.partition_id}"
                )
            elif code == 84:  # ELECTION_NOT_NEEDED
                print(f"Valid replica already elected for {t.topic}-{pr.partition_id}")
            else:
                rc = 1
                print(
                    f"Error completing leader election ({args.election_type.upper()}) for {t.topic}-"
                    f"{pr.partition_id}: {pr.error_code.name} {pr.error_message or ''}".rstrip()
                )
    return rc


def cmd_reassign(args: Any) -> int:
    """In the spirit of kafka-reassign-partitions: --execute a move (or --cancel it), --list those
    in progress; --wait until the named partition's move is complete."""
    try:
        with KafkaClient(args.bootstrap_server, client_id="tidelog-cluster") as client:
            if args.list:
                r = client.request(46, {"timeout": 30000, "topics": None}, version=0)
                for t in r.topics:
                    for p in t.partitions:
                        print(
                            f"{t.name}-{p.partition_index}\tReplicas: {','.join(map(str, p.replicas))}"
                            f"\tAdding: {','.join(map(str, p.adding_replicas))}"
                            f"\tRemoving: {','.join(map(str, p.removing_replicas))}"
                        )
                return 0
            if not args.topic or args.partition is None or (args.replicas is None) == (not args.cancel):
                raise SystemExit("tidelog cluster reassign: --topic, --partition and --replicas (or --cancel)")
            replicas = None if args.cancel else [int(b) for b in args.replicas.split(",")]
            r = client.request(
                45,
                {
                    "timeout": 30000,
                    "topics": [
                        {"name": args.topic, "partitions": [{"partition_index": args.partition, "replicas": replicas}]}
                    ],
                },
                version=0,
            )
            pr = r.responses[0].partitions[0]
            if pr.error_code.value:
                print(f"Error: {pr.error_code.name} {pr.error_message or ''}".rstrip(), file=sys.stderr)
                return 1
            what = "cancelled" if args.cancel else f"started: {args.topic}-{args.partition} -> {replicas}"
            print(f"Reassignment {what}")
            if args.wait and not args.cancel:
                import time

                deadline = time.monotonic() + args.wait
                while time.monotonic() < deadline:
                    r = client.request(
                        46,
                        {"timeout": 30000, "topics": [{"name": args.topic, "partition_indexes": [args.partition]}]},
                        version=0,
                    )
                    if not r.topics:
                        print(f"Reassignment of partition {args.topic}-{args.partition} is complete.")
                        return 0
                    time.sleep(0.2)
                print(f"Reassignment of partition {args.topic}-{args.partition} is still in progress.")
                return 1
            return 0
    except (OSError, ClientError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1


def add_parser(sub: Any, default_bootstrap: str) -> None:
    p = sub.add_parser("cluster", help="cluster status, leader elections")
    csub = p.add_subparsers(dest="action", required=True)
    s = csub.add_parser("status", help="brokers, controller, coordinators, under-replicated/offline partitions")
    s.add_argument("--bootstrap-server", default=default_bootstrap)
    s.set_defaults(func=cmd_status)
    e = csub.add_parser("elect-leaders", help="preferred or unclean leader election (kafka-leader-election)")
    e.add_argument("--bootstrap-server", default=default_bootstrap)
    e.add_argument("--election-type", choices=("preferred", "unclean"), default="preferred")
    e.add_argument("--topic")
    e.add_argument("--partition", type=int)
    e.add_argument("--all-topic-partitions", action="store_true")
    e.set_defaults(func=cmd_elect_leaders)
    r = csub.add_parser("reassign", help="move a partition's replicas (kafka-reassign-partitions)")
    r.add_argument("--bootstrap-server", default=default_bootstrap)
    r.add_argument("--topic")
    r.add_argument("--partition", type=int)
    r.add_argument("--replicas", help="the target brokers, comma separated, preferred first")
    r.add_argument("--cancel", action="store_true", help="cancel the partition's reassignment")
    r.add_argument("--list", action="store_true", help="the reassignments in progress")
    r.add_argument("--wait", type=float, default=0.0, help="seconds to wait for completion")
    r.set_defaults(func=cmd_reassign)
