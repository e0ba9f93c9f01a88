"""`tidelog cluster status`: brokers, the controller, the group/transaction coordinator, under-replicated
and offline partitions, read from any broker's Metadata and FindCoordinator (as
kafka-topics --under-replicated-partitions does)."""

from __future__ import annotations

import sys
from typing import Any

from .client import ClientError, KafkaClient


def status(client: KafkaClient) -> dict[str, Any]:
    md = client.request(3, {"topics": None, "allow_auto_topic_creation": False}, highest=9)
    under, offline = [], []
    for t in md.topics:
        for p in t.partitions:
            if p.leader_id < 0:
                offline.append((t.name, p.partition_index))
            elif len(p.isr_nodes) < len(p.replica_nodes):
                under.append((t.name, p.partition_index, list(p.replica_nodes), list(p.isr_nodes)))
    coord = client.request(10, {"key": "tidelog-cluster-status", "key_type": 0}, version=1)
    return {"brokers": sorted((b.node_id, b.host, b.port, b.rack) for b in md.brokers),
            "controller": md.controller_id, "coordinator": coord.node_id if coord.error_code.value == 0 else -1, "under_replicated": sorted(under), "offline": sorted(offline)}


def cmd_status(args: Any) -> int:
    try:
        with KafkaClient(args.bootstrap_server, client_id="tidelog-cluster") as client:
            st = status(client)
    except (OSError, ClientError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    print(f"Controller: {st['controller']}")
    print(f"Coordinator: {st['coordinator']}\t(groups and transactions)")
    for node, host, port, rack in st["brokers"]:
        print(f"Broker: {node}\t{host}:{port}" + (f"\track {rack}" if rack else ""))
    print(f"UnderReplicatedPartitions: {len(st['under_replicated'])}")
    for t, p, replicas, isr in st["under_replicated"]:
        print(f"\t{t}-{p}\tReplicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}")
    print(f"OfflinePartitions: {len(st['offline'])}")
    for t, p in st["offline"]:
        print(f"\t{t}-{p}")
    return 1 if st["offline"] else 0


def add_parser(sub: Any, default_bootstrap: str) -> None:
    p = sub.add_parser("cluster", help="cluster status: brokers, controller, under-replicated/offline partitions")
    csub = p.add_subparsers(dest="action", required=True)
    s = csub.add_parser("status")
    s.add_argument("--bootstrap-server", default=default_bootstrap)
    s.set_defaults(func=cmd_status)
