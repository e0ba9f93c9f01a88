"""ApiVersions (key 18, v0-4): the advertised ranges are the router's table, nothing else; v3+
also name the feature levels (KIP-584, `core.features`): the supported ranges, the finalized
levels and their epoch. Below v4, as Kafka (KAFKA-17492), a supported feature whose lowest level
is 0 is left out (older clients fail to read it); a finalized level of 0 is never listed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.api_versions.v4.request import ApiVersionsRequest

    from ...core.features import Features
    from ...wire.responses import ApiVersionsResponse
    from ..connection import RequestContext
    from ..router import Router


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    router: Router
    features: Features


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
    features = deps.features
    return {
        "error_code": 0,
        "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in router.version_ranges()],
        "throttle_time": 0,
        "supported_features": [
            {"name": name, "min_version": lo, "max_version": hi}
            for name, (lo, hi) in features.supported.items()
            if ctx.api_version >= 4 or lo > 0
        ],
        "finalized_features": [
            {"name": name, "min_version_level": level, "max_version_level": level}
            for name, level in features.finalized.items()
            if level > 0
        ],
        "finalized_features_epoch": features.epoch,
    }


ROUTE = control_route(ApiKey.API_VERSIONS, 0, 4, handle)
