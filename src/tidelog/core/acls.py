"""ACL bindings and their store: Kafka's resource types, pattern types, operations, permissions.

A binding is (resource type, name, pattern type, principal, host, operation, permission), the
seven fields of CreateAcls. Patterns are LITERAL (exact name, or `*` for every name) or PREFIXED
(names starting with it). A filter (DescribeAcls, DeleteAcls) uses ANY for "every value" in its
enum fields and None for "every value" in its string fields; pattern type MATCH finds every
binding that would apply to the named resource (literal, `*` and matching prefixes).

Two more resource types belong to the schema registry, as in Redpanda: SUBJECT (a subject's
name; literal, `*` or prefixed) and REGISTRY (the registry as a whole: one resource, named "").
Their codes lie outside Kafka's (an int8 on the wire), so no Kafka request can carry them; a
filter's resource type ANY means every Kafka type and never matches them, so DescribeAcls,
DeleteAcls and CreateAcls (kafka-acls, `tidelog acls`) neither see nor touch them: they are
managed through the registry's `/security/acls` (`tidelog schemas acl`). They are stored, and
in a cluster replicated, with the others.

The store keeps the bindings in `tidelog-acls.json` in the data directory, rewritten atomically
(temporary file, fsync, rename) on every change, and read once at start.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from .private_files import narrow_mode, write_private_json

FILE_NAME = "tidelog-acls.json"
WILDCARD = "*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7
    REGISTRY = 200  # the schema registry's, beyond Kafka's int8 codes (see above)
    SUBJECT = 201


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CLUSTER_NAME = "kafka-cluster"

REGISTRY_TYPES = frozenset({ResourceType.REGISTRY, ResourceType.SUBJECT})
REGISTRY_NAME = ""  # the REGISTRY resource's one name
REGISTRY_OPERATIONS = frozenset(
    {
        Operation.ALL,
        Operation.READ,
        Operation.WRITE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    }
)


@dataclass(frozen=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def invalid_reason(self) -> str | None:
        """Why this binding cannot be created (None when it can), as Kafka's CreateAcls checks;
        a registry binding also needs an operation the registry checks (`REGISTRY_OPERATIONS`),
        and the REGISTRY resource is one literal, named ""."""
        if (
            self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY)
            or self.resource_type not in ResourceType._value2member_map_
        ):
            return "invalid resource type"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return "pattern type must be LITERAL or PREFIXED"
        if self.operation in (Operation.UNKNOWN, Operation.ANY) or self.operation not in Operation._value2member_map_:
            return "invalid operation"
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            return "permission must be ALLOW or DENY"
        if self.resource_type in REGISTRY_TYPES and self.operation not in REGISTRY_OPERATIONS:
            return f"operation {Operation(self.operation).name} does not apply to the schema registry"
        if self.resource_type == ResourceType.REGISTRY:
            if self.resource_name != REGISTRY_NAME or self.pattern_type != PatternType.LITERAL:
                return "the registry resource is one literal without a name"
        elif not self.resource_name:
            return "empty resource name"
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return f"the cluster resource is named {CLUSTER_NAME}"
        if ":" not in self.principal:
            return f"principal {self.principal!r} is not TYPE:NAME"
        if not self.host:
            return "empty host"
        return None


@dataclass(frozen=True)
class AclFilter:
    resource_type: int = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: int = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: int = Operation.ANY
    permission: int = Permission.ANY

    def matches(self, b: AclBinding) -> bool:
        """Whether the binding is one this filter selects; resource type ANY selects Kafka's
        types only (never a schema registry binding)."""
        if self.resource_type == ResourceType.ANY:
            if b.resource_type in REGISTRY_TYPES:
                return False
        elif self.resource_type != b.resource_type:
            return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != Operation.ANY and self.operation != b.operation:
            return False
        if self.permission != Permission.ANY and self.permission != b.permission:
            return False
        pt, name = self.pattern_type, self.resource_name
        if pt == PatternType.MATCH:
            if name is None:
                return True
            if b.pattern_type == PatternType.LITERAL:
                return b.resource_name in (name, WILDCARD)
            return name.startswith(b.resource_name)
        if pt != PatternType.ANY and pt != b.pattern_type:
            return False
        return name is None or name == b.resource_name


class AclStore:
    """Every binding, indexed by (resource type, literal name) and by resource type for prefixes."""

    def __init__(self, data_dir: Path | None) -> None:
        self.path = Path(data_dir) / FILE_NAME if data_dir is not None else None
        self.bindings: set[AclBinding] = set()
        self._literal: dict[tuple[int, str], list[AclBinding]] = {}
        self._prefixed: dict[int, list[AclBinding]] = {}
        if self.path is not None and self.path.exists():
            narrow_mode(self.path)
            for item in json.loads(self.path.read_text()):
                self.bindings.add(AclBinding(**item))
        self._reindex()

    def _reindex(self) -> None:
        self._literal.clear()
        self._prefixed.clear()
        for b in self.bindings:
            if b.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(b.resource_type, []).append(b)
            else:
                self._literal.setdefault((b.resource_type, b.resource_name), []).append(b)

    def applying_to(self, resource_type: int, name: str) -> list[AclBinding]:
        """Bindings whose pattern covers this resource: literal name, `*`, prefixes of the name."""
        out = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            out.extend(self._literal.get((resource_type, WILDCARD), ()))
        for b in self._prefixed.get(resource_type, ()):
            if name.startswith(b.resource_name):
                out.append(b)
        return out

    def of_type(self, resource_type: int) -> list[AclBinding]:
        return [b for b in self.bindings if b.resource_type == resource_type]

    def find(self, flt: AclFilter) -> list[AclBinding]:
        return sorted((b for b in self.bindings if flt.matches(b)), key=_order)

    def add(self, bindings: list[AclBinding]) -> None:
        self.bindings.update(bindings)
        self._changed()

    def remove(self, flt: AclFilter) -> list[AclBinding]:
        gone = self.find(flt)
        if gone:
            self.bindings.difference_update(gone)
            self._changed()
        return gone

    @staticmethod
    def binding(fields: dict[str, Any]) -> AclBinding:
        """A binding from its fields (as `dataclasses.asdict` gives them)."""
        return AclBinding(**fields)

    def replace(self, bindings: list[AclBinding]) -> None:
        """Cluster mode: the cluster's bindings, as etcd holds them now."""
        if set(bindings) != self.bindings:
            self.bindings = set(bindings)
            self._changed()

    def _changed(self) -> None:
        self._reindex()
        if self.path is None:
            return
        write_private_json(self.path, [asdict(b) for b in sorted(self.bindings, key=_order)])


def _order(b: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    return (b.resource_type, b.resource_name, b.pattern_type, b.principal, b.host, b.operation, b.permission)
