"""ApiVersions (key 18, v0-3): the advertised ranges are the router's table, nothing else."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey

from ..router import control_route

if TYPE_CHECKING:
    from ..broker import Broker
    from ..connection import RequestContext
    from kio.schema.api_versions.v3.request import ApiVersionsRequest



def handle(broker: Broker, ctx: RequestContext, request: ApiVersionsRequest) -> Any:
    router = broker.router
    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in router.version_ranges()
        ],
        "throttle_time": 0,
    }


ROUTE = control_route(ApiKey.API_VERSIONS, 0, 3, handle)
