"""ShareFetch (key 78, v1-2; share groups, KIP-932): a share consumer's fetch. It carries the
acknowledgements of records it was given before (applied first, answered per partition in
`acknowledge_error_code`), opens or continues its share session (`share.sessions`), and acquires
records of the session's partitions for the member (`share.manager`): the answer holds whole
batches and the offset ranges acquired from them, with their delivery counts. With nothing to give
it waits up to `max_wait` for appends or expired locks. Session epoch -1 closes the session after
its acknowledgements (nothing is fetched) and releases what the member still holds.

Error answers as Kafka: a null group or an empty member id INVALID_REQUEST; session errors
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED) at the top
level; an unknown topic id UNKNOWN_TOPIC_ID per partition; a partition this broker does not lead
NOT_LEADER_OR_FOLLOWER (the consumer asks the new leader). A new session reloads the group's idle
share partitions (`SharePartitions.refresh`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...share.partition_types import AckBatch
from ...share.sessions import ShareSessionError
from ...wire.apis import ApiKey
from ..router import control_route
from ._txn_util import millis

if TYPE_CHECKING:
    from kio.schema.share_fetch.v2.request import ShareFetchRequest

    from ...core.group_configs import GroupConfigs
    from ...core.partitions import Partitions
    from ...share.manager import Fetched, SharePartitions
    from ...wire.responses import PartitionData, ShareFetchableTopicResponse, ShareFetchResponse
    from ..connection import RequestContext

TopicIdPartition = tuple[uuid.UUID, int]


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    shares: SharePartitions
    partitions: Partitions
    group_configs: GroupConfigs
    stopping: asyncio.Event


def error_answer(code: E, message: str | None, lock_ms: int = 0) -> ShareFetchResponse:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "acquisition_lock_timeout": lock_ms,
        "responses": [],
        "node_endpoints": [],
    }


def acks_of(topics: object) -> dict[TopicIdPartition, list[AckBatch]]:
    out: dict[TopicIdPartition, list[AckBatch]] = {}
    for t in topics or ():  # type: ignore[attr-defined]  # kio's request topics
        for p in t.partitions:
            batches = getattr(p, "acknowledgement_batches", None) or ()
            if batches and t.topic_id is not None:
                out[(t.topic_id, p.partition_index)] = [
                    AckBatch(b.first_offset, b.last_offset, tuple(int(x) for x in b.acknowledge_types)) for b in batches
                ]
    return out


async def handle(deps: Deps, ctx: RequestContext, request: ShareFetchRequest) -> ShareFetchResponse:
    shares = deps.shares
    group, member = request.group_id, request.member_id
    if group is None:
        return error_answer(E.invalid_request, "Invalid group id in the request.")
    if not member or not member.strip():
        return error_answer(E.invalid_request, "Invalid member id in the request.")
    lock_ms = deps.group_configs.get_int(group, "share.record.lock.duration.ms")
    wanted = [(t.topic_id, p.partition_index) for t in request.topics if t.topic_id is not None for p in t.partitions]
    forgotten = [(t.topic_id, p) for t in request.forgotten_topics_data if t.topic_id is not None for p in t.partitions]
    acks = acks_of(request.topics)
    try:
        context = shares.sessions.context(
            group, member, request.share_session_epoch, wanted, forgotten, bool(acks), ctx.connection
        )
    except ShareSessionError as e:
        return error_answer(e.code, str(e), lock_ms)
    if context.full:
        shares.refresh(group, context.session.partitions)
    ack_errors = await shares.acknowledge(group, member, acks) if acks else {}
    fetched: dict[TopicIdPartition, Fetched] = {}
    if context.final:
        shares.sessions.close(group, member)
        shares.release(group, member)
    elif not getattr(request, "is_renew_ack", False):
        session = list(context.session.partitions)
        fetched = await _fetch(deps, shares, group, member, session, request)
    listed = list(context.session.partitions) if context.full else []
    keys = list(dict.fromkeys([*listed, *ack_errors, *fetched]))
    return {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout": lock_ms,
        "responses": _topics(keys, fetched, ack_errors),
        "node_endpoints": [],
    }


async def _fetch(
    deps: Deps,
    shares: SharePartitions,
    group: str,
    member: str,
    session: list[TopicIdPartition],
    request: ShareFetchRequest,
) -> dict[TopicIdPartition, Fetched]:
    max_records = request.max_records if request.max_records > 0 else 500
    max_bytes = request.max_bytes if request.max_bytes > 0 else 0x7FFF_FFFF
    deadline = time.monotonic() + millis(request.max_wait) / 1000
    while True:
        changed = shares.changed
        fetched = await shares.fetch(group, member, session, max_records, max_bytes)
        remaining = deadline - time.monotonic()
        if any(f.acquired or f.error for f in fetched.values()) or remaining <= 0 or deps.stopping.is_set():
            return fetched
        appended = asyncio.ensure_future(
            deps.partitions.waiters.wait_any(shares.next_offsets(group, session), remaining)
        )
        expired = asyncio.ensure_future(changed.wait())
        done, pending = await asyncio.wait({appended, expired}, return_when=asyncio.FIRST_COMPLETED)
        for t in pending:
            t.cancel()
        if appended in done and not appended.result() and expired not in done:
            return await shares.fetch(group, member, session, max_records, max_bytes)


def _topics(
    keys: list[TopicIdPartition], fetched: dict[TopicIdPartition, Fetched], ack_errors: dict[TopicIdPartition, int]
) -> list[ShareFetchableTopicResponse]:
    by_topic: dict[uuid.UUID, list[PartitionData]] = {}
    for topic_id, p in keys:
        f = fetched.get((topic_id, p))
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": p,
                "error_code": f.error if f is not None else 0,
                "error_message": None,
                "acknowledge_error_code": ack_errors.get((topic_id, p), 0),
                "acknowledge_error_message": None,
                "current_leader": {"leader_id": -1, "leader_epoch": -1},
                "records": (f.records or b"") if f is not None else b"",
                "acquired_records": [
                    {"first_offset": a.first_offset, "last_offset": a.last_offset, "delivery_count": a.delivery_count}
                    for a in (f.acquired if f is not None else ())
                ],
            }
        )
    return [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]


ROUTE = control_route(ApiKey.SHARE_FETCH, 1, 2, handle)
