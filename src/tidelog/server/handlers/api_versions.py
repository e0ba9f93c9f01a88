"""ApiVersions (key 18, v0-3): the advertised ranges are the router's table, nothing else."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    from ...wire.responses import ApiVersionsResponse
    from ..connection import RequestContext
    from ..router import Router


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    router: Router


# what Kafka accepts as a client's software name and version (KIP-511, ApiVersionsRequest.isValid)
SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(deps: Deps, ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    if ctx.api_version >= 3 and not all(
        SOFTWARE_NAME_VERSION.fullmatch(s) for s in (request.client_software_name, request.client_software_version)
    ):
        # v3+ names the client's software: Kafka answers INVALID_REQUEST, listing no API, for a
        # name or version outside the pattern
        return {"error_code": E.invalid_request.value, "api_keys": [], "throttle_time": 0}
    router = deps.router
    return {
        "error_code": 0,
        "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in router.version_ranges()],
        "throttle_time": 0,
    }


ROUTE = control_route(ApiKey.API_VERSIONS, 0, 3, handle)
