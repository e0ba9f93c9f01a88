"""DeleteAcls (key 31, v1-3): remove the bindings matching each filter, and say which."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from .describe_acls import acl_filter, filter_error

if TYPE_CHECKING:
    from kio.schema.delete_acls.v3.request import DeleteAclsRequest

    from ...cluster.security_state import SharedSecurity
    from ...cluster.view import ClusterView
    from ..connection import RequestContext
    from ..security import Security


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    cluster: ClusterView
    security: Security


def handle(deps: Deps, ctx: RequestContext, request: DeleteAclsRequest) -> Any:
    security = deps.security
    if security.authorizer is None:
        return {
            "throttle_time": 0,
            "filter_results": [
                {"error_code": E.security_disabled, "error_message": "No Authorizer is configured", "matching_acls": []}
                for _ in request.filters
            ],
        }
    results: list[dict[str, Any]] = []
    removed: list[Any] = []
    for f in request.filters:
        flt = acl_filter(f)
        if filter_error(flt):
            results.append({"error_code": E.invalid_request, "error_message": filter_error(flt), "matching_acls": []})
            continue
        shared = deps.cluster.shared_security
        if shared is not None:  # cluster: removed through etcd, from every broker
            gone = [b for b in security.acls.find(flt) if b not in removed]
            removed.extend(gone)
        else:
            gone = security.acls.remove(flt)
        results.append(
            {
                "error_code": E.none,
                "error_message": None,
                "matching_acls": [
                    {
                        "error_code": E.none,
                        "error_message": None,
                        "resource_type": b.resource_type,
                        "resource_name": b.resource_name,
                        "pattern_type": b.pattern_type,
                        "principal": b.principal,
                        "host": b.host,
                        "operation": b.operation,
                        "permission_type": b.permission,
                    }
                    for b in gone
                ],
            }
        )
    response = {"throttle_time": 0, "filter_results": results}
    if removed:
        # `removed` is filled only where the cluster shares its security (a cluster node's, set for its life)
        return _published(cast("SharedSecurity", shared).remove_acls(removed), response)
    return response


async def _published(write: Awaitable[None], response: dict[str, Any]) -> dict[str, Any]:
    await write
    return response


ROUTE = control_route(ApiKey.DELETE_ACLS, 1, 3, handle)
