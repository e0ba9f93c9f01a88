"""DescribeCluster (key 60, v0-1): this node is the whole cluster and its controller."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey

from ..router import control_route
from .metadata import ALL_CLUSTER_OPERATIONS, broker_entries

if TYPE_CHECKING:
    from ..broker import Broker
    from ..connection import RequestContext
    from kio.schema.describe_cluster.v1.request import DescribeClusterRequest



def handle(broker: Broker, ctx: RequestContext, request: DescribeClusterRequest) -> Any:
    return {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": getattr(request, "endpoint_type", 1),
        "cluster_id": broker.registry.cluster_id,
        "controller_id": broker.cluster.controller_id(),
        "brokers": [
            {"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
            for b in broker_entries(broker, ctx.connection.listener_name)
        ],
        "cluster_authorized_operations": (
            ALL_CLUSTER_OPERATIONS if getattr(request, "include_cluster_authorized_operations", False)
            else -2147483648),
    }


ROUTE = control_route(ApiKey.DESCRIBE_CLUSTER, 0, 1, handle)
