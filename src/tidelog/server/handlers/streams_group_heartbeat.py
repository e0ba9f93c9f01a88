"""StreamsGroupHeartbeat (key 88, v0; Kafka Streams' group protocol, KIP-1071): a Kafka Streams
client thread joins (epoch 0, with its application's topology), heartbeats with its epoch and the
tasks it owns, or leaves (-1); the answer carries its epoch, its tasks when they changed, the
partitions each application instance's endpoint serves, and the group's statuses. The protocol is
`groups.streams_protocol`'s; this module translates, and does what Kafka's KafkaApis does around
the coordinator:

- the topology may not name Kafka's internal topics, nor invalid topic names (STREAMS_INVALID_TOPOLOGY),
  and, with an authorizer, every topic it names needs Describe (TOPIC_AUTHORIZATION_FAILED);
- internal topics the coordinator finds missing (repartition, changelog) are created when the
  principal may Create on the cluster or on each of them; otherwise the MISSING_INTERNAL_TOPICS
  status says which it may not create. Creation errors are told in that status while they are
  remembered (twice the heartbeat interval).
(Read on the group is the authorization rule's, `security.rules_streams`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...core.acls import Operation as Op
from ...core.acls import ResourceType as R
from ...core.topics import INTERNAL_TOPICS, topic_name_error
from ...groups.streams_requests import StreamsHeartbeat, error_response
from ...groups.streams_topology import MISSING_INTERNAL_TOPICS, all_topic_names, topology_from_request
from ...wire.apis import ApiKey
from ..router import control_route
from ._txn_util import millis

if TYPE_CHECKING:
    from kio.schema.streams_group_heartbeat.v0.request import StreamsGroupHeartbeatRequest, TaskIds

    from ...groups import GroupCoordinator
    from ...wire.responses import StreamsGroupHeartbeatResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


def _tasks(ids: tuple[TaskIds, ...] | None) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    return None if ids is None else tuple((t.subtopology_id, tuple(t.partitions)) for t in ids)


async def handle(
    deps: Deps, ctx: RequestContext, request: StreamsGroupHeartbeatRequest
) -> StreamsGroupHeartbeatResponse:
    topology = None if request.topology is None else topology_from_request(request.topology)
    session = ctx.connection.security
    authorizer = session is not None and session.security.authorizer is not None
    if topology is not None:
        names = sorted(all_topic_names(topology))
        internal = [n for n in names if n in INTERNAL_TOPICS]
        if internal:
            return error_response(
                E.streams_invalid_topology,
                f"Use of Kafka internal topics {','.join(internal)} in a Kafka Streams topology is prohibited.",
            )
        invalid = [n for n in names if topic_name_error(n)]
        if invalid:
            return error_response(
                E.streams_invalid_topology, f"Topic names {','.join(invalid)} are not valid topic names."
            )
        if authorizer and session is not None and not all(session.allowed(R.TOPIC, n, Op.DESCRIBE) for n in names):
            return error_response(E.topic_authorization_failed)
    peer = ctx.connection.peer
    endpoint = request.user_endpoint
    hb = StreamsHeartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=millis(request.rebalance_timeout),
        topology=topology,
        active=_tasks(request.active_tasks),
        standby=_tasks(request.standby_tasks),
        warmup=_tasks(request.warmup_tasks),
        process_id=request.process_id,
        user_endpoint=None if endpoint is None else (endpoint.host, int(endpoint.port)),
        client_tags=None if request.client_tags is None else tuple((kv.key, kv.value) for kv in request.client_tags),
        task_offsets_sent=request.task_offsets is not None,
        task_end_offsets_sent=request.task_end_offsets is not None,
        shutdown_application=request.shutdown_application,
        client_id=ctx.header.client_id or "",
        client_host=f"/{peer[0]}" if peer else "",
    )
    streams = deps.groups.streams
    result = await streams.heartbeat(hb)
    response = result.response
    if not result.to_create:
        return response
    names = list(result.to_create)
    denied: list[str] = []
    if authorizer and session is not None and not session.allowed(R.CLUSTER, "kafka-cluster", Op.CREATE):
        denied = [n for n in names if not session.allowed(R.TOPIC, n, Op.CREATE)]
    statuses = list(response.get("status") or ())
    missing = next((s for s in statuses if s["status_code"] == MISSING_INTERNAL_TOPICS), None)
    if denied:
        detail = f"Unauthorized to CREATE on topics {', '.join(denied)}."
        if missing is not None:
            missing["status_detail"] = f"{missing['status_detail']}; {detail}"
        else:
            statuses.append({"status_code": MISSING_INTERNAL_TOPICS, "status_detail": detail})
    else:
        streams.create_internal_topics(result.to_create, request.group_id)
        errors = streams.creation_errors(names)
        if errors and missing is not None:
            shown = ", ".join(f"{t} ({e})" for t, e in errors[:3])
            more = f" and {len(errors) - 3} more" if len(errors) > 3 else ""
            missing["status_detail"] = f"{missing['status_detail']}; Creation failed: {shown}{more}."
    return {**response, "status": statuses}


ROUTE = control_route(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 0, handle)
