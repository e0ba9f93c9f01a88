"""DescribeAcls (key 29, v1-3): bindings matching a filter, grouped by resource pattern."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...core.acls import AclFilter
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.describe_acls.v3.request import DescribeAclsRequest

    from ...wire.responses import AclDescription, DescribeAclsResponse
    from ..connection import RequestContext
    from ..security import Security


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    security: Security


def acl_filter(f: Any) -> AclFilter:
    """An AclFilter from a DescribeAcls request or a DeleteAcls filter (their field names)."""
    return AclFilter(
        resource_type=int(f.resource_type_filter),
        resource_name=f.resource_name_filter,
        pattern_type=int(getattr(f, "pattern_type_filter", 3)),
        principal=f.principal_filter,
        host=f.host_filter,
        operation=int(f.operation),
        permission=int(f.permission_type),
    )


def filter_error(f: AclFilter) -> str | None:
    """Why a filter is invalid (UNKNOWN in any enum field), as Kafka refuses it; None when valid."""
    for field in ("resource_type", "pattern_type", "operation", "permission"):
        if getattr(f, field) == 0:
            return f"{field} UNKNOWN is not a valid filter"
    return None


def handle(deps: Deps, ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    security = deps.security
    if security.authorizer is None:
        return {
            "throttle_time": 0,
            "error_code": E.security_disabled,
            "error_message": "No Authorizer is configured",
            "resources": [],
        }
    flt = acl_filter(request)
    if filter_error(flt):
        return {
            "throttle_time": 0,
            "error_code": E.invalid_request,
            "error_message": filter_error(flt),
            "resources": [],
        }
    groups: dict[tuple[int, str, int], list[AclDescription]] = {}
    for b in security.acls.find(flt):
        groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
            {"principal": b.principal, "host": b.host, "operation": b.operation, "permission_type": b.permission}
        )
    return {
        "throttle_time": 0,
        "error_code": E.none,
        "error_message": None,
        "resources": [
            {"resource_type": rt, "resource_name": name, "pattern_type": pt, "acls": acls}
            for (rt, name, pt), acls in groups.items()
        ],
    }


ROUTE = control_route(ApiKey.DESCRIBE_ACLS, 1, 3, handle)
