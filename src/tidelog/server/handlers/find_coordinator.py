"""FindCoordinator (key 10, v0-6): the coordinator of a group (key type 0), a transactional id
(key type 1) or, v6+, a share partition's state (key type 2, KIP-932: "<group>:<topic id>:<partition>",
asked by brokers; Kafka's authorizer wants ClusterAction for it). A single node coordinates every
key. In a cluster the answer is the leader of the key's partition of `__consumer_offsets` /
`__transaction_state` / `__share_group_state` (created here on first use, see
cluster/coordinators.py); COORDINATOR_NOT_AVAILABLE while it has no live leader. A share key before v6, or one
Kafka's SharePartitionKey would not parse, is INVALID_REQUEST. v4 answers a batch of keys; v5
only lets the coordinator answer TRANSACTION_ABORTABLE elsewhere (KIP-890), nothing changes here."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...core.topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC, STATE_TOPIC
from ...groups.records import partition_for as group_partition
from ...share.state_store import coordinator_partition, parse_coordinator_key
from ...txn.records import partition_for as txn_partition
from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer
from .metadata import broker_entries

if TYPE_CHECKING:
    from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest

    from ...cluster.view import ClusterView
    from ...groups import GroupCoordinator
    from ...wire.responses import Coordinator, FindCoordinatorResponse, MetadataResponseBroker
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    cluster: ClusterView
    groups: GroupCoordinator


GROUP, TRANSACTION, SHARE = 0, 1, 2  # key types
KEY_TYPES = (GROUP, TRANSACTION, SHARE)
TOPIC_OF = {GROUP: OFFSETS_TOPIC, TRANSACTION: STATE_TOPIC, SHARE: SHARE_STATE_TOPIC}  # created on first use
CREATED_WAIT_S = 5.0


def handle(deps: Deps, ctx: RequestContext, request: FindCoordinatorRequest) -> Answer[FindCoordinatorResponse]:
    key_type = getattr(request, "key_type", 0)
    keys = list(request.coordinator_keys) if ctx.api_version >= 4 else [getattr(request, "key")]  # v0-3: one key
    if key_type in TOPIC_OF and not deps.cluster.coordinators_topic_exists(TOPIC_OF[key_type]):
        return _after_creating(deps, ctx, keys, key_type)
    return _respond(deps, ctx, keys, key_type)


async def _after_creating(deps: Deps, ctx: RequestContext, keys: list[str], key_type: int) -> FindCoordinatorResponse:
    code = await deps.cluster.ensure_coordinators_topic(TOPIC_OF[key_type])
    if code:
        return _respond(deps, ctx, keys, key_type, code)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CREATED_WAIT_S
    while loop.time() < deadline and any(_coordinator(deps, key_type, k) < 0 for k in keys):
        await asyncio.sleep(0.05)  # the new partitions' first leaders are being elected
    return _respond(deps, ctx, keys, key_type)


def _respond(
    deps: Deps, ctx: RequestContext, keys: list[str], key_type: int, failed: int = 0
) -> FindCoordinatorResponse:
    nodes = {b["node_id"]: b for b in broker_entries(deps.cluster, ctx.connection.listener_name)}

    def answer(key: str) -> Coordinator:
        if key_type not in KEY_TYPES:
            return _error(key, E.invalid_request.value, f"unknown key type {key_type}")
        if key_type == SHARE:
            return _share(deps, ctx, key, nodes)
        if failed:
            return _error(key, failed, "the coordinators' topic cannot be created yet")
        node = nodes.get(_coordinator(deps, key_type, key))
        if node is None:
            return _error(key, E.coordinator_not_available.value, "no live coordinator")
        if key_type == 0 and not deps.groups.loaded:
            return _error(key, E.coordinator_not_available.value, "loading")
        return {
            "key": key,
            "error_code": 0,
            "error_message": None,
            "node_id": node["node_id"],
            "host": node["host"],
            "port": node["port"],
        }

    if ctx.api_version >= 4:
        return {"throttle_time": 0, "coordinators": [answer(k) for k in keys]}
    one = answer(keys[0])  # v0-3 answer one key, at the top level, without naming it
    return {
        "throttle_time": 0,
        "error_code": one["error_code"],
        "error_message": one.get("error_message"),
        "node_id": one["node_id"],
        "host": one["host"],
        "port": one["port"],
    }


def _share(deps: Deps, ctx: RequestContext, key: str, nodes: dict[int, MetadataResponseBroker]) -> Coordinator:
    """A share coordinator key: the leader of its partition of `__share_group_state`."""
    if ctx.api_version < 6:
        return _error(key, E.invalid_request.value, "share coordinator keys need FindCoordinator v6")
    if parse_coordinator_key(key) is None:
        return _error(key, E.invalid_request.value, f"invalid share coordinator key {key!r}")
    node = nodes.get(_coordinator(deps, SHARE, key)) if deps.groups.share is not None else None
    if node is None:
        return _error(key, E.coordinator_not_available.value, "no live share coordinator")
    return {
        "key": key,
        "error_code": 0,
        "error_message": None,
        "node_id": node["node_id"],
        "host": node["host"],
        "port": node["port"],
    }


def _coordinator(deps: Deps, key_type: int, key: str) -> int:
    """The broker coordinating `key`: the leader of its partition of the coordinators' topic."""
    if key_type == GROUP:
        return deps.cluster.coordinator(OFFSETS_TOPIC, lambda n: group_partition(key, n))
    if key_type == SHARE:
        share_key = parse_coordinator_key(key)
        if share_key is None:
            return -1
        return deps.cluster.coordinator(SHARE_STATE_TOPIC, lambda n: coordinator_partition(share_key, n))
    return deps.cluster.coordinator(STATE_TOPIC, lambda n: txn_partition(key, n))


def _error(key: str, code: int, message: str) -> Coordinator:
    return {"key": key, "error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


ROUTE = control_route(ApiKey.FIND_COORDINATOR, 0, 6, handle)
