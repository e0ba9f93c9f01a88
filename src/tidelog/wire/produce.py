"""Produce (api key 0) v0-v13 codec, sans-IO: request and response bodies (no size, no header).

Request layout (fields present from the version given; v9+ flexible: compact strings, arrays and
records, and a tagged-field section after every struct):

    transactional_id   nullable string   v3+
    acks               int16
    timeout_ms         int32
    topic_data[]       name string (v0-12) | topic_id uuid (v13+, KIP-516; `name` is then ""),
                       partition_data[]: index int32, records nullable records

v12 is v11's layout (a transactional client of transaction version 2, KIP-890: the broker adds
the partitions to the transaction itself).

`records` is never decoded: it is a zero-copy memoryview slice of the request body (the record
batches exactly as the client sent them); holding it keeps the whole request frame alive.

Response layout:

    responses[]        name string (v0-12) | topic_id uuid (v13+), partition_responses[]:
                         index int32, error_code int16, base_offset int64,
                         log_append_time_ms int64 (v2+), log_start_offset int64 (v5+),
                         record_errors[] (v8+): batch_index int32, batch_index_error_message
                           nullable string,
                         error_message nullable string (v8+),
                         [tag 0 current_leader (v10+): kept raw in tagged_fields]
    throttle_time_ms   int32  v1+
    [tag 0 node_endpoints (v10+): kept raw in tagged_fields]
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from .primitives import Chunk, DecodeError, HotVersions, Reader, Writer, pick

__all__ = [
    "MIN_VERSION",
    "MAX_VERSION",
    "FIRST_FLEXIBLE_VERSION",
    "ProduceRequest",
    "ProduceRequestTopic",
    "ProduceRequestPartition",
    "ProduceResponse",
    "ProduceResponseTopic",
    "ProduceResponsePartition",
    "ProduceRecordError",
    "decode_request",
    "encode_request",
    "decode_response",
    "encode_response",
    "encode_response_sized",
]

API_KEY = 0
MIN_VERSION = 0
MAX_VERSION = 13
FIRST_TOPIC_ID_VERSION = 13
FIRST_FLEXIBLE_VERSION = 9

_ACKS_TIMEOUT = struct.Struct(">hi")
_PART_V0 = struct.Struct(">ihq")  # index, error_code, base_offset
_PART_V2 = struct.Struct(">ihqq")  # + log_append_time_ms
_PART_V5 = struct.Struct(">ihqqq")  # + log_start_offset


@dataclass(slots=True)
class ProduceRequestPartition:
    index: int
    records: memoryview | bytes | None
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class ProduceRequestTopic:
    name: str  # "" in v13+ until the broker resolves `topic_id`
    partition_data: list[ProduceRequestPartition]
    tagged_fields: dict[int, bytes] | None = None
    topic_id: uuid.UUID | None = None  # v13+


@dataclass(slots=True)
class ProduceRequest:
    acks: int
    timeout_ms: int
    topic_data: list[ProduceRequestTopic]
    transactional_id: str | None = None
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class ProduceRecordError:
    batch_index: int
    batch_index_error_message: str | None = None
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class ProduceResponsePartition:
    index: int
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: list[ProduceRecordError] = field(default_factory=list)
    error_message: str | None = None
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class ProduceResponseTopic:
    name: str
    partition_responses: list[ProduceResponsePartition]
    tagged_fields: dict[int, bytes] | None = None
    topic_id: uuid.UUID | None = None  # v13+


@dataclass(slots=True)
class ProduceResponse:
    responses: list[ProduceResponseTopic]
    throttle_time_ms: int = 0
    tagged_fields: dict[int, bytes] | None = None


VERSIONS = HotVersions("Produce", MIN_VERSION, MAX_VERSION, FIRST_FLEXIBLE_VERSION)


# ---- request ----------------------------------------------------------------------------------


def decode_request(body: bytes | memoryview, version: int, strict: bool = False) -> ProduceRequest:
    """Decode a request body. Like Kafka's parser, bytes left after the body are ignored unless
    `strict` (golden-vector tests use strict=True). Malformed input raises DecodeError."""
    flex = VERSIONS.check(version, DecodeError)
    r = Reader(body)
    string, count, records, tags = pick(r, flex, "string", "array_len", "nullable_bytes", "tagged_fields")
    transactional_id = None
    if version >= 3:
        transactional_id = r.compact_nullable_string() if tags else r.nullable_string()
    acks, timeout_ms = r.fixed(_ACKS_TIMEOUT)
    int32 = r.int32
    topics = []
    by_id = version >= FIRST_TOPIC_ID_VERSION
    for _ in range(count()):
        topic_id = r.uuid() if by_id else None
        name = "" if by_id else string()
        parts = []
        for _ in range(count()):
            parts.append(ProduceRequestPartition(int32(), records(), tags() if tags else None))
        topics.append(ProduceRequestTopic(name, parts, tags() if tags else None, topic_id))
    req = ProduceRequest(acks, timeout_ms, topics, transactional_id, tags() if tags else None)
    if strict:
        r.expect_end()
    return req


def encode_request(req: ProduceRequest, version: int) -> list[Chunk]:
    """The request body; record payloads of 4 KiB or more are separate chunks, by reference."""
    flex = VERSIONS.check(version)
    w = Writer()
    string, count, records, tags = pick(w, flex, "string", "array_len", "nullable_bytes", "tagged_fields")
    if version >= 3:
        (w.compact_nullable_string if flex else w.nullable_string)(req.transactional_id)
    w.fixed(_ACKS_TIMEOUT, req.acks, req.timeout_ms)
    count(len(req.topic_data))
    for t in req.topic_data:
        if version >= FIRST_TOPIC_ID_VERSION:
            w.uuid(t.topic_id)
        else:
            string(t.name)
        count(len(t.partition_data))
        for p in t.partition_data:
            w.int32(p.index)
            records(p.records)
            if tags:
                tags(p.tagged_fields)
        if tags:
            tags(t.tagged_fields)
    if tags:
        tags(req.tagged_fields)
    return w.finish()


# ---- response ---------------------------------------------------------------------------------


def _part_struct(version: int) -> struct.Struct:
    return _PART_V5 if version >= 5 else _PART_V2 if version >= 2 else _PART_V0


def encode_response_sized(resp: ProduceResponse, version: int) -> tuple[list[Chunk], int]:
    """The response body as chunks, and its total size in bytes."""
    flex = VERSIONS.check(version)
    w = Writer()
    string, count, nstring, tags = pick(w, flex, "string", "array_len", "nullable_string", "tagged_fields")
    fixed = w.fixed
    ps = _part_struct(version)
    n = len(ps.format) - 1
    count(len(resp.responses))
    by_id = version >= FIRST_TOPIC_ID_VERSION
    for t in resp.responses:
        if by_id:
            w.uuid(t.topic_id)
        else:
            string(t.name)
        count(len(t.partition_responses))
        for p in t.partition_responses:
            fixed(ps, *(p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset)[:n])
            if version >= 8:
                count(len(p.record_errors))
                for e in p.record_errors:
                    w.int32(e.batch_index)
                    nstring(e.batch_index_error_message)
                    if tags:
                        tags(e.tagged_fields)
                nstring(p.error_message)
            if tags:
                tags(p.tagged_fields)
        if tags:
            tags(t.tagged_fields)
    if version >= 1:
        w.int32(resp.throttle_time_ms)
    if tags:
        tags(resp.tagged_fields)
    size = w.size
    return w.finish(), size


def encode_response(resp: ProduceResponse, version: int) -> list[Chunk]:
    return encode_response_sized(resp, version)[0]


def decode_response(body: bytes | memoryview, version: int) -> ProduceResponse:
    flex = VERSIONS.check(version, DecodeError)
    r = Reader(body)
    string, count, nstring, tags = pick(r, flex, "string", "array_len", "nullable_string", "tagged_fields")
    ps = _part_struct(version)
    topics = []
    by_id = version >= FIRST_TOPIC_ID_VERSION
    for _ in range(count()):
        topic_id = r.uuid() if by_id else None
        name = "" if by_id else string()
        parts = []
        for _ in range(count()):
            p = ProduceResponsePartition(*r.fixed(ps))
            if version >= 8:
                for _ in range(count()):
                    p.record_errors.append(ProduceRecordError(r.int32(), nstring(), tags() if tags else None))
                p.error_message = nstring()
            if tags:
                p.tagged_fields = tags()
            parts.append(p)
        topics.append(ProduceResponseTopic(name, parts, tags() if tags else None, topic_id))
    resp = ProduceResponse(topics)
    if version >= 1:
        resp.throttle_time_ms = r.int32()
    if tags:
        resp.tagged_fields = tags()
    r.expect_end()
    return resp
