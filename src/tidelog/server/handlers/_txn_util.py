"""Small helpers shared by the transaction API handlers."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ...wire.errors import COORDINATOR_NOT_AVAILABLE, INVALID_PRODUCER_EPOCH, PRODUCER_FENCED

log = logging.getLogger("tidelog.txn")
T = TypeVar("T")


def fenced_for(code: int, version: int, first_version_with_fenced: int) -> int:
    """PRODUCER_FENCED (KIP-588) is sent only to versions that know it; older ones get
    INVALID_PRODUCER_EPOCH, which those clients treat as fencing."""
    if code == PRODUCER_FENCED and version < first_version_with_fenced:
        return INVALID_PRODUCER_EPOCH
    return code


def millis(value: datetime.timedelta | int) -> int:
    """kio reads duration fields as timedelta."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


async def guarded(what: str, coro: Awaitable[T], failure: Callable[[int], T]) -> T:
    """Await a coordinator call; a failed state write answers COORDINATOR_NOT_AVAILABLE
    (retriable) through `failure(code)` instead of closing the connection."""
    try:
        return await coro
    except Exception:
        log.exception("%s failed", what)
        return failure(COORDINATOR_NOT_AVAILABLE)
