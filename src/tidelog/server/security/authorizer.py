"""The ACL authorizer: may this principal, from this host, do this operation on this resource?

Kafka's rules, in order:
1. a super user (`super.users`, `User:a;User:b`) may do everything;
2. a DENY binding for the principal (or `User:*`) and host (or `*`) whose operation is the one
   asked or ALL refuses;
3. when no binding at all applies to the resource, `allow.everyone.if.no.acl.found` decides;
4. otherwise an ALLOW binding must match, where ALL allows everything, READ, WRITE, DELETE and
   ALTER imply DESCRIBE, and ALTER_CONFIGS implies DESCRIBE_CONFIGS.
"""

from __future__ import annotations

from ...core.acls import CLUSTER_NAME, AclStore, Permission, ResourceType
from ...core.acls import Operation as Op

_IMPLIES = {
    Op.DESCRIBE: (Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.ALL),
    Op.DESCRIBE_CONFIGS: (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.ALL),
}


def parse_super_users(value: str | None) -> frozenset[str]:
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


class Authorizer:
    def __init__(
        self, store: AclStore, super_users: frozenset[str] = frozenset(), allow_if_no_acl: bool = False
    ) -> None:
        self.store = store
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl

    def authorize(self, principal: str, host: str, resource_type: int, name: str, op: int) -> bool:
        if principal in self.super_users:
            return True
        bindings = self.store.applying_to(resource_type, name)
        if not bindings:
            return self.allow_if_no_acl
        allowing = _IMPLIES.get(Op(op), (op, Op.ALL))
        allowed = False
        for b in bindings:
            if b.principal != principal and b.principal != "User:*":
                continue
            if b.host != host and b.host != "*":
                continue
            if b.permission == Permission.DENY:
                if b.operation == op or b.operation == Op.ALL:
                    return False
            elif b.operation in allowing:
                allowed = True
        return allowed

    def authorize_any(self, principal: str, host: str, resource_type: int, op: int) -> bool:
        """Is `op` allowed on at least one resource of this type (KIP-679's idempotent-write check)?"""
        if principal in self.super_users:
            return True
        bindings = self.store.of_type(resource_type)
        if not bindings:
            return self.allow_if_no_acl
        for b in bindings:
            if (
                b.permission == Permission.ALLOW
                and b.operation in (op, Op.ALL)
                and b.principal in (principal, "User:*")
                and b.host in (host, "*")
                and self.authorize(principal, host, resource_type, b.resource_name, op)
            ):
                return True
        return False

    def cluster(self, principal: str, host: str, op: int) -> bool:
        return self.authorize(principal, host, ResourceType.CLUSTER, CLUSTER_NAME, op)
