"""A ConsumerGroupHeartbeat request as the consumer protocol reads it, Kafka's checks of it, and the
answer of an error."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from .consumer_group import JOIN_EPOCH, LEAVE_EPOCH, LEAVE_STATIC_EPOCH

if TYPE_CHECKING:
    from ..wire.responses import ConsumerGroupHeartbeatResponse


class GroupError(Exception):
    def __init__(self, code: E, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A ConsumerGroupHeartbeat request's fields (None: not sent in this heartbeat)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


def error_response(code: E, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval": 0,
        "assignment": None,
    }


def invalid(hb: Heartbeat, assignors: list[str]) -> tuple[E, str] | None:
    """Kafka's checks of a request (GroupCoordinatorService): (error, message), or None when valid."""
    if hb.version >= 1 or hb.member_epoch > 0 or hb.member_epoch == LEAVE_EPOCH:
        if not hb.member_id.strip():
            return E.invalid_request, "MemberId can't be empty."
    if not hb.group_id.strip():
        return E.invalid_request, "GroupId can't be empty."
    if hb.instance_id is not None and not hb.instance_id.strip():
        return E.invalid_request, "InstanceId can't be empty."
    if hb.rack_id is not None and not hb.rack_id.strip():
        return E.invalid_request, "RackId can't be empty."
    if hb.member_epoch == JOIN_EPOCH:
        if hb.rebalance_timeout_ms == -1:
            return E.invalid_request, "RebalanceTimeoutMs must be provided in first request."
        if hb.owned is None or hb.owned:
            return E.invalid_request, "TopicPartitions must be empty when (re-)joining."
        if hb.subscribed_topic_names is None and hb.subscribed_topic_regex is None:
            return (
                E.invalid_request,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            )
    elif hb.member_epoch == LEAVE_STATIC_EPOCH:
        if hb.instance_id is None:
            return E.invalid_request, "InstanceId can't be null."
    elif hb.member_epoch < LEAVE_STATIC_EPOCH:
        return E.invalid_request, "MemberEpoch is invalid."
    if hb.server_assignor is not None and hb.server_assignor not in assignors:
        return (
            E.unsupported_assignor,
            f"ServerAssignor {hb.server_assignor} is not supported. Supported assignors: {', '.join(assignors)}.",
        )
    if hb.subscribed_topic_regex:
        try:
            re.compile(hb.subscribed_topic_regex)
        except re.error as e:
            return (
                E.invalid_regular_expression,
                f"SubscribedTopicRegex `{hb.subscribed_topic_regex}` is not a valid regular expression: {e}.",
            )
    return None
