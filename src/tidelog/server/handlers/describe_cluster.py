"""DescribeCluster (key 60, v0-2): the live brokers (a single node: itself), the controller.

v2 (KIP-1073) asks whether to include fenced brokers and marks each broker's `is_fenced`. Kafka
keeps a registered broker that stopped heartbeating as fenced; a tidelog broker's registration
lives with its etcd lease, so a broker that is not live is not registered at all: every broker
listed is unfenced, and `include_fenced_brokers` has none to add."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from .metadata import ALL_CLUSTER_OPERATIONS, broker_entries

if TYPE_CHECKING:
    from kio.schema.describe_cluster.v1.request import DescribeClusterRequest

    from ...cluster.view import ClusterView
    from ...core.topics import TopicRegistry
    from ...wire.responses import DescribeClusterResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    cluster: ClusterView
    registry: TopicRegistry


BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2  # KIP-919 endpoint types (v1+; v0 asks for brokers)


def handle(deps: Deps, ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    endpoint_type = getattr(request, "endpoint_type", BROKER_ENDPOINT)
    if endpoint_type != BROKER_ENDPOINT:
        # a broker answers only for brokers (Kafka's AuthHelper.computeDescribeClusterResponse):
        # the controllers are asked of a controller; an unknown type is refused
        if endpoint_type == CONTROLLER_ENDPOINT:
            code, msg = (
                E.mismatched_endpoint_type.value,
                ("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"),
            )
        else:
            code, msg = E.unsupported_endpoint_type.value, f"Unsupported endpoint type {endpoint_type}"
        return {
            "throttle_time": 0,
            "error_code": code,
            "error_message": msg,
            "endpoint_type": BROKER_ENDPOINT,
            "cluster_id": "",
            "controller_id": -1,
            "brokers": [],
            "cluster_authorized_operations": -2147483648,
        }
    return {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": BROKER_ENDPOINT,
        "cluster_id": deps.registry.cluster_id,
        "controller_id": deps.cluster.controller_id(),
        "brokers": [
            {"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"], "is_fenced": False}
            for b in broker_entries(deps.cluster, ctx.connection.listener_name)
        ],
        "cluster_authorized_operations": (
            ALL_CLUSTER_OPERATIONS if getattr(request, "include_cluster_authorized_operations", False) else -2147483648
        ),
    }


ROUTE = control_route(ApiKey.DESCRIBE_CLUSTER, 0, 2, handle)
