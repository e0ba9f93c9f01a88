"""Share sessions (KIP-932): what a share consumer fetches from this broker, kept between its
ShareFetch requests so each request names only what changed, as Kafka's ShareSessionCache.

A session is keyed by (group, member) and has an epoch:

    request epoch   session                      effect
    0 (initial)     any (replaced)               a new session with the request's partitions; next epoch 1;
                                                 acknowledgements in it: INVALID_REQUEST
    -1 (final)      must exist                   acknowledgements applied, then the session is closed
                                                 (its member's acquired records released); no fetch
    n > 0           must exist, epoch n          partitions added / forgotten; next epoch n + 1 (after
                                                 2^31 - 1 comes 1)
    n > 0           none                         SHARE_SESSION_NOT_FOUND
    n > 0           epoch m != n                 INVALID_SHARE_SESSION_EPOCH

At most `max_sessions` sessions (SHARE_SESSION_LIMIT_REACHED past it, for a new key); a session is
also closed when the connection that made it closes. Memory: one entry per (topic id, partition)
of each session.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode as E

INITIAL, FINAL = 0, -1
TopicIdPartition = tuple[uuid.UUID, int]


class ShareSessionError(Exception):
    def __init__(self, code: E, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int  # the epoch the next request must carry
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)  # in insertion order
    connection: object | None = None


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


@dataclass(frozen=True, slots=True)
class Context:
    """What a ShareFetch works on: the session's partitions after this request's changes, whether
    the response lists all of them (a new session), and whether the session ends with it."""

    session: ShareSession
    full: bool
    final: bool


class ShareSessions:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def context(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        wanted: Iterable[TopicIdPartition],
        forgotten: Iterable[TopicIdPartition],
        acknowledging: bool,
        connection: object | None = None,
    ) -> Context:
        key = (group_id, member_id)
        if epoch == FINAL:
            session = self.sessions.get(key)
            if session is None:
                raise ShareSessionError(E.share_session_not_found, f"No share session for {group_id}/{member_id}.")
            return Context(session, False, True)
        if epoch == INITIAL:
            if acknowledging:
                raise ShareSessionError(E.invalid_request, "Acknowledge data present in Initial Fetch Request.")
            if key not in self.sessions and len(self.sessions) >= self.max_sessions:
                raise ShareSessionError(E.share_session_limit_reached, "The share session limit is reached.")
            session = ShareSession(group_id, member_id, 1, dict.fromkeys(wanted), connection)
            self.sessions[key] = session
            return Context(session, True, False)
        session = self.sessions.get(key)
        if session is None:
            raise ShareSessionError(E.share_session_not_found, f"No share session for {group_id}/{member_id}.")
        if epoch != session.epoch:
            raise ShareSessionError(
                E.invalid_share_session_epoch, f"Expected share session epoch {session.epoch}, got {epoch}."
            )
        for tp in forgotten:
            session.partitions.pop(tp, None)
        for tp in wanted:
            session.partitions.setdefault(tp, None)
        session.epoch = next_epoch(epoch)
        return Context(session, False, False)

    def acknowledge_context(self, group_id: str, member_id: str, epoch: int) -> Context:
        """ShareAcknowledge: epoch 0 is refused (no session to acknowledge in); -1 closes; n > 0
        must be the session's epoch, and moves it on."""
        if epoch == INITIAL:
            raise ShareSessionError(E.invalid_share_session_epoch, "ShareAcknowledge cannot start a share session.")
        return self.context(group_id, member_id, epoch, (), (), True)

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def of_connection(self, connection: object) -> list[ShareSession]:
        return [s for s in self.sessions.values() if s.connection is connection]
