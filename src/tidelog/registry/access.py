"""ACLs on subjects: who may call which registry endpoint (issue 31), modelled on Redpanda's
schema registry authorization and Confluent's 40301 answers.

On only when the registry authenticates (`schema.registry.authentication=basic`) and the broker
has an authorizer (`authorizer.class.name`); otherwise every caller is `Caller.anyone()` and
nothing here runs beyond one test per request. The rules are the broker's (`server.security.
authorizer`, given here as the `Authorizer` protocol): `super.users` may do everything, a DENY
wins, `allow.everyone.if.no.acl.found` decides for a resource no binding applies to, READ, WRITE,
DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS. The principal is
`User:<basic auth user>`, the host the client's address.

Two resource types (`core.acls`): SUBJECT, a subject's name (literal, `*`, or prefixed), and
REGISTRY, the registry as a whole. What each endpoint needs (`api.ROUTES` names one rule each):

| endpoint                                          | operation              | resource            |
|---------------------------------------------------|------------------------|---------------------|
| GET /, /schemas/types, /contexts                  | none (authenticated)   | -                   |
| GET /subjects                                     | DESCRIBE (filters)     | each subject        |
| GET /subjects/{s}/versions                        | DESCRIBE               | subject s           |
| POST /subjects/{s}/versions (register)            | WRITE                  | subject s           |
| POST /subjects/{s} (look up)                      | READ                   | subject s           |
| GET /subjects/{s}/versions/{v}[/schema]           | READ                   | subject s           |
| GET /subjects/{s}/versions/{v}/referencedby       | DESCRIBE               | registry            |
| DELETE /subjects/{s}[/versions/{v}]               | DELETE                 | subject s           |
| POST /compatibility/subjects/{s}/versions[/{v}]   | READ                   | subject s           |
| GET /schemas/ids/{id}[/schema]                    | READ                   | a subject of the id |
| GET /schemas/ids/{id}/subjects                    | DESCRIBE (filters)     | a subject of the id |
| GET /schemas/ids/{id}/versions                    | DESCRIBE               | registry            |
| GET /schemas                                      | READ (filters)         | each subject        |
| GET /config, /mode                                | DESCRIBE_CONFIGS       | registry            |
| PUT, DELETE /config, /mode                        | ALTER_CONFIGS          | registry            |
| GET /config/{s}, /mode/{s}                        | DESCRIBE_CONFIGS       | subject s           |
| PUT, DELETE /config/{s}, /mode/{s}                | ALTER_CONFIGS          | subject s           |
| GET /security/acls                                | DESCRIBE               | cluster             |
| POST, DELETE /security/acls                       | ALTER                  | cluster             |

"(filters)": the answer keeps what the principal may see and is never refused (a list of
subjects, or of schemas, may come back empty). An id's endpoints need the operation on at least
one subject the id is registered under, soft-deleted ones included (Confluent's SCHEMA_READ); an
unknown id is answered 40403 as without ACLs. A refusal is HTTP 403, error code 40301,
"User is denied operation Write on Subject: orders-value", checked before the operation runs, so
a refused caller learns nothing of the subject (not even whether it exists).

Cluster mode: the broker a request reaches checks it before serving or forwarding it; the
primary, given the same basic credentials, checks it again as the same principal (with the
forwarding broker's address as host: a host-restricted ALLOW does not pass a forwarded request,
a DENY is applied at the first broker with the client's own address).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.acls import CLUSTER_NAME, REGISTRY_NAME, Operation, ResourceType
from .acl_admin import RegistryAcls
from .errors import FORBIDDEN, RegistryError
from .service import Registry

SUBJECT, REGISTRY, CLUSTER = ResourceType.SUBJECT, ResourceType.REGISTRY, ResourceType.CLUSTER
_TYPE_NAMES: dict[int, str] = {SUBJECT: "Subject", REGISTRY: "Registry", CLUSTER: "Cluster"}


class Authorizer(Protocol):
    """The broker's ACL authorizer (`server.security.authorizer.Authorizer` is one)."""

    def authorize(self, principal: str, host: str, resource_type: int, name: str, op: int) -> bool: ...


