"""ElectLeaders (key 43, v0-2): elect the preferred replica (election type 0; v0 knows only that) or,
for a partition without a live leader, any live replica (type 1, unclean). `topic_partitions`
null means every partition. On a single node every partition is led by its only replica:
ELECTION_NOT_NEEDED. In a cluster the new leader is written to etcd by compare-and-swap at the next
leader epoch (cluster/elections.py) and the answer waits until this broker's copy shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer

if TYPE_CHECKING:
    from kio.schema.elect_leaders.v2.request import ElectLeadersRequest

    from ...cluster.view import ClusterView
    from ...core.topics import TopicRegistry
    from ...wire.responses import ElectLeadersResponse, PartitionResult
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    cluster: ClusterView
    registry: TopicRegistry


PREFERRED, UNCLEAN = 0, 1


def handle(deps: Deps, ctx: RequestContext, request: ElectLeadersRequest) -> Answer[ElectLeadersResponse]:
    election = getattr(request, "election_type", PREFERRED)
    if request.topic_partitions is None:
        wanted = [
            (t.name, p)
            for t in sorted(deps.registry.topics.values(), key=lambda t: t.name)
            for p in range(t.partitions)
        ]
    else:
        wanted = [(tp.topic, int(p)) for tp in request.topic_partitions for p in tp.partitions]
    if election not in (PREFERRED, UNCLEAN):
        return _response(
            ctx,
            [(t, p, E.invalid_request.value, f"unknown election type {election}") for t, p in wanted],
            E.invalid_request.value,
        )
    # every partition (null): those already led by their preferred replica are left out of the
    # answer, as Kafka's ReplicationControlManager.electLeaders does
    every = request.topic_partitions is None
    return _elect(deps, ctx, wanted, election, every)


async def _elect(
    deps: Deps, ctx: RequestContext, wanted: list[tuple[str, int]], election: int, every: bool
) -> ElectLeadersResponse:
    """One partition at a time, through the cluster view (a single node: never needed)."""
    timeout_s = 60.0
    out: list[tuple[str, int, int, str | None]] = []
    for t, p in wanted:
        code, msg = await deps.cluster.elect(t, p, election == UNCLEAN, timeout_s)
        out.append((t, p, code, msg))
    return _response(ctx, _needed(out) if every else out)


def _needed(results: list[tuple[str, int, int, str | None]]) -> list[tuple[str, int, int, str | None]]:
    return [r for r in results if r[2] != E.election_not_needed.value]


def _response(
    ctx: RequestContext, results: list[tuple[str, int, int, str | None]], top: int = 0
) -> ElectLeadersResponse:
    by_topic: dict[str, list[PartitionResult]] = {}
    for t, p, code, msg in results:
        by_topic.setdefault(t, []).append({"partition_id": p, "error_code": code, "error_message": msg})
    body: ElectLeadersResponse = {
        "throttle_time": 0,
        "replica_election_results": [{"topic": t, "partition_result": parts} for t, parts in by_topic.items()],
    }
    if ctx.api_version >= 1:
        body["error_code"] = top
    return body


ROUTE = control_route(ApiKey.ELECT_LEADERS, 0, 2, handle)
