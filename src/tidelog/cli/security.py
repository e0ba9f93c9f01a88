"""`tidelog acls add|list|remove` (like kafka-acls) and `tidelog users add|list|delete` (SCRAM).

Both talk to a running broker through confluent-kafka's AdminClient (`pip install 'tidelog[tools]'`);
`--command-config FILE` gives its client properties (security.protocol, sasl.mechanism,
sasl.username, sasl.password, ssl.ca.location, ...). `tidelog users add --data-dir DIR` writes a
SCRAM credential straight into a data directory instead, to create the first user before the
broker starts (as `kafka-storage format --add-scram` does); the broker must not be running.
"""

from __future__ import annotations

import sys

OPERATIONS = (
    "All",
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "ClusterAction",
    "DescribeConfigs",
    "AlterConfigs",
    "IdempotentWrite",
)
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _client_config(args) -> dict:
    conf = {"bootstrap.servers": args.bootstrap_server}
    if args.command_config:
        from ..core.config import read_properties

        conf.update(read_properties(args.command_config))
    return conf


def _admin(args):
    try:
        from confluent_kafka.admin import AdminClient
    except ImportError:  # pragma: no cover
        raise SystemExit("tidelog: this command needs confluent-kafka: pip install 'tidelog[tools]'") from None
    return AdminClient(_client_config(args))


def _wait(futures: dict) -> int:
    rc = 0
    for key, fut in futures.items():
        try:
            fut.result()
        except Exception as e:  # noqa: BLE001 - KafkaException carries the broker's error
            print(f"Error for {key}: {e}", file=sys.stderr)
            rc = 1
    return rc


# ---- acls --------------------------------------------------------------------------------------
def _op(name: str):
    from confluent_kafka.admin import AclOperation

    snake = "".join("_" + c if c.isupper() else c for c in name).lstrip("_").upper()
    return AclOperation[snake]


