"""The timers of a consumer group's members, one asyncio timer handle per (kind, group, member):

    session    the member's session (`group.consumer.session.timeout.ms`, or a classic member's own
               session timeout), re-armed by each heartbeat
    rebalance  a member of the consumer protocol revoking partitions, at the epoch it revokes at
    join       a classic member told to rejoin (REBALANCE_IN_PROGRESS) that has not yet (its
               rebalance timeout; armed only if absent)
    sync       a classic member that joined and has not sent its SyncGroup yet (its rebalance timeout)

Any of them firing calls `expired(kind, group_id, member_id, epoch)` once; the owner fences the
member. An idle broker does no work: nothing polls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

SESSION, REBALANCE, JOIN, SYNC = "session", "rebalance", "join", "sync"
KINDS = (SESSION, REBALANCE, JOIN, SYNC)
MAX_TIMEOUT_MS = 2**31 - 1

Key = tuple[str, str]  # (group id, member id)


class MemberTimers:
    def __init__(self, expired: Callable[[str, str, str, int | None], None]) -> None:
        self._expired = expired
        self._timers: dict[str, dict[Key, asyncio.TimerHandle]] = {k: {} for k in KINDS}

    def arm(
        self,
        kind: str,
        group_id: str,
        member_id: str,
        timeout_ms: int,
        epoch: int | None = None,
        if_absent: bool = False,
    ) -> None:
        """(Re)arm the member's timer of `kind`; `if_absent`: leave a running one as it is."""
        timers, key = self._timers[kind], (group_id, member_id)
        if if_absent and key in timers:
            return
        self.cancel(kind, group_id, member_id)
        delay = max(0, min(timeout_ms, MAX_TIMEOUT_MS)) / 1000
        timers[key] = asyncio.get_running_loop().call_later(delay, self._fire, kind, key, epoch)

    def _fire(self, kind: str, key: Key, epoch: int | None) -> None:
        self._timers[kind].pop(key, None)
        self._expired(kind, key[0], key[1], epoch)

    def cancel(self, kind: str, group_id: str, member_id: str) -> None:
        t = self._timers[kind].pop((group_id, member_id), None)
        if t is not None:
            t.cancel()

    def cancel_member(self, group_id: str, member_id: str) -> None:
        for kind in KINDS:
            self.cancel(kind, group_id, member_id)

    def stop(self) -> None:
        for timers in self._timers.values():
            for t in timers.values():
                t.cancel()
            timers.clear()
