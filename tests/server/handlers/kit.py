"""What the handler unit tests of this folder share: a handler called as the router calls it (a
typed request of one version, `handle(deps, ctx, request)` with the `Deps` the composition root
binds it to (`handlers.bound`), awaited when it answers later), its
answer encoded as that version's response (a misspelt or missing field fails here, as it would
on the wire) and read back as a client reads it. The broker is the real one from the composition
root (tests/server/test_handlers_unit.py): a real log in a temporary directory, no listener, no
socket.

Error codes are Kafka's (org.apache.kafka.common.protocol.Errors), written out here rather than
taken from tidelog's own table, so that a wrong entry there cannot hide a wrong answer."""

from __future__ import annotations

from types import SimpleNamespace

from kio.serial import entity_reader
from server.test_handlers_unit import (  # the request helpers of the handler unit tests
    T0,
    answer,
    batch,
    control_request,
    ctx,
    produce,
    produce_request,
    started_broker,
)

from tidelog.server.connection import RequestContext
from tidelog.server.handlers import bound, join_group, sync_group
from tidelog.wire import control
from tidelog.wire.frame import FrameDecoder
from tidelog.wire.schemas import response_schema

__all__ = ["T0", "batch", "started_broker"]  # re-exported from the first handler unit tests

# Metadata, FindCoordinator and DescribeCluster name the advertised endpoint; with an explicit port
# nothing asks for a bound socket (the listener on port 0 is never opened in these tests).
ADVERTISED = "advertised.listeners=PLAINTEXT://kafka.example:19092"
HOST, PORT = "kafka.example", 19092
NO_AUTHORIZED_OPERATIONS = -2147483648  # INT32_MIN: "not asked for"

# Kafka's error codes
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
INVALID_TOPIC_EXCEPTION = 17
ILLEGAL_GENERATION = 22
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
POLICY_VIOLATION = 44
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
SECURITY_DISABLED = 54
LOG_DIR_NOT_FOUND = 57
SASL_AUTHENTICATION_FAILED = 58
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
UNKNOWN_LEADER_EPOCH = 74
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNSTABLE_OFFSET_COMMIT = 88
PRODUCER_FENCED = 90
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93
UNKNOWN_TOPIC_ID = 100
TRANSACTIONAL_ID_NOT_FOUND = 105
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115


async def call(module, broker, version: int, data: dict, conn=None) -> dict:
    """`module.handle` on a request of `version` built from `data` (Kafka's field names); the
    answer as a client decodes it (nested dicts, kio's values: durations as timedelta)."""
    route = module.ROUTE
    assert route.min_version <= version <= route.max_version, f"api {route.api_key} does not route v{version}"
    c = ctx(broker, route.api_key, version)
    if conn is not None:
        c = RequestContext(c.header, conn, broker)
    out = await answer(bound(module, broker)(c, control_request(route.api_key, version, data)))
    return wire(route.api_key, version, out)


def wire(api_key: int, version: int, data) -> dict:
    """A handler's answer through the response codec of `version` and back."""
    body = control.encode_response(api_key, version, data)
    value, size = entity_reader(response_schema(api_key, version))(body, 0)
    assert size == len(body)
    return control.to_plain(value)


def connection(broker, listener: str = "PLAINTEXT", close_with=None):
    """The parts of a connection a handler and a security session use (no socket, no transport);
    `security` is the session the broker gives a connection on `listener` (None when nothing is
    checked there)."""
    conn = SimpleNamespace(
        listener_name=listener,
        peer=("127.0.0.1", 50000),
        transport=None,
        close_with=close_with or (lambda reason: None),
        decoder=FrameDecoder(100 * 1024 * 1024),
    )
    conn.security = broker.security.session(conn)
    return conn


async def produce_records(broker, n: int, partition: int = 0, topic: str = "t", **kw) -> int:
    """Append `n` records through the Produce handler; their base offset."""
    resp = await answer(
        bound(produce, broker)(ctx(broker, 0, 9), produce_request(batch(n, **kw), partition, topic=topic))
    )
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == 0, part
    return part.base_offset


# ConsumerProtocolSubscription v0: topics ["t"], no user data
SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"
ASSIGNMENT = b"assignment"


async def join(broker, group: str = "g") -> tuple[str, int]:
    """One consumer joins `group` and syncs (the group is Stable); (its member id, the generation)."""

    def request(member_id: str) -> dict:
        return {
            "group_id": group,
            "session_timeout": 30_000,
            "rebalance_timeout": 30_000,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
        }

    first = await call(join_group, broker, 5, request(""))  # MEMBER_ID_REQUIRED: join again with it
    joined = await call(join_group, broker, 5, request(first["member_id"]))
    member, generation = joined["member_id"], joined["generation_id"]
    synced = await call(
        sync_group,
        broker,
        4,
        {
            "group_id": group,
            "generation_id": generation,
            "member_id": member,
            "group_instance_id": None,
            "assignments": [{"member_id": member, "assignment": ASSIGNMENT}],
        },
    )
    assert synced["error_code"] == 0
    return member, generation
