"""DescribeUserScramCredentials (key 50, v0): mechanisms and iterations per user, never secrets."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...core.scram import MECHANISMS
from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.describe_user_scram_credentials.v0.request import DescribeUserScramCredentialsRequest

    from ...wire.responses import DescribeUserScramCredentialsResponse, DescribeUserScramCredentialsResult
    from ..connection import RequestContext
    from ..security import Security


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    security: Security


def handle(
    deps: Deps, ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    store = deps.security.credentials

    def info(user: str) -> DescribeUserScramCredentialsResult:
        mechs = store.users.get(user)
        if not mechs:
            return {
                "user": user,
                "error_code": E.resource_not_found,
                "error_message": f"Attempt to describe a user credential that does not exist: {user}",
                "credential_infos": [],
            }
        return {
            "user": user,
            "error_code": E.none,
            "error_message": None,
            "credential_infos": [
                {"mechanism": MECHANISMS[m][0], "iterations": c.iterations} for m, c in sorted(mechs.items())
            ],
        }

    # each user answered once, in the order first named; one named more than once is described
    # not at all but refused, DUPLICATE_RESOURCE (Kafka's ScramImage.describe)
    names = Counter(u.name for u in request.users) if request.users else Counter(sorted(store.users))
    results: list[DescribeUserScramCredentialsResult] = []
    for name, n in names.items():
        if n > 1:
            results.append(
                {
                    "user": name,
                    "error_code": E.duplicate_resource,
                    "error_message": "Cannot describe SCRAM credentials for the same user twice "
                    f"in a single request: {name}",
                    "credential_infos": [],
                }
            )
            continue
        results.append(info(name))
    return {"throttle_time": 0, "error_code": E.none, "error_message": None, "results": results}


ROUTE = control_route(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, handle)
