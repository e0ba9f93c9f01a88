"""The REST routes: (method, path pattern) -> the `Registry` operation, with Confluent's paths.

`dispatch(registry, method, path, query, body)` answers (HTTP status, JSON value); it raises
RegistryError for Confluent's error answers (`http` turns them into their bodies). A path's
`{s}` segments are percent-decoded (a subject may hold any character but `/`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from . import errors as E
from .errors import RegistryError
from .schemas import TYPES
from .service import Registry

Handler = Callable[[Registry, list[str], dict[str, str], Any], Any]


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


ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", r"/subjects", _subjects),
    ("GET", r"/subjects/([^/]+)/versions", lambda r, p, q, b: r.versions(p[0], _flag(q, "deleted"))),
    ("POST", r"/subjects/([^/]+)/versions", _register),
    ("GET", r"/subjects/([^/]+)/versions/([^/]+)", lambda r, p, q, b: r.version(p[0], p[1], _flag(q, "deleted"))),
    ("GET", r"/subjects/([^/]+)/versions/([^/]+)/schema", _version_schema),
    ("GET", r"/subjects/([^/]+)/versions/([^/]+)/referencedby", lambda r, p, q, b: r.referenced_by(p[0], p[1])),
    (
        "DELETE",
        r"/subjects/([^/]+)/versions/([^/]+)",
        lambda r, p, q, b: r.delete_version(p[0], p[1], _flag(q, "permanent")),
    ),
    ("POST", r"/subjects/([^/]+)", _lookup),
    ("DELETE", r"/subjects/([^/]+)", lambda r, p, q, b: r.delete_subject(p[0], _flag(q, "permanent"))),
    ("GET", r"/schemas/ids/([^/]+)", lambda r, p, q, b: r.by_id(_id(p[0]))),
    ("GET", r"/schemas/ids/([^/]+)/schema", _by_id_schema),
    ("GET", r"/schemas/ids/([^/]+)/versions", lambda r, p, q, b: r.id_versions(_id(p[0]), _flag(q, "deleted"))),
    ("GET", r"/schemas/ids/([^/]+)/subjects", lambda r, p, q, b: r.id_subjects(_id(p[0]), _flag(q, "deleted"))),
    ("GET", r"/schemas/types", lambda r, p, q, b: list(TYPES)),
    (
        "GET",
        r"/schemas",
        lambda r, p, q, b: r.all_schemas(q.get("subjectPrefix", ""), _flag(q, "deleted"), _flag(q, "latestOnly")),
    ),
    ("GET", r"/contexts", lambda r, p, q, b: ["."]),
    ("GET", r"/config", lambda r, p, q, b: r.get_config(None)),
    ("PUT", r"/config", lambda r, p, q, b: r.set_config(None, b)),
    ("DELETE", r"/config", lambda r, p, q, b: r.delete_config(None)),
    ("GET", r"/config/([^/]+)", lambda r, p, q, b: r.get_config(p[0], _flag(q, "defaultToGlobal"))),
    ("PUT", r"/config/([^/]+)", lambda r, p, q, b: r.set_config(p[0], b)),
    ("DELETE", r"/config/([^/]+)", lambda r, p, q, b: r.delete_config(p[0])),
    ("GET", r"/mode", lambda r, p, q, b: r.get_mode(None)),
    ("PUT", r"/mode", lambda r, p, q, b: r.set_mode(None, b, _flag(q, "force"))),
    ("DELETE", r"/mode", lambda r, p, q, b: r.delete_mode(None)),
    ("GET", r"/mode/([^/]+)", lambda r, p, q, b: r.get_mode(p[0], _flag(q, "defaultToGlobal"))),
    ("PUT", r"/mode/([^/]+)", lambda r, p, q, b: r.set_mode(p[0], b, _flag(q, "force"))),
    ("DELETE", r"/mode/([^/]+)", lambda r, p, q, b: r.delete_mode(p[0])),
    (
        "POST",
        r"/compatibility/subjects/([^/]+)/versions/([^/]+)",
        lambda r, p, q, b: r.compatibility(p[0], p[1], b, _flag(q, "normalize")),
    ),
    (
        "POST",
        r"/compatibility/subjects/([^/]+)/versions",
        lambda r, p, q, b: r.compatibility(p[0], None, b, _flag(q, "normalize")),
    ),
    ("GET", r"/", lambda r, p, q, b: {}),
]
_COMPILED = [(m, re.compile(pattern + "/?"), h) for m, pattern, h in ROUTES]


async def dispatch(reg: Registry, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
    """(status, answer) of one request; raises RegistryError for error answers."""
    known_path = False
    for m, pattern, handler in _COMPILED:
        match = pattern.fullmatch(path)
        if match is None:
            continue
        known_path = True
        if m != method:
            continue
        result = handler(reg, [unquote(g) for g in match.groups()], query, body)
        if isinstance(result, Awaitable):
            result = await result
        if isinstance(result, dict) and not _flag(query, "verbose") and "is_compatible" in result:
            result = {"is_compatible": result["is_compatible"]}
        return 200, result
    if known_path:
        raise RegistryError(405, f"Method {method} not allowed", 405)
    raise RegistryError(404, "HTTP 404 Not Found", 404)
