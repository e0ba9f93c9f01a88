"""`/security/acls`: the registry's own ACLs (SUBJECT and REGISTRY bindings, `core.acls`),
administered over the registry's REST API as Redpanda's registry does (`tidelog schemas acl`
calls it). Served only where ACLs on subjects are on (see `access`); `access` asks DESCRIBE on
the Kafka cluster resource to list and ALTER to change them.

An ACL is a JSON object:

    {"principal": "User:alice", "host": "*", "resource_type": "SUBJECT", "resource": "orders-",
     "pattern_type": "PREFIXED", "operation": "WRITE", "permission": "ALLOW"}

`resource_type` is SUBJECT or REGISTRY (whose `resource` is "" and may be left out);
`pattern_type` LITERAL (the default; `*` names every subject) or PREFIXED (PREFIX, Redpanda's
spelling, too); `host` defaults to `*`; operations are ALL, READ, WRITE, DELETE, DESCRIBE,
DESCRIBE_CONFIGS, ALTER, ALTER_CONFIGS; permissions ALLOW and DENY.

- GET lists the ACLs matching its query parameters (the same names; one left out matches every
  value, `pattern_type` may also be ANY or MATCH: every binding that applies to `resource`).
- POST adds a list of ACLs (all or none: one invalid refuses the request, 400) and answers them.
- DELETE removes what each filter of a list matches (objects of the same fields, each optional)
  and answers the ACLs removed.

The bindings live in the broker's ACL store beside Kafka's: a single node's change is made at
the call (`tidelog-acls.json`), a cluster's goes through etcd to every broker (`AclChanges` is
the broker's `server.security.changes.SecurityChanges`) and is answered once this broker has it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol

from ..core.acls import REGISTRY_NAME, REGISTRY_TYPES, AclBinding, AclFilter, AclStore, Operation, Permission
from ..core.acls import PatternType as P
from ..core.acls import ResourceType as R
from .errors import RegistryError

BAD_REQUEST = 400
FIELDS = ("principal", "host", "resource_type", "resource", "pattern_type", "operation", "permission")
_TYPES = {"SUBJECT": R.SUBJECT, "REGISTRY": R.REGISTRY}
_PATTERNS = {"LITERAL": P.LITERAL, "PREFIXED": P.PREFIXED, "PREFIX": P.PREFIXED, "ANY": P.ANY, "MATCH": P.MATCH}
_PERMISSIONS = {"ALLOW": Permission.ALLOW, "DENY": Permission.DENY}


class AclChanges(Protocol):
    """Where ACL changes go (`server.security.changes.SecurityChanges`)."""

    def add_acls(self, bindings: list[AclBinding]) -> Awaitable[None]: ...

    def remove_acls(self, filters: Sequence[AclFilter]) -> tuple[list[list[AclBinding]], Awaitable[None]]: ...


class RegistryAcls:
    def __init__(self, store: AclStore, changes: AclChanges) -> None:
        """`store`: the broker's bindings (read); `changes`: where a change is made."""
        self.store = store
        self.changes = changes

    def find(self, query: dict[str, str]) -> list[dict[str, str]]:
        found: list[AclBinding] = []
        for flt in _filters(query):
            found += self.store.find(flt)
        return [to_json(b) for b in found]

    async def create(self, body: Any) -> list[dict[str, str]]:
        bindings = [_binding(entry) for entry in _entries(body)]
        await self.changes.add_acls(bindings)
        return [to_json(b) for b in bindings]

    async def delete(self, body: Any) -> list[dict[str, str]]:
        filters = [flt for entry in _entries(body) for flt in _filters(entry)]
        per_filter, removal = self.changes.remove_acls(filters)
        await removal
        return [to_json(b) for gone in per_filter for b in gone]


def to_json(b: AclBinding) -> dict[str, str]:
    return {
        "principal": b.principal,
        "host": b.host,
        "resource_type": R(b.resource_type).name,
        "resource": b.resource_name,
        "pattern_type": P(b.pattern_type).name,
        "operation": Operation(b.operation).name,
        "permission": Permission(b.permission).name,
    }


def _bad(message: str) -> RegistryError:
    return RegistryError(BAD_REQUEST, message, 400)


def _entries(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, list) or not all(isinstance(e, dict) for e in body):
        raise _bad("the body must be a JSON list of ACL objects")
    for e in body:
        unknown = set(e) - set(FIELDS)
        if unknown:
            raise _bad(f"unknown ACL fields {sorted(unknown)}")
    return body


def _choice(entry: Mapping[str, Any], field: str, table: Mapping[str, int], default: str | None = None) -> int | None:
    """The enum value of a field, None when left out without a default."""
    raw = entry.get(field, default)
    if raw is None:
        return None
    value = table.get(str(raw).upper())
    if value is None:
        raise _bad(f"{field} {raw!r} is none of {sorted(table)}")
    return value


_OPERATIONS = {op.name: int(op) for op in Operation if op not in (Operation.UNKNOWN, Operation.ANY)}


def _binding(entry: dict[str, Any]) -> AclBinding:
    for field in ("principal", "resource_type", "operation", "permission"):
        if field not in entry:
            raise _bad(f"an ACL needs {field}")
    resource_type = _choice(entry, "resource_type", _TYPES)
    default_name = REGISTRY_NAME if resource_type == R.REGISTRY else None
    b = AclBinding(
        int(resource_type or 0),
        str(entry.get("resource", default_name) or ""),
        int(_choice(entry, "pattern_type", _PATTERNS, "LITERAL") or 0),
        str(entry["principal"]),
        str(entry.get("host", "*")),
        int(_choice(entry, "operation", _OPERATIONS) or 0),
        int(_choice(entry, "permission", _PERMISSIONS) or 0),
    )
    reason = b.invalid_reason()
    if reason:
        raise _bad(f"invalid ACL {entry}: {reason}")
    return b


def _filters(entry: Mapping[str, Any]) -> list[AclFilter]:
    """The store filters of one ACL filter: one per registry resource type it names (a Kafka
    filter's ANY never matches the registry's types)."""
    resource_type = _choice(entry, "resource_type", _TYPES)
    types = [resource_type] if resource_type is not None else sorted(REGISTRY_TYPES)
    operation = _choice(entry, "operation", {**_OPERATIONS, "ANY": Operation.ANY}, "ANY")
    permission = _choice(entry, "permission", {**_PERMISSIONS, "ANY": Permission.ANY}, "ANY")
    pattern = _choice(entry, "pattern_type", _PATTERNS, "ANY")
    resource = entry.get("resource")
    return [
        AclFilter(
            int(rt),
            None if resource is None else str(resource),
            int(pattern or P.ANY),
            None if entry.get("principal") is None else str(entry["principal"]),
            None if entry.get("host") is None else str(entry["host"]),
            int(operation or Operation.ANY),
            int(permission or Permission.ANY),
        )
        for rt in types
    ]
