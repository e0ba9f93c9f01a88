"""Security handlers, called directly (no socket): CreateAcls, DescribeAcls, DeleteAcls,
DescribeUserScramCredentials, AlterUserScramCredentials, SaslHandshake and SaslAuthenticate. The
SASL handlers run on the real per-connection security session the broker gives a connection of
its SASL_PLAINTEXT listener (a SimpleNamespace stands for the connection: no transport)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac

import pytest

from tidelog.core.acls import REGISTRY_NAME, AclBinding, AclFilter
from tidelog.core.acls import ResourceType as R
from tidelog.server.handlers import (
    alter_user_scram_credentials,
    create_acls,
    delete_acls,
    describe_acls,
    describe_user_scram_credentials,
    sasl_authenticate,
    sasl_handshake,
)

from .kit import (
    DUPLICATE_RESOURCE,
    ILLEGAL_SASL_STATE,
    INVALID_REQUEST,
    RESOURCE_NOT_FOUND,
    SASL_AUTHENTICATION_FAILED,
    SECURITY_DISABLED,
    UNACCEPTABLE_CREDENTIAL,
    UNSUPPORTED_SASL_MECHANISM,
    call,
    connection,
    started_broker,
)

# Kafka's ACL enums (org.apache.kafka.common.resource / acl)
ANY, TOPIC, GROUP, CLUSTER = 1, 2, 3, 4  # ResourceType
MATCH, LITERAL, PREFIXED = 2, 3, 4  # PatternType (ANY is 1)
READ, WRITE = 3, 4  # AclOperation (UNKNOWN 0, ANY 1)
DENY, ALLOW = 2, 3  # AclPermissionType
SCRAM_SHA_256, SCRAM_SHA_512 = 1, 2  # ScramMechanism
LISTENER = "SASL_PLAINTEXT"
JAAS = (
    "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
    'required user_alice="alice-secret";'
)


@pytest.fixture
async def secure(tmp_path):
    """A broker with an authorizer, a SASL_PLAINTEXT listener (PLAIN user alice, SCRAM-SHA-256) and a
    PLAINTEXT one (no listener is opened)."""
    async with started_broker(
        tmp_path,
        f"listeners={LISTENER}://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:admin",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        JAAS,
        "connections.max.reauth.ms=3600000",
        "connection.failed.authentication.delay.ms=0",
    ) as b:
        yield b


def binding(
    rt: int, name: str, principal: str, op: int = READ, permission: int = ALLOW, pattern: int = LITERAL, host: str = "*"
) -> dict:
    return {
        "resource_type": rt,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": op,
        "permission_type": permission,
    }


def acl_filter(
    rt: int = ANY,
    name: str | None = None,
    pattern: int = 1,
    principal: str | None = None,
    op: int = 1,
    permission: int = 1,
) -> dict:
    return {
        "resource_type_filter": rt,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": None,
        "operation": op,
        "permission_type": permission,
    }


def create(broker, *bindings: dict):
    return call(create_acls, broker, 3, {"creations": list(bindings)})


def describe(broker, **flt):
    return call(describe_acls, broker, 3, acl_filter(**flt))


ORDERS = binding(TOPIC, "orders", "User:alice")
APPS = binding(GROUP, "app-", "User:bob", pattern=PREFIXED, permission=DENY, host="10.0.0.1")


# ---- CreateAcls / DescribeAcls / DeleteAcls -------------------------------------------------


async def test_create_acls_then_describe_them(secure):
    resp = await create(secure, ORDERS, APPS)
    assert resp["results"] == [{"error_code": 0, "error_message": None}, {"error_code": 0, "error_message": None}]
    authorizer = secure.security.authorizer
    assert authorizer.authorize("User:alice", "10.9.9.9", TOPIC, "orders", READ)
    assert not authorizer.authorize("User:alice", "10.9.9.9", TOPIC, "orders", WRITE)
    everything = await describe(secure)
    assert (everything["error_code"], everything["error_message"]) == (0, None)
    assert sorted(everything["resources"], key=lambda r: r["resource_type"]) == [
        {
            "resource_type": TOPIC,
            "resource_name": "orders",
            "pattern_type": LITERAL,
            "acls": [{"principal": "User:alice", "host": "*", "operation": READ, "permission_type": ALLOW}],
        },
        {
            "resource_type": GROUP,
            "resource_name": "app-",
            "pattern_type": PREFIXED,
            "acls": [{"principal": "User:bob", "host": "10.0.0.1", "operation": READ, "permission_type": DENY}],
        },
    ]
    bobs = await describe(secure, principal="User:bob")
    assert [r["resource_name"] for r in bobs["resources"]] == ["app-"]
    # MATCH: the bindings that apply to group "app-orders" (the prefixed one)
    matching = await describe(secure, rt=GROUP, name="app-orders", pattern=MATCH)
    assert [(r["resource_name"], r["pattern_type"]) for r in matching["resources"]] == [("app-", PREFIXED)]


async def test_create_acls_refusals(secure):
    resp = await create(
        secure,
        binding(ANY, "x", "User:alice"),  # resource type ANY
        binding(TOPIC, "x", "User:alice", pattern=MATCH),  # only LITERAL or PREFIXED
        binding(TOPIC, "x", "User:alice", op=1),  # operation ANY
        binding(TOPIC, "x", "User:alice", permission=1),  # permission ANY
        binding(TOPIC, "", "User:alice"),  # empty resource name
        binding(CLUSTER, "my-cluster", "User:alice"),  # the cluster is "kafka-cluster"
        binding(TOPIC, "x", "alice"),  # no principal type
        ORDERS,
    )
    codes = [r["error_code"] for r in resp["results"]]
    assert codes == [INVALID_REQUEST] * 7 + [0]
    assert all(r["error_message"] for r in resp["results"][:7])
    described = await describe(secure)
    assert [r["resource_name"] for r in described["resources"]] == ["orders"]  # only the valid one was added


async def test_describe_acls_invalid_filter(secure):
    await create(secure, ORDERS)
    resp = await describe(secure, op=0)  # UNKNOWN operation
    assert (resp["error_code"], resp["resources"]) == (INVALID_REQUEST, [])
    assert resp["error_message"]


async def test_delete_acls_reports_what_it_removed(secure):
    await create(secure, ORDERS, APPS)
    resp = await call(
        delete_acls, secure, 3, {"filters": [acl_filter(TOPIC, "orders", LITERAL), acl_filter(rt=0)]}
    )  # UNKNOWN resource type
    removed, invalid = resp["filter_results"]
    assert removed == {
        "error_code": 0,
        "error_message": None,
        "matching_acls": [
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": TOPIC,
                "resource_name": "orders",
                "pattern_type": LITERAL,
                "principal": "User:alice",
                "host": "*",
                "operation": READ,
                "permission_type": ALLOW,
            }
        ],
    }
    assert (invalid["error_code"], invalid["matching_acls"]) == (INVALID_REQUEST, [])
    assert not secure.security.authorizer.authorize("User:alice", "10.9.9.9", TOPIC, "orders", READ)
    again = await call(delete_acls, secure, 3, {"filters": [acl_filter(TOPIC, "orders", LITERAL)]})
    assert again["filter_results"] == [{"error_code": 0, "error_message": None, "matching_acls": []}]
    assert [r["resource_name"] for r in (await describe(secure))["resources"]] == ["app-"]


async def test_kafka_acl_apis_never_see_the_schema_registrys_acls(secure):
    """SUBJECT and REGISTRY bindings (managed through the registry's /security/acls) are neither
    described nor deleted by a filter of any Kafka resource type: kafka-acls cannot handle them."""
    registry_acls = [
        AclBinding(R.SUBJECT, "orders-", PREFIXED, "User:alice", "*", WRITE, ALLOW),
        AclBinding(R.REGISTRY, REGISTRY_NAME, LITERAL, "User:ops", "*", READ, ALLOW),
    ]
    secure.security.acls.add(registry_acls)
    await create(secure, ORDERS)
    assert [r["resource_name"] for r in (await describe(secure))["resources"]] == ["orders"]
    deleted = await call(delete_acls, secure, 3, {"filters": [acl_filter()]})
    assert [len(r["matching_acls"]) for r in deleted["filter_results"]] == [1]  # ORDERS alone
    assert secure.security.acls.bindings == set(registry_acls)


async def test_acl_apis_without_an_authorizer(broker):
    created = await create(broker, ORDERS, APPS)
    assert [r["error_code"] for r in created["results"]] == [SECURITY_DISABLED, SECURITY_DISABLED]
    described = await describe(broker)
    assert (described["error_code"], described["resources"]) == (SECURITY_DISABLED, [])
    deleted = await call(delete_acls, broker, 3, {"filters": [acl_filter()]})
    assert [(r["error_code"], r["matching_acls"]) for r in deleted["filter_results"]] == [(SECURITY_DISABLED, [])]
    assert list(broker.security.acls.find(AclFilter())) == []  # nothing was stored


# ---- SCRAM credentials ----------------------------------------------------------------------


def upsertion(
    name: str,
    password: bytes = b"pw",
    mechanism: int = SCRAM_SHA_256,
    iterations: int = 4096,
    salt: bytes = b"0123456789abcdef",
) -> dict:
    digest = "sha512" if mechanism == SCRAM_SHA_512 else "sha256"
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": salt,
        "salted_password": hashlib.pbkdf2_hmac(digest, password, salt, iterations) if salt else b"",
    }


def alter(broker, upsertions=(), deletions=()):
    return call(
        alter_user_scram_credentials,
        broker,
        0,
        {"upsertions": list(upsertions), "deletions": [{"name": n, "mechanism": m} for n, m in deletions]},
    )


def describe_users(broker, users: list[str] | None):
    return call(
        describe_user_scram_credentials, broker, 0, {"users": None if users is None else [{"name": u} for u in users]}
    )


async def test_alter_user_scram_credentials_upsert_and_delete(secure):
    resp = await alter(secure, [upsertion("carol"), upsertion("dave", mechanism=SCRAM_SHA_512, iterations=8192)])
    assert resp["results"] == [
        {"user": "carol", "error_code": 0, "error_message": None},
        {"user": "dave", "error_code": 0, "error_message": None},
    ]
    described = await describe_users(secure, None)
    assert (described["error_code"], described["error_message"]) == (0, None)
    assert described["results"] == [
        {
            "user": "carol",
            "error_code": 0,
            "error_message": None,
            "credential_infos": [{"mechanism": SCRAM_SHA_256, "iterations": 4096}],
        },
        {
            "user": "dave",
            "error_code": 0,
            "error_message": None,
            "credential_infos": [{"mechanism": SCRAM_SHA_512, "iterations": 8192}],
        },
    ]
    stored = (secure.config.log_dirs[0] / "tidelog-scram.json").read_text()
    assert "carol" in stored and "pw" not in stored  # kept on disk, never the password
    gone = await alter(secure, deletions=[("dave", SCRAM_SHA_512)])
    assert gone["results"] == [{"user": "dave", "error_code": 0, "error_message": None}]
    assert [r["user"] for r in (await describe_users(secure, None))["results"]] == ["carol"]


async def test_alter_user_scram_credentials_refusals(secure):
    await alter(secure, [upsertion("carol")])
    resp = await alter(
        secure,
        [
            upsertion(""),
            upsertion("erin", mechanism=7),
            upsertion("frank", iterations=10),
            upsertion("gina", salt=b""),
            upsertion("carol"),
        ],
        deletions=[("nobody", SCRAM_SHA_256), ("carol", SCRAM_SHA_256)],
    )
    codes = {r["user"]: r["error_code"] for r in resp["results"]}
    assert codes == {
        "nobody": RESOURCE_NOT_FOUND,  # nothing to delete
        "carol": DUPLICATE_RESOURCE,  # deleted and upserted in one request
        "": UNACCEPTABLE_CREDENTIAL,
        "erin": UNSUPPORTED_SASL_MECHANISM,
        "frank": UNACCEPTABLE_CREDENTIAL,  # fewer iterations than SCRAM allows (4096)
        "gina": UNACCEPTABLE_CREDENTIAL,
    }
    assert all(r["error_message"] for r in resp["results"])
    assert [r["user"] for r in (await describe_users(secure, None))["results"]] == ["carol"]


async def test_describe_user_scram_credentials_unknown_user(secure):
    await alter(secure, [upsertion("carol")])
    resp = await describe_users(secure, ["nobody", "carol"])
    nobody, carol = resp["results"]
    assert (nobody["user"], nobody["error_code"], nobody["credential_infos"]) == ("nobody", RESOURCE_NOT_FOUND, [])
    assert nobody["error_message"] == "Attempt to describe a user credential that does not exist: nobody"
    assert (carol["error_code"], carol["credential_infos"]) == (0, [{"mechanism": SCRAM_SHA_256, "iterations": 4096}])


async def test_describe_user_scram_credentials_user_named_twice(secure):
    await alter(secure, [upsertion("carol")])
    resp = await describe_users(secure, ["carol", "carol"])
    assert [(r["user"], r["error_code"], r["credential_infos"]) for r in resp["results"]] == [
        ("carol", DUPLICATE_RESOURCE, [])
    ]


# ---- SaslHandshake / SaslAuthenticate -------------------------------------------------------


class Closes:
    """A connection's close_with: records the reason, and wakes a waiter."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.event = asyncio.Event()

    def __call__(self, reason: str) -> None:
        self.reasons.append(reason)
        self.event.set()

    async def wait(self) -> list[str]:
        await asyncio.wait_for(self.event.wait(), 10)
        return self.reasons


def sasl_connection(broker, closes=None):
    conn = connection(broker, LISTENER, closes)
    assert conn.security is not None and conn.security.sasl and not conn.security.authenticated
    return conn


def handshake(broker, conn, mechanism: str, version: int = 1):
    return call(sasl_handshake, broker, version, {"mechanism": mechanism}, conn)


def authenticate(broker, conn, token: bytes, version: int = 2):
    return call(sasl_authenticate, broker, version, {"auth_bytes": token}, conn)


async def test_sasl_handshake_offers_the_listeners_mechanisms(secure):
    conn = sasl_connection(secure)
    resp = await handshake(secure, conn, "PLAIN")
    assert resp == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}
    assert conn.security.mechanism == "PLAIN" and not conn.security.authenticated


