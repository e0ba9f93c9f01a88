"""DescribeUserScramCredentials (key 50, v0): mechanisms and iterations per user, never secrets."""

from kio.schema.errors import ErrorCode as E

from ..router import control_route
from ..security.scram import MECHANISMS

API_KEY = 50


def register(broker) -> None:
    store = broker.security.credentials

    def info(user: str) -> dict:
        mechs = store.users.get(user)
        if not mechs:
            return {"user": user, "error_code": E.resource_not_found, "error_message": f"Attempt to describe a user credential that does not exist: {user}", "credential_infos": []}
        return {"user": user, "error_code": E.none, "error_message": None, "credential_infos": [
            {"mechanism": MECHANISMS[m][0], "iterations": c.iterations} for m, c in sorted(mechs.items())]}

    def handle(ctx, request):
        names = [u.name for u in request.users] if request.users else sorted(store.users)
        seen, results = set(), []
        for name in names:
            if name in seen:
                results.append({"user": name, "error_code": E.duplicate_resource,
                                "error_message": f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}",
                                "credential_infos": []})
                continue
            seen.add(name)
            results.append(info(name))
        return {"throttle_time": 0, "error_code": E.none, "error_message": None, "results": results}

    broker.router.add(control_route(API_KEY, 0, 0, handle))
