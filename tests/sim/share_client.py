"""A share consumer for the simulation (KIP-932), as a real one works: it joins its share group at
the group coordinator (ShareGroupHeartbeat), fetches the records of its assigned partitions from
each partition's leader in a share session per broker (ShareFetch), and acknowledges them
(ShareAcknowledge). A leader that moved (NOT_LEADER_OR_FOLLOWER, a lost connection, a session the
broker no longer has) makes it look the leaders up again and open new sessions; what it held
there is released by the broker (its locks expire or the new leader never had them).

It keeps no history of its own: the scripted tests and the checker say what must hold."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode as E

from tidelog.log.records import decode_batches

from .clients import Client, ClientError

ACCEPT, RELEASE, REJECT = 1, 2, 3
SHARE_FETCH_VERSION = 2
SHARE_ACK_VERSION = 2
HEARTBEAT_VERSION = 1


@dataclass(frozen=True)
class Delivery:
    partition: int
    offset: int
    value: str
    delivery_count: int


class ShareConsumer:
    def __init__(self, client: Client, group: str, topic: str) -> None:
        self.c = client
        self.group = group
        self.topic = topic
        self.member_id = str(uuid.UUID(int=client.rng.getrandbits(128)))
        self.epoch = 0
        self.topic_id: uuid.UUID | None = None
        self.assigned: set[int] = set()
        self.sessions: dict[int, int] = {}  # leader broker -> the share session epoch to send next

    # ---- membership -----------------------------------------------------------------------------
    async def _coordinator(self) -> tuple[str, int]:
        resp = await self.c.any_broker(10, 3, {"key": self.group, "key_type": 0})
        if resp.error_code.value or resp.node_id < 0:
            raise ClientError(f"find coordinator: error {resp.error_code.value}")
        return resp.host, resp.port

    async def heartbeat(self) -> int:
        """One heartbeat (joining first); its error code. The assignment is kept."""
        try:
            addr = await self._coordinator()
            resp = await self.c.call(
                addr,
                76,
                HEARTBEAT_VERSION,
                {
                    "group_id": self.group,
                    "member_id": self.member_id,
                    "member_epoch": self.epoch,
                    "rack_id": None,
                    "subscribed_topic_names": [self.topic] if self.epoch == 0 else None,
                },
            )
        except ClientError:
            return E.coordinator_not_available.value
        code = int(resp.error_code.value)
        if code == E.fenced_member_epoch.value or code == E.unknown_member_id.value:
            self.epoch = 0
        if code:
            return code
        self.epoch = resp.member_epoch
        if resp.assignment is not None:
            self.assigned = {p for tp in resp.assignment.topic_partitions for p in tp.partitions}
            ids = {tp.topic_id for tp in resp.assignment.topic_partitions}
            if ids:
                self.topic_id = next(iter(ids))
        return 0

    async def join(self, timeout_s: float = 30.0) -> None:
        """Heartbeat until some partition is assigned."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            if await self.heartbeat() == 0 and self.assigned:
                return
            await asyncio.sleep(0.3)
        raise AssertionError(f"{self.member_id} got no assignment")

    # ---- fetching ------------------------------------------------------------------------------
    async def fetch(
        self, max_records: int = 100, acks: dict[int, list[tuple[int, int, int]]] | None = None
    ) -> tuple[list[Delivery], dict[int, int]]:
        """One ShareFetch to the leader of each assigned partition (acknowledgements of records of
        that partition piggy-backed); (deliveries, partition -> error, acknowledgement errors
        included). Errors make it look the leaders up again."""
        await self.c.refresh([self.topic])
        out: list[Delivery] = []
        errors: dict[int, int] = {}
        by_leader: dict[int, list[int]] = {}
        for p in sorted(self.assigned | set(acks or ())):
            by_leader.setdefault(self.c.leaders.get((self.topic, p), -1), []).append(p)
        for leader, parts in by_leader.items():
            addr = self.c.brokers.get(leader)
            if addr is None or self.topic_id is None:
                errors.update({p: E.leader_not_available.value for p in parts})
                continue
            epoch = self.sessions.get(leader, 0)
            ack_now = {p: (acks or {}).get(p, []) for p in parts} if epoch > 0 else {}
            if acks and epoch == 0 and any((acks or {}).get(p) for p in parts):
                errors.update({p: E.invalid_share_session_epoch.value for p in parts if (acks or {}).get(p)})
            data: dict[str, Any] = {
                "group_id": self.group,
                "member_id": self.member_id,
                "share_session_epoch": epoch,
                "max_wait": 0,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "max_records": max_records,
                "batch_size": max_records,
                "topics": [
                    {
                        "topic_id": self.topic_id,
                        "partitions": [
                            {
                                "partition_index": p,
                                "acknowledgement_batches": [
                                    {"first_offset": a, "last_offset": b, "acknowledge_types": [t]}
                                    for a, b, t in ack_now.get(p, [])
                                ],
                            }
                            for p in parts
                        ],
                    }
                ],
                "forgotten_topics_data": [],
            }
            try:
                resp = await self.c.call(addr, 78, SHARE_FETCH_VERSION, data, lane=("share", self.member_id))
            except ClientError:
                self.sessions.pop(leader, None)
                errors.update({p: E.request_timed_out.value for p in parts})
                continue
            if resp.error_code.value:
                self.sessions.pop(leader, None)
                errors.update({p: int(resp.error_code.value) for p in parts})
                continue
            self.sessions[leader] = epoch + 1
            for t in resp.responses:
                for pr in t.partitions:
                    code = _code(pr.error_code) or _code(pr.acknowledge_error_code)
                    if code:
                        errors[pr.partition_index] = code
                        if _code(pr.error_code) == E.not_leader_or_follower.value:
                            self.sessions.pop(leader, None)
                    out += _deliveries(pr)
        return out, errors

    async def leave(self) -> None:
        try:
            addr = await self._coordinator()
            await self.c.call(
                addr,
                76,
                HEARTBEAT_VERSION,
                {
                    "group_id": self.group,
                    "member_id": self.member_id,
                    "member_epoch": -1,
                    "rack_id": None,
                    "subscribed_topic_names": None,
                },
            )
        except ClientError:
            pass


def _code(value: Any) -> int:
    return int(getattr(value, "value", value))


def _deliveries(pr: Any) -> list[Delivery]:
    ranges = [(a.first_offset, a.last_offset, a.delivery_count) for a in pr.acquired_records]
    if not ranges or not pr.records:
        return []
    out = []
    for b in decode_batches(bytes(pr.records)):
        for r in b.records:
            for first, last, count in ranges:
                if first <= r.offset <= last:
                    out.append(Delivery(pr.partition_index, r.offset, (r.value or b"").decode(), count))
    return out
