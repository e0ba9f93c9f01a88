"""`tidelog schemas acl add|list|remove`: the registry's ACLs on subjects, through its
`/security/acls` (like `tidelog acls` for Kafka's, whose requests never see these):

    tidelog schemas acl add --allow-principal User:alice --operation Read --operation Write \
        --subject orders- --resource-pattern-type prefixed --user admin:secret
    tidelog schemas acl add --allow-principal User:ops --operation DescribeConfigs --registry
    tidelog schemas acl list [--subject S] [--registry] [--principal User:alice]
    tidelog schemas acl remove --subject orders- [--allow-principal P] [--operation O]

`add` makes one ACL per principal, host, resource and operation; `list` and `remove` match every
value of what they are not given (`remove` with no option at all removes every registry ACL).
Each prints one line per ACL; an error answer exits 1 (see `schemas`).
"""

from __future__ import annotations

from typing import Any

from .schemas import call, common, run

OPERATIONS = ("All", "Read", "Write", "Delete", "Alter", "Describe", "DescribeConfigs", "AlterConfigs")
PATH = "/security/acls"


def _op(name: str) -> str:
    """DescribeConfigs -> DESCRIBE_CONFIGS."""
    return "".join("_" + c if c.isupper() else c for c in name).lstrip("_").upper()


def _resources(args) -> list[dict[str, str]]:
    out = [{"resource_type": "SUBJECT", "resource": s} for s in args.subject]
    if args.registry:
        out.append({"resource_type": "REGISTRY", "resource": ""})
    return out


def _principals(args) -> list[tuple[str, str, list[str]]]:
    """(permission, principal, hosts) of the --allow-/--deny- options."""
    return [("ALLOW", p, args.allow_host) for p in args.allow_principal] + [
        ("DENY", p, args.deny_host) for p in args.deny_principal
    ]


def _acls(args) -> list[dict[str, str]]:
    if not _resources(args) or not args.operation or not _principals(args):
        raise SystemExit("tidelog schemas acl add: give a principal, an --operation and --subject or --registry")
    return [
        {**r, "pattern_type": args.resource_pattern_type.upper(), "principal": principal, "host": host}
        | {"operation": _op(op), "permission": permission}
        for permission, principal, hosts in _principals(args)
        for host in hosts or ["*"]
        for r in _resources(args)
        for op in dict.fromkeys(args.operation)
    ]


def _filters(args) -> list[dict[str, str]]:
    """The cross product of what is given; one empty filter (every ACL) when nothing is."""
    resources: list[dict[str, str]] = _resources(args) or [{}]
    ops: list[dict[str, str]] = [{"operation": _op(o)} for o in args.operation or ()] or [{}]
    who: list[dict[str, str]] = [{"permission": perm, "principal": p} for perm, p, _ in _principals(args)] or [{}]
    pattern = {} if args.resource_pattern_type == "any" else {"pattern_type": args.resource_pattern_type.upper()}
    return [r | o | w | pattern for r in resources for o in ops for w in who]


def _show(acl: dict[str, Any]) -> str:
    return (
        f"{acl['resource_type']}:{acl['pattern_type']}:{acl['resource']} (principal={acl['principal']}, "
        f"host={acl['host']}, operation={acl['operation']}, permission={acl['permission']})"
    )


def cmd_acl(args) -> int:
    if args.acl_command == "add":
        if args.resource_pattern_type not in ("literal", "prefixed"):
            raise SystemExit("tidelog schemas acl add: --resource-pattern-type must be literal or prefixed")
        for acl in call(args, "POST", PATH, _acls(args)):
            print(f"Added {_show(acl)}")
    elif args.acl_command == "list":
        seen: list[dict[str, Any]] = []
        for flt in _filters(args):
            principal = flt.pop("principal", None) or args.principal
            for acl in call(args, "GET", PATH, None, principal=principal, **flt):
                if acl not in seen:
                    seen.append(acl)
        for acl in seen:
            print(_show(acl))
    else:
        for acl in call(args, "DELETE", PATH, _filters(args)):
            print(f"Removed {_show(acl)}")
    return 0


def add_parser(ssub) -> None:
    """`schemas acl` under the `schemas` subcommands."""
    p = ssub.add_parser("acl", help="ACLs on subjects: add, list, remove (needs the registry's ACLs on)")
    asub = p.add_subparsers(dest="acl_command", required=True)
    for name in ("add", "list", "remove"):
        q = asub.add_parser(name)
        common(q)
        q.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
        q.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
        q.add_argument("--allow-host", action="append", default=[])
        q.add_argument("--deny-host", action="append", default=[])
        q.add_argument("--operation", action="append", choices=OPERATIONS)
        q.add_argument("--subject", action="append", default=[], help="a subject, or with prefixed a prefix")
        q.add_argument("--registry", action="store_true", help="the registry as a whole (global config and mode)")
        q.add_argument(
            "--resource-pattern-type",
            default="literal" if name == "add" else "any",
            choices=("literal", "prefixed", "match", "any"),
        )
        if name == "list":
            q.add_argument("--principal", help="only this principal's ACLs")
        else:
            q.set_defaults(principal=None)
        q.set_defaults(func=run(cmd_acl))
