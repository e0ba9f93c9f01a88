"""`tidelog schemas list|get|register|check|delete`: the schema registry's REST API from the
command line (a broker with `schema.registry.listeners`, or any Confluent-compatible registry);
`tidelog schemas acl add|list|remove`: the ACLs on subjects (`schema_acls`).

The type of a schema file is `--type`, else its extension: .avsc AVRO, .json JSON, .proto PROTOBUF.
`check` exits 0 when the schema is compatible, 1 when not (printing why). An error answer is
printed as `tidelog: <message> (error code N)` with exit status 1.
"""

from __future__ import annotations

import base64
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8081"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
EXTENSIONS = {".avsc": "AVRO", ".json": "JSON", ".proto": "PROTOBUF"}


class RegistryCallError(Exception):
    pass


def call(args, method: str, path: str, body: object = None, **params: object) -> Any:
    query = urllib.parse.urlencode(
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items() if v is not None}
    )
    url = args.url.rstrip("/") + path + (f"?{query}" if query else "")
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Accept": CONTENT_TYPE})
    if data is not None:
        req.add_header("Content-Type", CONTENT_TYPE)
    if args.user:
        req.add_header("Authorization", "Basic " + base64.b64encode(args.user.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=args.timeout) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            err = json.loads(e.read())
            raise RegistryCallError(f"{err['message']} (error code {err['error_code']})") from e
        except (ValueError, KeyError, TypeError):
            raise RegistryCallError(f"HTTP {e.code} {e.reason}") from e
    except urllib.error.URLError as e:
        raise RegistryCallError(f"cannot reach {args.url}: {e.reason}") from e


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _schema_body(args) -> dict[str, object]:
    path = Path(args.file)
    schema_type = args.type or EXTENSIONS.get(path.suffix.lower(), "AVRO")
    body: dict[str, object] = {"schema": path.read_text()}
    if schema_type != "AVRO":
        body["schemaType"] = schema_type
    return body


def cmd_list(args) -> int:
    for subject in call(args, "GET", "/subjects", deleted=args.deleted or None):
        print(subject)
    return 0


def cmd_get(args) -> int:
    if args.id is not None:
        answer = call(args, "GET", f"/schemas/ids/{args.id}")
    elif args.subject:
        answer = call(args, "GET", f"/subjects/{_quote(args.subject)}/versions/{args.version}")
    else:
        raise RegistryCallError("give --subject (and --version) or --id")
    print(json.dumps(answer, indent=2))
    return 0


def cmd_register(args) -> int:
    answer = call(
        args, "POST", f"/subjects/{_quote(args.subject)}/versions", _schema_body(args), normalize=args.normalize or None
    )
    print(answer["id"])
    return 0


def cmd_check(args) -> int:
    path = f"/compatibility/subjects/{_quote(args.subject)}/versions"
    if args.version:
        path += f"/{args.version}"
    answer = call(args, "POST", path, _schema_body(args), verbose=True)
    ok = bool(answer["is_compatible"])
    print("compatible" if ok else "incompatible")
    for message in answer.get("messages", ()):
        print(f"  {message}")
    return 0 if ok else 1


def cmd_delete(args) -> int:
    path = f"/subjects/{_quote(args.subject)}"
    if args.version:
        path += f"/versions/{args.version}"
    print(json.dumps(call(args, "DELETE", path, permanent=args.permanent or None)))
    return 0


def run(cmd):
    """`cmd` with an error answer printed (`tidelog: ...`) and exit status 1."""

    def wrapped(args) -> int:
        try:
            return cmd(args)
        except (RegistryCallError, OSError) as e:
            print(f"tidelog: {e}", file=sys.stderr)
            return 1

    return wrapped


def common(q) -> None:
    """The options every `schemas` command takes."""
    q.add_argument("--url", default=DEFAULT_URL, help=f"the registry's URL (default {DEFAULT_URL})")
    q.add_argument("--user", help="USER:PASSWORD for basic authentication")
    q.add_argument("--timeout", type=float, default=30.0)


def add_parser(sub):
    """The `schemas` command and its subcommands; their subparsers (`schema_acls` adds `acl`)."""
    p = sub.add_parser("schemas", help="the schema registry: list, get, register, check, delete schemas, ACLs")
    ssub = p.add_subparsers(dest="schemas_command", required=True)
    q = ssub.add_parser("list", help="the subjects")
    common(q)
    q.add_argument("--deleted", action="store_true", help="soft-deleted subjects too")
    q.set_defaults(func=run(cmd_list))
    q = ssub.add_parser("get", help="a subject's version (default latest), or a schema by --id")
    common(q)
    q.add_argument("--subject")
    q.add_argument("--version", default="latest")
    q.add_argument("--id", type=int)
    q.set_defaults(func=run(cmd_get))
    for name, func, helptext in (
        ("register", cmd_register, "register a schema file under a subject; prints its id"),
        ("check", cmd_check, "is a schema file compatible with the subject (exit 1 when not)"),
    ):
        q = ssub.add_parser(name, help=helptext)
        common(q)
        q.add_argument("--subject", required=True)
        q.add_argument("--file", required=True)
        q.add_argument("--type", choices=("AVRO", "JSON", "PROTOBUF"), help="default: from the file's extension")
        if name == "register":
            q.add_argument("--normalize", action="store_true")
        else:
            q.add_argument("--version", help="check against this version only (default: as the level says)")
        q.set_defaults(func=run(func))
    q = ssub.add_parser("delete", help="soft-delete a subject or one --version (--permanent after)")
    common(q)
    q.add_argument("--subject", required=True)
    q.add_argument("--version")
    q.add_argument("--permanent", action="store_true")
    q.set_defaults(func=run(cmd_delete))
    return ssub
