"""DeleteAcls (key 31, v1-3): remove the bindings matching each filter, and say which."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer, answered_after
from .describe_acls import acl_filter, filter_error

if TYPE_CHECKING:
    from kio.schema.delete_acls.v3.request import DeleteAclsRequest

    from ...wire.responses import DeleteAclsFilterResult, DeleteAclsResponse
    from ..connection import RequestContext
    from ..security import Security
    from ..security.changes import SecurityChanges


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    security: Security
    security_changes: SecurityChanges


def handle(deps: Deps, ctx: RequestContext, request: DeleteAclsRequest) -> Answer[DeleteAclsResponse]:
    security = deps.security
    if security.authorizer is None:
        return {
            "throttle_time": 0,
            "filter_results": [
                {"error_code": E.security_disabled, "error_message": "No Authorizer is configured", "matching_acls": []}
                for _ in request.filters
            ],
        }
    flts = [acl_filter(f) for f in request.filters]
    valid = [flt for flt in flts if not filter_error(flt)]
    per_filter, removal = deps.security_changes.remove_acls(valid)  # a cluster's: through etcd
    gone_in_order = iter(per_filter)  # one list per valid filter, in request order
    results: list[DeleteAclsFilterResult] = []
    for flt in flts:
        if filter_error(flt):
            results.append({"error_code": E.invalid_request, "error_message": filter_error(flt), "matching_acls": []})
            continue
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
                    for b in next(gone_in_order)
                ],
            }
        )
    return answered_after({"throttle_time": 0, "filter_results": results}, removal)


ROUTE = control_route(ApiKey.DELETE_ACLS, 1, 3, handle)
