"""The answer of a handler whose changes complete later (a cluster: once etcd has them)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeAlias, TypeVar

R = TypeVar("R")


async def answered_after(response: R, *writes: Awaitable[object]) -> R:
    """`response`, once every one of `writes` is done. A write that fails fails the request (the
    connection answers it as Kafka answers an unexpected error), since its outcome is unknown."""
    await asyncio.gather(*writes)
    return response


Answer: TypeAlias = R | Awaitable[R]
"""What a handler returns: its response, or an awaitable of it when a change must complete first."""
