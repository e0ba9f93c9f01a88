"""Routes for the hot-path APIs, whose codecs are tidelog's own (`tidelog.wire.produce` etc.)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from .router import Route


def hot_route(module: ModuleType, handle: Callable[..., Any]) -> Route:
    first_flexible = module.FIRST_FLEXIBLE_VERSION

    def decode(frame: bytes | bytearray, offset: int, version: int) -> Any:
        return module.decode_request(memoryview(frame)[offset:], version)

    return Route(
        module.API_KEY,
        module.MIN_VERSION,
        module.MAX_VERSION,
        handle,
        decode=decode,
        encode=module.encode_response,
        is_flexible=lambda version: version >= first_flexible,
    )
