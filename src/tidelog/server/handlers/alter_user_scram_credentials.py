"""AlterUserScramCredentials (key 51, v0): upsert (salted password) or delete SCRAM credentials.

The client sends salt, iterations and SaltedPassword = Hi(password, salt, iterations); the broker
keeps StoredKey and ServerKey derived from it (core/scram.py), persisted in the data directory.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode as E

from ...core.scram import BY_NUMBER, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential
from ...wire.apis import ApiKey
from ..router import control_route
from ._answer import Answer, answered_after

if TYPE_CHECKING:
    from kio.schema.alter_user_scram_credentials.v0.request import AlterUserScramCredentialsRequest

    from ...wire.responses import AlterUserScramCredentialsResponse, AlterUserScramCredentialsResult
    from ..connection import RequestContext
    from ..security import Security
    from ..security.changes import SecurityChanges


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    security: Security
    security_changes: SecurityChanges


def handle(
    deps: Deps, ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> Answer[AlterUserScramCredentialsResponse]:
    store = deps.security.credentials
    results: dict[str, AlterUserScramCredentialsResult] = {}
    ops: tuple[Any, ...] = (*request.deletions, *request.upsertions)  # both carry name and mechanism
    counts = Counter((op.name, op.mechanism) for op in ops)
    users_in_order = list(dict.fromkeys(op.name for op in ops))

    def fail(user: str, code: E, message: str) -> None:
        results.setdefault(user, {"user": user, "error_code": code, "error_message": message})

    for op in ops:
        if not op.name:
            fail(op.name, E.unacceptable_credential, "Username must not be empty")
        elif op.mechanism not in BY_NUMBER:
            fail(op.name, E.unsupported_sasl_mechanism, f"Unknown SCRAM mechanism {op.mechanism}")
        elif counts[(op.name, op.mechanism)] > 1:
            fail(op.name, E.duplicate_resource, "A user credential cannot be altered twice in the same request")
    for op in request.deletions:
        if op.name not in results and store.get(op.name, BY_NUMBER[op.mechanism]) is None:
            fail(op.name, E.resource_not_found, f"Attempt to delete a user credential that does not exist: {op.name}")
    for op in request.upsertions:
        if op.name in results:
            continue
        if not MIN_ITERATIONS <= op.iterations <= MAX_ITERATIONS:
            fail(
                op.name,
                E.unacceptable_credential,
                f"Iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, got {op.iterations}",
            )
        elif not op.salt or not op.salted_password:
            fail(op.name, E.unacceptable_credential, "Salt and salted password must not be empty")
    response: AlterUserScramCredentialsResponse = {
        "throttle_time": 0,
        "results": [results.get(u, {"user": u, "error_code": E.none, "error_message": None}) for u in users_in_order],
    }
    deletions = [(op.name, BY_NUMBER[op.mechanism]) for op in request.deletions if op.name not in results]
    upsertions = [
        (
            op.name,
            BY_NUMBER[op.mechanism],
            ScramCredential.from_salted(
                BY_NUMBER[op.mechanism], bytes(op.salt), op.iterations, bytes(op.salted_password)
            ),
        )
        for op in request.upsertions
        if op.name not in results
    ]
    if deletions or upsertions:  # a cluster's: through etcd, to every broker
        return answered_after(response, deps.security_changes.change_credentials(deletions, upsertions))
    return response


ROUTE = control_route(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, handle)