async def test_sasl_handshake_refusals(secure):
    closes = Closes()
    conn = sasl_connection(secure, closes)
    resp = await handshake(secure, conn, "GSSAPI")
    assert resp == {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}
    assert await closes.wait() == ["unsupported SASL mechanism 'GSSAPI'"]  # after the answer, as Kafka
    plaintext = connection(secure, "PLAINTEXT")  # no SASL there
    assert plaintext.security is not None and not plaintext.security.sasl  # the authorizer's session
    assert await handshake(secure, plaintext, "PLAIN") == {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []}


async def test_sasl_authenticate_plain(secure):
    conn = sasl_connection(secure)
    await handshake(secure, conn, "PLAIN")
    resp = await authenticate(secure, conn, b"\0alice\0alice-secret")
    assert resp == {
        "error_code": 0,
        "error_message": None,
        "auth_bytes": b"",
        "session_lifetime": datetime.timedelta(hours=1),
    }  # connections.max.reauth.ms (KIP-368)
    assert conn.security.authenticated and conn.security.principal == "User:alice"


async def test_sasl_authenticate_scram_with_a_credential_set_through_the_api(secure):
    await alter(secure, [upsertion("carol", b"carol-pw")])
    conn = sasl_connection(secure)
    assert (await handshake(secure, conn, "SCRAM-SHA-256"))["error_code"] == 0
    bare = "n=carol,r=clientnonce123"
    first = await authenticate(secure, conn, ("n,," + bare).encode(), version=1)
    assert first["error_code"] == 0 and not conn.security.authenticated
    server_first = bytes(first["auth_bytes"]).decode()
    final, expected_signature = scram_final(b"carol-pw", bare, server_first)
    done = await authenticate(secure, conn, final, version=1)
    assert (done["error_code"], bytes(done["auth_bytes"])) == (0, expected_signature)  # the server proves itself
    assert done["session_lifetime"] == datetime.timedelta(hours=1)
    assert conn.security.authenticated and conn.security.principal == "User:carol"