@dataclass(frozen=True)
class AccessControl:
    """What a registry with ACLs on subjects is given: the broker's authorizer, and where
    `/security/acls` reads and changes the bindings."""

    authorizer: Authorizer
    admin: RegistryAcls


class Caller:
    """One request's principal and host, and the authorizer that judges them (None: ACLs off,
    everything allowed)."""

    def __init__(self, authorizer: Authorizer | None, principal: str, host: str) -> None:
        self.authorizer = authorizer
        self.principal = principal
        self.host = host

    @classmethod
    def anyone(cls) -> Caller:
        """A caller when the registry checks no ACLs."""
        return cls(None, "User:ANONYMOUS", "*")

    @property
    def checked(self) -> bool:
        return self.authorizer is not None

    def may(self, resource_type: int, name: str, op: int) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(self.principal, self.host, resource_type, name, op)

    def require(self, resource_type: int, name: str, op: int) -> None:
        """Return when allowed; else raise the 403 (40301) Confluent answers."""
        if not self.may(resource_type, name, op):
            raise denied(op, _TYPE_NAMES[resource_type] + (f": {name}" if name else ""))


def denied(op: int, what: str) -> RegistryError:
    """403, 40301, "User is denied operation Write on Subject: s" (`what` is "Subject: s")."""
    verb = "".join(w.capitalize() for w in Operation(op).name.split("_"))  # DESCRIBE_CONFIGS -> DescribeConfigs
    return RegistryError(FORBIDDEN, f"User is denied operation {verb} on {what}", 403)


# ---- the rules a route names -------------------------------------------------------------------
Check = Callable[[Caller, Registry, list[str]], None]  # (caller, registry, path parameters); raises 40301
Trim = Callable[[Caller, Any], Any]  # the answer as this caller may see it


@dataclass(frozen=True)
class Rule:
    """What a route needs: `check` before it runs, `trim` of its answer after (None: as it is)."""

    check: Check
    trim: Trim | None = None


def _nothing(caller: Caller, reg: Registry, params: list[str]) -> None:
    return None


OPEN = Rule(_nothing)


def subject(op: Operation) -> Rule:
    """`op` on the subject named by the path's first parameter."""
    return Rule(lambda caller, reg, p: caller.require(SUBJECT, p[0], op))


def registry(op: Operation) -> Rule:
    """`op` on the registry as a whole (global config and mode, cross-subject answers)."""
    return Rule(lambda caller, reg, p: caller.require(REGISTRY, REGISTRY_NAME, op))


def cluster(op: Operation) -> Rule:
    """`op` on Kafka's cluster resource (the registry's ACL administration, as Redpanda)."""
    return Rule(lambda caller, reg, p: caller.require(CLUSTER, CLUSTER_NAME, op))


def subject_names(op: Operation) -> Rule:
    """A list of subject names, kept to those the caller may `op`."""
    return Rule(_nothing, lambda caller, answer: [s for s in answer if caller.may(SUBJECT, s, op)])


def schemas_listed(op: Operation) -> Rule:
    """A list of schemas (each with its "subject"), kept to the subjects the caller may `op`."""
    return Rule(_nothing, lambda caller, answer: [d for d in answer if caller.may(SUBJECT, d["subject"], op)])


def schema_id(op: Operation, trim_names: bool = False) -> Rule:
    """`op` on some subject the path's id is registered under; with `trim_names`, the answer (a
    list of subject names) is kept to those the caller may `op`."""

    def check(caller: Caller, reg: Registry, p: list[str]) -> None:
        if not caller.checked or not p[0].isdigit() or int(p[0]) not in reg.state.ids:
            return  # unknown: the operation answers 40403
        subjects = {s for s, _ in reg.state.subjects_of_id(int(p[0]), deleted=True)}
        if not any(caller.may(SUBJECT, s, op) for s in subjects):
            raise denied(op, f"Schema: {p[0]}")

    trim = subject_names(op).trim if trim_names else None
    return Rule(check, trim)
