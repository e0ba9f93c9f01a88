"""The REST routes: (method, path pattern) -> what the caller needs (an `access` rule) and the
`Registry` operation, with Confluent's paths; and `/security/acls` (`acl_admin`).

`dispatch(registry, method, path, query, body, caller, acls)` checks the caller's ACLs, runs
the operation and answers (HTTP status, JSON value), trimmed to what the caller may see; it
raises RegistryError for Confluent's error answers (`http` turns them into their bodies). A
path's `{s}` segments are percent-decoded (a subject may hold any character but `/`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from ..core.acls import Operation as Op
from . import access as A
from . import errors as E
from .acl_admin import RegistryAcls
from .errors import RegistryError
from .schemas import TYPES
from .service import Registry

Handler = Callable[[Registry, list[str], dict[str, str], Any], Any]
AclHandler = Callable[[RegistryAcls, dict[str, str], Any], Any]


def _flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "false").lower() == "true"


def _id(raw: str) -> int:
    if not raw.isdigit():
        raise E.schema_not_found(f"Schema {raw} not found")
    return int(raw)


def _subjects(reg: Registry, p: list[str], q: dict[str, str], body: Any) -> Any:
    prefix = q.get("subjectPrefix", "")
    return [s for s in reg.subjects(_flag(q, "deleted")) if s.startswith(prefix)]


async def _register(reg: Registry, p: list[str], q: dict[str, str], body: Any) -> Any:
    return await reg.register(p[0], body, _flag(q, "normalize"))


def _lookup(reg: Registry, p: list[str], q: dict[str, str], body: Any) -> Any:
    return reg.lookup(p[0], body, _flag(q, "normalize"), _flag(q, "deleted"))


def _version_schema(reg: Registry, p: list[str], q: dict[str, str], body: Any) -> Any:
    return _Raw(reg.version(p[0], p[1], _flag(q, "deleted"))["schema"])


def _by_id_schema(reg: Registry, p: list[str], q: dict[str, str], body: Any) -> Any:
    return _Raw(reg.by_id(_id(p[0]))["schema"])


class _Raw:
    """An answer sent as it is (the schema text of `/schema` endpoints), not JSON-encoded."""

    def __init__(self, text: str) -> None:
        self.text = text


SUBJECT_READ, SUBJECT_DESCRIBE = A.subject(Op.READ), A.subject(Op.DESCRIBE)
SUBJECT_CONFIGS, SUBJECT_ALTER_CONFIGS = A.subject(Op.DESCRIBE_CONFIGS), A.subject(Op.ALTER_CONFIGS)
GLOBAL_CONFIGS, GLOBAL_ALTER_CONFIGS = A.registry(Op.DESCRIBE_CONFIGS), A.registry(Op.ALTER_CONFIGS)

# (method, path, what the caller needs - see `access` for the table - and the operation)
ROUTES: list[tuple[str, str, A.Rule, Handler]] = [
    ("GET", r"/subjects", A.subject_names(Op.DESCRIBE), _subjects),
    ("GET", r"/subjects/([^/]+)/versions", SUBJECT_DESCRIBE, lambda r, p, q, b: r.versions(p[0], _flag(q, "deleted"))),
    ("POST", r"/subjects/([^/]+)/versions", A.subject(Op.WRITE), _register),
    (
        "GET",
        r"/subjects/([^/]+)/versions/([^/]+)",
        SUBJECT_READ,
        lambda r, p, q, b: r.version(p[0], p[1], _flag(q, "deleted")),
    ),
    ("GET", r"/subjects/([^/]+)/versions/([^/]+)/schema", SUBJECT_READ, _version_schema),
    (
        "GET",
        r"/subjects/([^/]+)/versions/([^/]+)/referencedby",
        A.registry(Op.DESCRIBE),
        lambda r, p, q, b: r.referenced_by(p[0], p[1]),
    ),
    (
        "DELETE",
        r"/subjects/([^/]+)/versions/([^/]+)",
        A.subject(Op.DELETE),
        lambda r, p, q, b: r.delete_version(p[0], p[1], _flag(q, "permanent")),
    ),
    ("POST", r"/subjects/([^/]+)", SUBJECT_READ, _lookup),
    (
        "DELETE",
        r"/subjects/([^/]+)",
        A.subject(Op.DELETE),
        lambda r, p, q, b: r.delete_subject(p[0], _flag(q, "permanent")),
    ),
    ("GET", r"/schemas/ids/([^/]+)", A.schema_id(Op.READ), lambda r, p, q, b: r.by_id(_id(p[0]))),
    ("GET", r"/schemas/ids/([^/]+)/schema", A.schema_id(Op.READ), _by_id_schema),
    (
        "GET",
        r"/schemas/ids/([^/]+)/versions",
        A.registry(Op.DESCRIBE),
        lambda r, p, q, b: r.id_versions(_id(p[0]), _flag(q, "deleted")),
    ),
    (
        "GET",
        r"/schemas/ids/([^/]+)/subjects",
        A.schema_id(Op.DESCRIBE, trim_names=True),
        lambda r, p, q, b: r.id_subjects(_id(p[0]), _flag(q, "deleted")),
    ),
    ("GET", r"/schemas/types", A.OPEN, lambda r, p, q, b: list(TYPES)),
    (
        "GET",
        r"/schemas",
        A.schemas_listed(Op.READ),
        lambda r, p, q, b: r.all_schemas(q.get("subjectPrefix", ""), _flag(q, "deleted"), _flag(q, "latestOnly")),
    ),
    ("GET", r"/contexts", A.OPEN, lambda r, p, q, b: ["."]),
    ("GET", r"/config", GLOBAL_CONFIGS, lambda r, p, q, b: r.get_config(None)),
    ("PUT", r"/config", GLOBAL_ALTER_CONFIGS, lambda r, p, q, b: r.set_config(None, b)),
    ("DELETE", r"/config", GLOBAL_ALTER_CONFIGS, lambda r, p, q, b: r.delete_config(None)),
    ("GET", r"/config/([^/]+)", SUBJECT_CONFIGS, lambda r, p, q, b: r.get_config(p[0], _flag(q, "defaultToGlobal"))),
    ("PUT", r"/config/([^/]+)", SUBJECT_ALTER_CONFIGS, lambda r, p, q, b: r.set_config(p[0], b)),
    ("DELETE", r"/config/([^/]+)", SUBJECT_ALTER_CONFIGS, lambda r, p, q, b: r.delete_config(p[0])),
    ("GET", r"/mode", GLOBAL_CONFIGS, lambda r, p, q, b: r.get_mode(None)),
    ("PUT", r"/mode", GLOBAL_ALTER_CONFIGS, lambda r, p, q, b: r.set_mode(None, b, _flag(q, "force"))),
    ("DELETE", r"/mode", GLOBAL_ALTER_CONFIGS, lambda r, p, q, b: r.delete_mode(None)),
    ("GET", r"/mode/([^/]+)", SUBJECT_CONFIGS, lambda r, p, q, b: r.get_mode(p[0], _flag(q, "defaultToGlobal"))),
    ("PUT", r"/mode/([^/]+)", SUBJECT_ALTER_CONFIGS, lambda r, p, q, b: r.set_mode(p[0], b, _flag(q, "force"))),
    ("DELETE", r"/mode/([^/]+)", SUBJECT_ALTER_CONFIGS, lambda r, p, q, b: r.delete_mode(p[0])),
    (
        "POST",
        r"/compatibility/subjects/([^/]+)/versions/([^/]+)",
        SUBJECT_READ,
        lambda r, p, q, b: r.compatibility(p[0], p[1], b, _flag(q, "normalize")),
    ),
    (
        "POST",
        r"/compatibility/subjects/([^/]+)/versions",
        SUBJECT_READ,
        lambda r, p, q, b: r.compatibility(p[0], None, b, _flag(q, "normalize")),
    ),
    ("GET", r"/", A.OPEN, lambda r, p, q, b: {}),
]
# /security/acls (`acl_admin`), served where ACLs on subjects are on
ACL_PATH = "/security/acls"
ACL_ROUTES: dict[str, tuple[A.Rule, AclHandler]] = {
    "GET": (A.cluster(Op.DESCRIBE), lambda acls, q, b: acls.find(q)),
    "POST": (A.cluster(Op.ALTER), lambda acls, q, b: acls.create(b)),
    "DELETE": (A.cluster(Op.ALTER), lambda acls, q, b: acls.delete(b)),
}
_COMPILED = [(m, re.compile(pattern + "/?"), rule, h) for m, pattern, rule, h in ROUTES]


async def dispatch(
    reg: Registry,
    method: str,
    path: str,
    query: dict[str, str],
    body: Any,
    caller: A.Caller | None = None,
    acls: RegistryAcls | None = None,
) -> tuple[int, Any]:
    """(status, answer) of one request by `caller` (None: no ACLs checked); raises
    RegistryError for error answers, 40301 where the caller's ACLs refuse the request. `acls`:
    the ACL administration (None: ACLs on subjects are off, and `/security/acls` is not found)."""
    caller = caller if caller is not None else A.Caller.anyone()
    if path.rstrip("/") == ACL_PATH:
        return 200, await _acl_request(reg, method, query, body, caller, acls)
    known_path = False
    for m, pattern, rule, handler in _COMPILED:
        match = pattern.fullmatch(path)
        if match is None:
            continue
        known_path = True
        if m != method:
            continue
        params = [unquote(g) for g in match.groups()]
        rule.check(caller, reg, params)
        result = handler(reg, params, query, body)
        if isinstance(result, Awaitable):
            result = await result
        if rule.trim is not None and caller.checked:
            result = rule.trim(caller, result)
        if isinstance(result, dict) and not _flag(query, "verbose") and "is_compatible" in result:
            result = {"is_compatible": result["is_compatible"]}
        return 200, result
    if known_path:
        raise RegistryError(405, f"Method {method} not allowed", 405)
    raise RegistryError(404, "HTTP 404 Not Found", 404)


async def _acl_request(
    reg: Registry, method: str, query: dict[str, str], body: Any, caller: A.Caller, acls: RegistryAcls | None
) -> Any:
    if acls is None:
        raise RegistryError(
            404,
            "ACLs on subjects are off: they need schema.registry.authentication=basic and the broker's authorizer",
            404,
        )
    route = ACL_ROUTES.get(method)
    if route is None:
        raise RegistryError(405, f"Method {method} not allowed", 405)
    rule, handler = route
    rule.check(caller, reg, [])
    result = handler(acls, query, body)
    return await result if isinstance(result, Awaitable) else result
