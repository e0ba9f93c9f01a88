"""The request router: one `Route` per API key, registered by the handler modules.

ApiVersions is answered from this table, so what is advertised is exactly what is routed.
A route knows its version range, how to tell flexible versions (for the request header), how
to decode a request body and encode a response body, and the handler to call. Handlers return a
response (plain data or a typed response), an awaitable of one, or `NO_RESPONSE` (Produce acks=0).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..wire import control


class _NoResponse(enum.Enum):
    """The type of `NO_RESPONSE`: one value, so that mypy can tell it from a response."""

    NO_RESPONSE = 0


NoResponse = Literal[_NoResponse.NO_RESPONSE]
NO_RESPONSE: Final = _NoResponse.NO_RESPONSE


@dataclass(slots=True)
class Route:
    api_key: int
    min_version: int
    max_version: int
    handle: Callable[..., Any]
    decode: Callable[[bytes | bytearray, int, int], Any]
    encode: Callable[[Any, int], bytes | list[Any]]
    is_flexible: Callable[[int], bool]
    # the handler behind the router's stages (metrics); set by `Router.seal`, called by the
    # connection (or by the authorization stage, which runs before it)
    pipeline: Callable[..., Any] | None = None
    control: bool = False  # messages are kio schemas (not one of the hot-path codecs)

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def control_route(api_key: int, min_version: int, max_version: int, handle: Callable[..., Any]) -> Route:
    """A route whose messages are kio schemas (control plane).

    Schemas are imported on first use, not here: importing every version of every API at
    start-up cost a fifth of the broker's start time. `missing_schemas` checks them (tests)."""
    return Route(
        api_key,
        min_version,
        max_version,
        handle,
        decode=lambda frame, offset, version: control.decode_request(
            api_key, version, frame if type(frame) is bytes else bytes(frame), offset
        ),
        encode=lambda data, version: control.encode_response(api_key, version, data),
        is_flexible=lambda version: bool(control.flexible(api_key, version)),
        control=True,
    )


def missing_schemas(router: Router) -> list[tuple[int, int]]:
    """(api_key, version) pairs routed through kio with no schema (must be empty)."""
    missing = []
    for r in router.routes.values():
        if not r.control:
            continue
        missing += [
            (r.api_key, v) for v in range(r.min_version, r.max_version + 1) if control.flexible(r.api_key, v) is None
        ]
    return missing


class Router:
    def __init__(self) -> None:
        self.routes: dict[int, Route] = {}

    def add(self, route: Route) -> None:
        if route.api_key in self.routes:
            raise ValueError(f"api {route.api_key} routed twice")
        route.pipeline = route.handle
        self.routes[route.api_key] = route

    def seal(self, *stages: Callable[[int, Callable[..., Any]], Callable[..., Any]]) -> None:
        """Build each route's pipeline: the handler wrapped by `stages`, the first outermost.
        The request pipeline is: authorization (per connection, `security.rules.apply`), then
        these stages, then the handler."""
        for route in self.routes.values():
            handle = route.handle
            for stage in reversed(stages):
                handle = stage(route.api_key, handle)
            route.pipeline = handle

    def get(self, api_key: int) -> Route | None:
        return self.routes.get(api_key)

    def version_ranges(self) -> list[tuple[int, int, int]]:
        return sorted((r.api_key, r.min_version, r.max_version) for r in self.routes.values())
