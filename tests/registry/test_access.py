"""ACLs on subjects, in this process (no socket): every route of the endpoint table in
`tidelog.registry.access` refused to a principal without ACLs, allowed with exactly the operation
the table names and refused with every other one; the listings trimmed; prefixed patterns, DENY,
super users and `allow.everyone.if.no.acl.found`; `/security/acls` (`acl_admin`)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from tidelog.core.acls import CLUSTER_NAME, REGISTRY_NAME, REGISTRY_OPERATIONS, AclBinding, AclFilter
from tidelog.core.acls import Operation as Op
from tidelog.core.acls import PatternType as P
from tidelog.core.acls import Permission as Perm
from tidelog.core.acls import ResourceType as R
from tidelog.core.config import load_config
from tidelog.registry import api
from tidelog.registry.access import Authorizer, Caller
from tidelog.registry.errors import RegistryError
from tidelog.registry.http import RegistryServer
from tidelog.server.broker import Broker
from tidelog.server.security.authorizer import Authorizer as BrokerAuthorizer

HOST = "10.0.0.7"


@contextlib.asynccontextmanager
async def registry_with_acls(tmp_path, *overrides: str):
    """A broker's registry with basic authentication and the broker's authorizer, read, no listener."""
    b = Broker(
        load_config(
            None,
            [
                f"log.dirs={tmp_path / 'data'}",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "offsets.topic.num.partitions=1",
                "schema.registry.listeners=http://127.0.0.1:0",
                "schema.registry.authentication=basic",
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users=User:admin",
                *overrides,
            ],
        )
    )
    b.partitions.start()
    server = b.schema_registry
    assert server is not None and server.access is not None
    server.registry.start()
    try:
        yield server, b
    finally:
        server.registry.stop()
        b.partitions.stop()


async def ask(
    server: RegistryServer,
    principal: str,
    method: str,
    path: str,
    body: Any = None,
    authorizer: Authorizer | None = None,
) -> tuple[int, Any]:
    """(status, answer) of one request by `principal` (errors as their bodies)."""
    assert server.access is not None
    caller = Caller(authorizer or server.access.authorizer, principal, HOST)
    try:
        return await api.dispatch(server.registry, method, path, {}, body, caller, server.access.admin)
    except RegistryError as e:
        return e.status, e.body()


def acl(rt: int, name: str, op: int, principal: str, perm: int = Perm.ALLOW, pattern: int = P.LITERAL) -> AclBinding:
    return AclBinding(int(rt), name, int(pattern), principal, "*", int(op), int(perm))


def avro(name: str, *fields: str) -> dict[str, str]:
    """A record schema; its fields are ints with a default (each version reads the others)."""
    body = {"type": "record", "name": name, "fields": [{"name": f, "type": "int", "default": 0} for f in fields]}
    return {"schema": json.dumps(body)}


DENIED = 403
IMPLIED_BY = {
    Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
    Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS},
}
SUBJECT, REGISTRY, CLUSTER = (R.SUBJECT, "s"), (R.REGISTRY, REGISTRY_NAME), (R.CLUSTER, CLUSTER_NAME)
# the endpoint table of tidelog.registry.access: (method, path, body, resource, operation)
TABLE: list[tuple[str, str, Any, tuple[int, str], Op]] = [
    ("GET", "/subjects/s/versions", None, SUBJECT, Op.DESCRIBE),
    ("POST", "/subjects/s/versions", avro("S"), SUBJECT, Op.WRITE),
    ("POST", "/subjects/s", avro("S"), SUBJECT, Op.READ),
    ("GET", "/subjects/s/versions/1", None, SUBJECT, Op.READ),
    ("GET", "/subjects/s/versions/latest/schema", None, SUBJECT, Op.READ),
    ("GET", "/subjects/s/versions/1/referencedby", None, REGISTRY, Op.DESCRIBE),
    ("POST", "/compatibility/subjects/s/versions", avro("S"), SUBJECT, Op.READ),
    ("POST", "/compatibility/subjects/s/versions/1", avro("S"), SUBJECT, Op.READ),
    ("GET", "/schemas/ids/1", None, SUBJECT, Op.READ),
    ("GET", "/schemas/ids/1/schema", None, SUBJECT, Op.READ),
    ("GET", "/schemas/ids/1/subjects", None, SUBJECT, Op.DESCRIBE),
    ("GET", "/schemas/ids/1/versions", None, REGISTRY, Op.DESCRIBE),
    ("GET", "/config", None, REGISTRY, Op.DESCRIBE_CONFIGS),
    ("PUT", "/config", {"compatibility": "BACKWARD"}, REGISTRY, Op.ALTER_CONFIGS),
    ("DELETE", "/config", None, REGISTRY, Op.ALTER_CONFIGS),
    ("GET", "/config/s", None, SUBJECT, Op.DESCRIBE_CONFIGS),
    ("PUT", "/config/s", {"compatibility": "NONE"}, SUBJECT, Op.ALTER_CONFIGS),
    ("DELETE", "/config/s", None, SUBJECT, Op.ALTER_CONFIGS),
    ("GET", "/mode", None, REGISTRY, Op.DESCRIBE_CONFIGS),
    ("PUT", "/mode", {"mode": "READWRITE"}, REGISTRY, Op.ALTER_CONFIGS),
    ("DELETE", "/mode", None, REGISTRY, Op.ALTER_CONFIGS),
    ("GET", "/mode/s", None, SUBJECT, Op.DESCRIBE_CONFIGS),
    ("PUT", "/mode/s", {"mode": "READWRITE"}, SUBJECT, Op.ALTER_CONFIGS),
    ("DELETE", "/mode/s", None, SUBJECT, Op.ALTER_CONFIGS),
    ("DELETE", "/subjects/s/versions/2", None, SUBJECT, Op.DELETE),
    ("DELETE", "/subjects/s", None, SUBJECT, Op.DELETE),
    ("GET", "/security/acls", None, CLUSTER, Op.DESCRIBE),
    ("POST", "/security/acls", [], CLUSTER, Op.ALTER),
    ("DELETE", "/security/acls", [], CLUSTER, Op.ALTER),
]


async def test_each_endpoint_needs_the_operation_its_table_row_names(tmp_path):
    async with registry_with_acls(tmp_path) as (server, b):
        store = b.security.acls
        assert (await ask(server, "User:admin", "POST", "/subjects/s/versions", avro("S")))[1] == {"id": 1}
        assert (await ask(server, "User:admin", "POST", "/subjects/s/versions", avro("S", "a")))[1] == {"id": 2}
        for method, path, body, (rt, name), op in TABLE:
            row = f"{method} {path}"
            refused = await ask(server, "User:nobody", method, path, body)
            assert refused[0] == DENIED and refused[1]["error_code"] == 40301, row
            others = [
                acl(rt, name, o, "User:other") for o in REGISTRY_OPERATIONS - {op, Op.ALL} - IMPLIED_BY.get(op, set())
            ]
            store.add([*others, acl(rt, name, op, "User:granted")])
            assert (await ask(server, "User:other", method, path, body))[0] == DENIED, row
            status, answer = await ask(server, "User:granted", method, path, body)
            assert status != DENIED, (row, answer)
            store.remove(AclFilter(resource_type=rt))
        assert (await ask(server, "User:nobody", "GET", "/subjects/s/versions"))[0] == DENIED


async def test_open_endpoints_and_the_refusal_body(tmp_path):
    async with registry_with_acls(tmp_path) as (server, _):
        for path in ("/", "/schemas/types", "/contexts"):
            assert (await ask(server, "User:nobody", "GET", path))[0] == 200, path
        assert await ask(server, "User:nobody", "POST", "/subjects/orders-value/versions", avro("O")) == (
            403,
            {"error_code": 40301, "message": "User is denied operation Write on Subject: orders-value"},
        )
        assert (await ask(server, "User:nobody", "PUT", "/config", {"compatibility": "NONE"}))[1]["message"] == (
            "User is denied operation AlterConfigs on Registry"
        )
        # an unknown id is answered as without ACLs; a refused subject, whether it exists or not, alike
        assert (await ask(server, "User:nobody", "GET", "/schemas/ids/99"))[1]["error_code"] == 40403
        assert (await ask(server, "User:nobody", "GET", "/subjects/none/versions"))[1]["error_code"] == 40301


async def test_listings_keep_what_the_principal_may_see(tmp_path):
    async with registry_with_acls(tmp_path) as (server, b):
        for subject in ("orders-value", "orders-key", "pay-value"):
            assert (await ask(server, "User:admin", "POST", f"/subjects/{subject}/versions", avro("Shared")))[0] == 200
        b.security.acls.add(
            [
                acl(R.SUBJECT, "orders-", Op.READ, "User:alice", pattern=P.PREFIXED),
                acl(R.SUBJECT, "orders-key", Op.ALL, "User:alice", Perm.DENY),  # DENY wins over the prefix
            ]
        )
        every = ["orders-key", "orders-value", "pay-value"]
        assert (await ask(server, "User:admin", "GET", "/subjects"))[1] == every  # a super user
        assert (await ask(server, "User:alice", "GET", "/subjects"))[1] == ["orders-value"]
        assert (await ask(server, "User:bob", "GET", "/subjects"))[1] == []
        assert [s["subject"] for s in (await ask(server, "User:alice", "GET", "/schemas"))[1]] == ["orders-value"]
        assert (await ask(server, "User:alice", "GET", "/schemas/ids/1/subjects"))[1] == ["orders-value"]
        assert (await ask(server, "User:alice", "GET", "/schemas/ids/1"))[0] == 200  # READ on one of its subjects
        assert (await ask(server, "User:bob", "GET", "/schemas/ids/1"))[0] == DENIED
        assert (await ask(server, "User:alice", "GET", "/subjects/orders-key/versions"))[0] == DENIED
        # allow.everyone.if.no.acl.found: a subject no binding applies to is open, the others are not
        lenient = BrokerAuthorizer(b.security.acls, frozenset({"User:admin"}), True)
        assert (await ask(server, "User:bob", "GET", "/subjects", authorizer=lenient))[1] == ["pay-value"]
        assert (await ask(server, "User:bob", "GET", "/subjects/pay-value/versions/1", authorizer=lenient))[0] == 200


async def test_security_acls_endpoint(tmp_path):
    async with registry_with_acls(tmp_path) as (server, b):
        alice_write = {
            "principal": "User:alice",
            "resource_type": "SUBJECT",
            "resource": "orders-",
            "pattern_type": "PREFIX",
            "operation": "WRITE",
            "permission": "ALLOW",
        }
        ops_read = {"principal": "User:ops", "resource_type": "REGISTRY", "operation": "DESCRIBE_CONFIGS"}
        ops_read["permission"] = "ALLOW"
        status, created = await ask(server, "User:admin", "POST", "/security/acls", [alice_write, ops_read])
        assert status == 200 and [a["pattern_type"] for a in created] == ["PREFIXED", "LITERAL"]
        assert created[1] == {**ops_read, "host": "*", "resource": "", "pattern_type": "LITERAL"}
        assert (await ask(server, "User:alice", "POST", "/subjects/orders-x/versions", avro("X")))[0] == 200
        assert (await ask(server, "User:ops", "GET", "/config"))[0] == 200
        assert (await ask(server, "User:alice", "GET", "/security/acls"))[0] == DENIED  # Describe on the cluster
        invalid = [
            {**alice_write, "operation": "CREATE"},  # not a registry operation
            {**ops_read, "resource": "x"},  # the registry has no name
            {**alice_write, "resource_type": "TOPIC"},  # Kafka's types go through CreateAcls
            {**alice_write, "principal": "alice"},
            {**alice_write, "extra": 1},
        ]
        for entry in invalid:
            status, answer = await ask(
                server, "User:admin", "POST", "/security/acls", [alice_write | {"host": "h"}, entry]
            )
            assert status == 400, (entry, answer)
        assert len(b.security.acls.bindings) == 2  # a refused request adds none of its ACLs
        listed = await ask(server, "User:admin", "GET", "/security/acls")
        assert sorted(a["principal"] for a in listed[1]) == ["User:alice", "User:ops"]
        status, removed = await ask(server, "User:admin", "DELETE", "/security/acls", [{"resource_type": "REGISTRY"}])
        assert status == 200 and [a["principal"] for a in removed] == ["User:ops"]
        assert (await ask(server, "User:ops", "GET", "/config"))[0] == DENIED


def test_acls_need_authentication(tmp_path):
    b = Broker(
        load_config(
            None,
            [
                f"log.dirs={tmp_path / 'data'}",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "schema.registry.listeners=http://127.0.0.1:0",
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ],
        )
    )
    assert b.schema_registry is not None and b.schema_registry.access is None  # unchanged without basic auth


@pytest.mark.parametrize("user", [None, "alice"])
async def test_without_acls_every_caller_may_do_everything(tmp_path, user):
    """No `access`: `/security/acls` is not served, and the registry answers as before."""
    async with registry_with_acls(tmp_path) as (server, _):
        caller = None if user is None else Caller(None, f"User:{user}", HOST)
        status, _ = await api.dispatch(server.registry, "POST", "/subjects/s/versions", {}, avro("S"), caller, None)
        assert status == 200
        with pytest.raises(RegistryError) as e:
            await api.dispatch(server.registry, "GET", "/security/acls", {}, None, caller, None)
        assert e.value.status == 404
