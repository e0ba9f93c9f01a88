"""CreateAcls (key 30, v1-3): add bindings; each creation is answered on its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...core.acls import AclBinding
from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer, answered_after

if TYPE_CHECKING:
    from kio.schema.create_acls.v3.request import CreateAclsRequest

    from ...wire.responses import AclCreationResult, CreateAclsResponse
    from ..connection import RequestContext
    from ..security import Security
    from ..security.changes import SecurityChanges


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    security: Security
    security_changes: SecurityChanges


def handle(deps: Deps, ctx: RequestContext, request: CreateAclsRequest) -> Answer[CreateAclsResponse]:
    security = deps.security
    if security.authorizer is None:
        return {
            "throttle_time": 0,
            "results": [
                {"error_code": E.security_disabled, "error_message": "No Authorizer is configured"}
                for _ in request.creations
            ],
        }
    results: list[AclCreationResult] = []
    valid: list[AclBinding] = []
    for c in request.creations:
        b = AclBinding(
            int(c.resource_type),
            c.resource_name,
            int(getattr(c, "resource_pattern_type", 3)),
            c.principal,
            c.host,
            int(c.operation),
            int(c.permission_type),
        )
        reason = b.invalid_reason()
        if reason:
            results.append({"error_code": E.invalid_request, "error_message": reason})
        else:
            valid.append(b)
            results.append({"error_code": E.none, "error_message": None})
    response: CreateAclsResponse = {"throttle_time": 0, "results": results}
    if valid:  # a cluster's: through etcd, to every broker
        return answered_after(response, deps.security_changes.add_acls(valid))
    return response


ROUTE = control_route(ApiKey.CREATE_ACLS, 1, 3, handle)
