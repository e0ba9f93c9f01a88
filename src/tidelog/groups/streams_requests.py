"""A StreamsGroupHeartbeat request as the streams protocol reads it, Kafka 4.3.1's checks of it
(GroupCoordinatorService: the features 4.3.1 does not support yet, then the request's validity),
and the answer of an error."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from .streams_group import Member, TasksTuple
from .streams_records import StreamsGroupTopologyValue
from .streams_topology import ConfiguredTopology, invalid_changelog

if TYPE_CHECKING:
    from ..wire.responses import StreamsGroupHeartbeatResponse

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2


@dataclass(frozen=True, slots=True)
class StreamsHeartbeat:
    """A StreamsGroupHeartbeat request's fields (None: not sent, i.e. unchanged)."""

    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: StreamsGroupTopologyValue | None = None
    active: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    standby: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    warmup: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    task_offsets_sent: bool = False
    task_end_offsets_sent: bool = False
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""

    def owned(self) -> TasksTuple | None:
        """The tasks the member reports owning (None unless all three kinds are sent)."""
        if self.active is None or self.standby is None or self.warmup is None:
            return None

        def tasks(ids: tuple[tuple[str, tuple[int, ...]], ...]) -> dict[str, frozenset[int]]:
            return {s: frozenset(ps) for s, ps in ids}

        return TasksTuple(tasks(self.active), tasks(self.standby), tasks(self.warmup))


class StreamsError(Exception):
    def __init__(self, code: E, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def error_response(code: E, message: str | None = None) -> StreamsGroupHeartbeatResponse:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "member_id": "",
        "member_epoch": 0,
        "heartbeat_interval": 0,
        "acceptable_recovery_lag": 0,
        "task_offset_interval": 0,
        "status": [],
        "active_tasks": None,
        "standby_tasks": None,
        "warmup_tasks": None,
        "endpoint_information_epoch": 0,
        "partitions_by_user_endpoint": None,
    }


def _empty(s: str | None) -> bool:
    return s is not None and not s.strip()


def invalid(hb: StreamsHeartbeat) -> tuple[E, str] | None:
    """Kafka's checks of a request: (error, message), or None when valid."""
    # features Kafka 4.3.1 does not support yet
    if hb.instance_id is not None:
        return E.invalid_request, "Static membership is not yet supported."
    if hb.task_offsets_sent:
        return E.invalid_request, "TaskOffsets are not supported yet."
    if hb.task_end_offsets_sent:
        return E.invalid_request, "TaskEndOffsets are not supported yet."
    if hb.warmup:
        return E.invalid_request, "WarmupTasks are not supported yet."
    if hb.topology is not None and any(s.source_topic_regex for s in hb.topology.subtopologies):
        return E.invalid_request, "Regular expressions for source topics are not supported yet."
    # the request's validity
    if _empty(hb.member_id):
        return E.invalid_request, "MemberId can't be empty."
    if _empty(hb.group_id):
        return E.invalid_request, "GroupId can't be empty."
    if _empty(hb.instance_id):
        return E.invalid_request, "InstanceId can't be empty."
    if _empty(hb.rack_id):
        return E.invalid_request, "RackId can't be empty."
    if hb.member_epoch == JOIN_EPOCH:
        if hb.rebalance_timeout_ms == -1:
            return E.invalid_request, "RebalanceTimeoutMs must be provided in first request."
        for name, tasks in (("ActiveTasks", hb.active), ("StandbyTasks", hb.standby), ("WarmupTasks", hb.warmup)):
            if tasks:
                return E.invalid_request, f"{name} must be empty when (re-)joining."
        if hb.topology is None:
            return E.invalid_request, "Topology must be non-null when (re-)joining."
        if bad := invalid_changelog(hb.topology):
            return E.streams_invalid_topology, bad
    elif hb.member_epoch == LEAVE_STATIC_EPOCH:
        if hb.instance_id is None:
            return E.invalid_request, "InstanceId can't be null."
    elif hb.member_epoch < LEAVE_STATIC_EPOCH:
        return E.invalid_request, f"MemberEpoch is {hb.member_epoch}, but must be greater than or equal to -2."
    kinds = (hb.active, hb.standby, hb.warmup)
    if any(k is not None for k in kinds) and any(k is None for k in kinds):
        return E.invalid_request, "If one task-type is non-null, all must be non-null."
    if hb.member_epoch != JOIN_EPOCH and hb.topology is not None:
        return E.invalid_request, "Topology can only be provided when (re-)joining."
    return None


# ---- a heartbeat applied to its member ------------------------------------------------------------
def apply_heartbeat(member: Member, hb: StreamsHeartbeat) -> Member:
    """The member with what this heartbeat sets (a field not sent keeps its value)."""
    return replace(
        member,
        rack_id=hb.rack_id if hb.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=hb.rebalance_timeout_ms if hb.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        topology_epoch=hb.topology.epoch if hb.topology is not None else member.topology_epoch,
        client_id=hb.client_id,
        client_host=hb.client_host,
        process_id=hb.process_id if hb.process_id is not None else member.process_id,
        client_tags=tuple(sorted(dict(hb.client_tags).items())) if hb.client_tags is not None else member.client_tags,
        user_endpoint=hb.user_endpoint if hb.user_endpoint is not None else member.user_endpoint,
    )


def _contained(owned: tuple[tuple[str, tuple[int, ...]], ...] | None, assigned: dict[str, Any]) -> bool:
    if owned is None:
        return False
    return all(s in assigned and all(p in assigned[s] for p in ps) for s, ps in owned)


def check_epoch(member: Member, hb: StreamsHeartbeat) -> None:
    epoch = hb.member_epoch
    if epoch == JOIN_EPOCH:
        return
    if epoch > member.member_epoch:
        raise StreamsError(
            E.fenced_member_epoch,
            f"The streams group member has a greater member epoch ({epoch}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if epoch < member.member_epoch and (
        epoch != member.previous_member_epoch
        or not _contained(hb.active, member.assigned.active)
        or not _contained(hb.standby, member.assigned.standby)
        or not _contained(hb.warmup, member.assigned.warmup)
    ):
        raise StreamsError(
            E.fenced_member_epoch,
            f"The streams group member has a smaller member epoch ({epoch}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )


def check_tasks(configured: ConfiguredTopology, tasks: tuple[tuple[str, tuple[int, ...]], ...] | None) -> None:
    """Kafka's check that owned tasks exist in the configured topology (INVALID_REQUEST)."""
    if not tasks or configured.subtopologies is None:
        return
    for sid, partitions in tasks:
        sub = configured.subtopologies.get(sid)
        if sub is None:
            raise StreamsError(E.invalid_request, f"Subtopology {sid} does not exist in the topology.")
        for p in partitions:
            if p < 0 or p >= sub.tasks:
                raise StreamsError(
                    E.invalid_request,
                    f"Task {p} for subtopology {sid} is invalid. Number of tasks for this subtopology: {sub.tasks}",
                )