async def test_sasl_authenticate_refusals(secure):
    closes = Closes()
    conn = sasl_connection(secure, closes)
    before_handshake = await authenticate(secure, conn, b"\0alice\0alice-secret")
    assert (before_handshake["error_code"], before_handshake["auth_bytes"]) == (ILLEGAL_SASL_STATE, b"")
    assert await closes.wait() == ["SaslAuthenticate without a SaslHandshake"]
    closes = Closes()
    conn = sasl_connection(secure, closes)
    await handshake(secure, conn, "PLAIN")
    wrong = await authenticate(secure, conn, b"\0alice\0guess")
    assert (wrong["error_code"], wrong["auth_bytes"]) == (SASL_AUTHENTICATION_FAILED, b"")
    assert wrong["error_message"]
    assert await closes.wait() == ["SASL authentication failed"]
    assert not conn.security.authenticated
    plaintext = connection(secure, "PLAINTEXT")
    refused = await authenticate(secure, plaintext, b"\0alice\0alice-secret")
    assert (refused["error_code"], refused["error_message"]) == (ILLEGAL_SASL_STATE, "not a SASL listener")


def scram_final(password: bytes, client_first_bare: str, server_first: str) -> tuple[bytes, bytes]:
    """RFC 5802's client-final-message for SCRAM-SHA-256, and the server signature it must answer."""
    attrs = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password, base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    server_signature = hmac.new(hmac.new(salted, b"Server Key", "sha256").digest(), auth_message, "sha256").digest()
    return (
        f"{without_proof},p={base64.b64encode(proof).decode()}".encode(),
        b"v=" + base64.b64encode(server_signature),
    )