def _resources(args) -> list[tuple]:
    from confluent_kafka.admin import ResourceType

    out = [(ResourceType.TOPIC, t) for t in args.topic] + [(ResourceType.GROUP, g) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        out.append((ResourceType.BROKER, "kafka-cluster"))
    return out


def _bindings(args) -> list:
    from confluent_kafka.admin import AclBinding, AclPermissionType, ResourcePatternType, ResourceType

    pattern = ResourcePatternType[args.resource_pattern_type.upper()]
    ops: list[tuple] = []  # (resource type, name, operation)
    for rtype, name in _resources(args):
        for op in args.operation or []:
            ops.append((rtype, name, _op(op)))
    if args.producer:
        for t in args.topic:
            ops += [(ResourceType.TOPIC, t, _op(o)) for o in ("Write", "Describe", "Create")]
        for t in args.transactional_id:
            ops += [(ResourceType.TRANSACTIONAL_ID, t, _op(o)) for o in ("Write", "Describe")]
        if args.idempotent:
            ops.append((ResourceType.BROKER, "kafka-cluster", _op("IdempotentWrite")))
    if args.consumer:
        ops += [(ResourceType.TOPIC, t, _op(o)) for t in args.topic for o in ("Read", "Describe")]
        ops += [(ResourceType.GROUP, g, _op("Read")) for g in args.group]
    if not ops:
        raise SystemExit("tidelog acls add: give --operation with a resource, or --producer / --consumer")
    out = []
    for perm, principals, hosts in (
        (AclPermissionType.ALLOW, args.allow_principal, args.allow_host),
        (AclPermissionType.DENY, args.deny_principal, args.deny_host),
    ):
        for principal in principals:
            for host in hosts or ["*"]:
                for rtype, name, op in dict.fromkeys(ops):
                    out.append(AclBinding(rtype, name, pattern, principal, host, op, perm))
    if not out:
        raise SystemExit("tidelog acls add: give --allow-principal or --deny-principal")
    return out


def _filters(args) -> list:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    pattern = ResourcePatternType[args.resource_pattern_type.upper()]
    resources = _resources(args) or [(ResourceType.ANY, None)]
    ops = [_op(o) for o in args.operation] if args.operation else [AclOperation.ANY]
    principals = [(AclPermissionType.ALLOW, p) for p in args.allow_principal] + [
        (AclPermissionType.DENY, p) for p in args.deny_principal
    ] or [(AclPermissionType.ANY, None)]
    # host None matches every host (confluent-kafka's stubs say str)
    return [
        AclBindingFilter(rt, name, pattern, principal, None, op, perm)  # type: ignore[arg-type]
        for rt, name in resources
        for op in ops
        for perm, principal in principals
    ]


def _show(b) -> str:
    return (
        f"(principal={b.principal}, host={b.host}, operation={b.operation.name}, "
        f"permissionType={b.permission_type.name})"
    )


def cmd_acls(args) -> int:
    admin = _admin(args)
    if args.acls_command == "add":
        if args.resource_pattern_type in ("any", "match"):
            raise SystemExit("tidelog acls add: --resource-pattern-type must be literal or prefixed")
        bindings = _bindings(args)
        rc = _wait(admin.create_acls(bindings, request_timeout=30))
        for b in bindings:
            print(f"Adding ACL for resource `{b.restype.name}:{b.resource_pattern_type.name}:{b.name}`: {_show(b)}")
        return rc
    if args.acls_command == "list":
        rc = 0
        for flt in _filters(args):
            try:
                found = admin.describe_acls(flt, request_timeout=30).result()
            except Exception as e:  # noqa: BLE001
                print(f"Error: {e}", file=sys.stderr)
                return 1
            for b in sorted(found, key=lambda b: (b.restype, b.name, b.principal, b.operation)):
                print(f"{b.restype.name}:{b.resource_pattern_type.name}:{b.name} {_show(b)}")
        return rc
    results = admin.delete_acls(_filters(args), request_timeout=30)
    rc = 0
    for _filter, fut in results.items():
        try:
            for b in fut.result():
                print(f"Removed {b.restype.name}:{b.resource_pattern_type.name}:{b.name} {_show(b)}")
        except Exception as e:  # noqa: BLE001
            print(f"Error: {e}", file=sys.stderr)
            rc = 1
    return rc


# ---- users -------------------------------------------------------------------------------------
def cmd_users(args) -> int:
    if args.data_dir:
        return _users_offline(args)
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = _admin(args)
    mech = ScramMechanism[args.mechanism.replace("-", "_")]
    if args.users_command == "add":
        if not args.password:
            raise SystemExit("tidelog users add: --password is required")
        op = UserScramCredentialUpsertion(args.user, ScramCredentialInfo(mech, args.iterations), args.password.encode())
        return _wait(admin.alter_user_scram_credentials([op], request_timeout=30))
    if args.users_command == "delete":
        return _wait(
            admin.alter_user_scram_credentials([UserScramCredentialDeletion(args.user, mech)], request_timeout=30)
        )
    fut = admin.describe_user_scram_credentials([args.user] if args.user else None, request_timeout=30)
    try:
        described = fut.result() if not isinstance(fut, dict) else {u: f.result() for u, f in fut.items()}
    except Exception as e:  # noqa: BLE001
        print(f"Error: {e}", file=sys.stderr)
        return 1
    for user, desc in sorted(described.items()):
        infos = ", ".join(
            f"{i.mechanism.name.replace('_', '-')} (iterations={i.iterations})" for i in desc.scram_credential_infos
        )
        print(f"{user}: {infos}")
    return 0


def _users_offline(args) -> int:
    from ..core.scram import MAX_ITERATIONS, MIN_ITERATIONS, CredentialStore, ScramCredential

    store = CredentialStore(args.data_dir)
    if args.users_command == "add":
        if not args.password or not MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:
            raise SystemExit(
                f"tidelog users add: needs --password and {MIN_ITERATIONS} <= --iterations <= {MAX_ITERATIONS}"
            )
        store.put(
            args.user, args.mechanism, ScramCredential.from_password(args.mechanism, args.password, args.iterations)
        )
        store.save()
        print(f"Added {args.mechanism} credential for {args.user} in {store.path}")
    elif args.users_command == "delete":
        if not store.delete(args.user, args.mechanism):
            print(f"No {args.mechanism} credential for {args.user}", file=sys.stderr)
            return 1
        store.save()
    else:
        for user, mechs in sorted(store.users.items()):
            if args.user in (None, user):
                print(f"{user}: " + ", ".join(f"{m} (iterations={c.iterations})" for m, c in sorted(mechs.items())))
    return 0


def add_parser(sub, default_bootstrap: str) -> None:
    def common(p):
        p.add_argument("--bootstrap-server", default=default_bootstrap)
        p.add_argument("--command-config", help="client properties file (security.protocol, sasl.*, ssl.*)")

    acls = sub.add_parser("acls", help="add, list and remove ACLs (like kafka-acls)")
    asub = acls.add_subparsers(dest="acls_command", required=True)
    for name in ("add", "list", "remove"):
        p = asub.add_parser(name)
        common(p)
        p.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
        p.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
        p.add_argument("--allow-host", action="append", default=[])
        p.add_argument("--deny-host", action="append", default=[])
        p.add_argument("--operation", action="append", choices=OPERATIONS)
        p.add_argument("--topic", action="append", default=[])
        p.add_argument("--group", action="append", default=[])
        p.add_argument("--transactional-id", action="append", default=[])
        p.add_argument("--cluster", action="store_true")
        p.add_argument(
            "--resource-pattern-type",
            default="literal" if name == "add" else "any",
            choices=("literal", "prefixed", "match", "any"),
        )
        p.add_argument(
            "--producer", action="store_true", help="Write, Describe, Create on the topics (and the transactional ids)"
        )
        p.add_argument("--idempotent", action="store_true", help="with --producer: IdempotentWrite on the cluster")
        p.add_argument("--consumer", action="store_true", help="Read, Describe on the topics, Read on the groups")
    acls.set_defaults(func=cmd_acls)

    users = sub.add_parser("users", help="manage SCRAM credentials")
    usub = users.add_subparsers(dest="users_command", required=True)
    for name in ("add", "list", "delete"):
        p = usub.add_parser(name)
        common(p)
        p.add_argument("--data-dir", help="edit this (stopped) broker's data directory instead")
        p.add_argument("--user", required=name != "list")
        p.add_argument("--password")
        p.add_argument("--mechanism", default="SCRAM-SHA-512", choices=MECHANISMS)
        p.add_argument("--iterations", type=int, default=4096)
    users.set_defaults(func=cmd_users)
