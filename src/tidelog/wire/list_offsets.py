"""ListOffsets (api key 2) v0-v11 codec, sans-IO: request and response bodies (no size, no header).

Request layout (fields present from the version given; v6+ flexible: compact strings and arrays,
and a tagged-field section after every struct):

    replica_id          int32
    isolation_level     int8     v2+
    topics[]            name string, partitions[]:
                          partition_index int32, current_leader_epoch int32 (v4+),
                          timestamp int64, max_num_offsets int32 (v0 only)
    timeout_ms          int32    v10+

Response layout:

    throttle_time_ms    int32    v2+
    topics[]            name string, partitions[]:
                          partition_index int32, error_code int16,
                          old_style_offsets []int64 (v0 only),
                          timestamp int64 (v1+), offset int64 (v1+), leader_epoch int32 (v4+)

Timestamps -1 (latest), -2 (earliest), -3 (max timestamp, v7+), -4 (earliest local, v8+), -5
(latest tiered, v9+), -6 (earliest pending upload, v11+) and others are the caller's to
interpret; this module only moves the numbers. v9 and v11 change only which sentinels a broker
accepts; v10 adds the request's timeout (for tiered storage lookups).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .primitives import Chunk, DecodeError, HotVersions, Reader, Writer, pick

__all__ = [
    "MIN_VERSION",
    "MAX_VERSION",
    "FIRST_FLEXIBLE_VERSION",
    "ListOffsetsRequest",
    "ListOffsetsRequestTopic",
    "ListOffsetsRequestPartition",
    "ListOffsetsResponse",
    "ListOffsetsResponseTopic",
    "ListOffsetsResponsePartition",
    "decode_request",
    "encode_request",
    "decode_response",
    "encode_response",
    "encode_response_sized",
]

API_KEY = 2
MIN_VERSION = 0
MAX_VERSION = 11
FIRST_TIMEOUT_VERSION = 10
FIRST_FLEXIBLE_VERSION = 6

_REQ_HEAD_V2 = struct.Struct(">ib")  # replica_id, isolation_level
_REQ_PART_V0 = struct.Struct(">iqi")  # partition_index, timestamp, max_num_offsets
_REQ_PART_V1 = struct.Struct(">iq")  # partition_index, timestamp
_REQ_PART_V4 = struct.Struct(">iiq")  # partition_index, current_leader_epoch, timestamp
_RESP_PART_V0 = struct.Struct(">ih")  # partition_index, error_code (then old_style_offsets)
_RESP_PART_V1 = struct.Struct(">ihqq")  # + timestamp, offset
_RESP_PART_V4 = struct.Struct(">ihqqi")  # + leader_epoch


@dataclass(slots=True)
class ListOffsetsRequestPartition:
    partition_index: int
    timestamp: int
    current_leader_epoch: int = -1  # v4+
    max_num_offsets: int = 1  # v0 only
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class ListOffsetsRequestTopic:
    name: str
    partitions: list[ListOffsetsRequestPartition]
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class ListOffsetsRequest:
    replica_id: int
    topics: list[ListOffsetsRequestTopic]
    isolation_level: int = 0  # v2+
    tagged_fields: dict[int, bytes] | None = None
    timeout_ms: int = 0  # v10+


@dataclass(slots=True)
class ListOffsetsResponsePartition:
    partition_index: int
    error_code: int = 0
    timestamp: int = -1  # v1+
    offset: int = -1  # v1+
    leader_epoch: int = -1  # v4+
    old_style_offsets: list[int] = field(default_factory=list)  # v0 only
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class ListOffsetsResponseTopic:
    name: str
    partitions: list[ListOffsetsResponsePartition]
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class ListOffsetsResponse:
    topics: list[ListOffsetsResponseTopic]
    throttle_time_ms: int = 0  # v2+
    tagged_fields: dict[int, bytes] | None = None


VERSIONS = HotVersions("ListOffsets", MIN_VERSION, MAX_VERSION, FIRST_FLEXIBLE_VERSION)


# ---- request ----------------------------------------------------------------------------------


def decode_request(body: bytes | memoryview, version: int, strict: bool = False) -> ListOffsetsRequest:
    """Decode a request body. Like Kafka's parser, bytes left after the body are ignored unless
    `strict` (golden-vector tests use strict=True). Malformed input raises DecodeError."""
    flex = VERSIONS.check(version, DecodeError)
    r = Reader(body)
    string, count, tags = pick(r, flex, "string", "array_len", "tagged_fields")
    if version >= 2:
        replica_id, isolation_level = r.fixed(_REQ_HEAD_V2)
    else:
        replica_id, isolation_level = r.int32(), 0
    req = ListOffsetsRequest(replica_id, [], isolation_level)
    fixed = r.fixed
    for _ in range(count()):
        name = string()
        parts = []
        for _ in range(count()):
            if version >= 4:
                p, epoch, ts = fixed(_REQ_PART_V4)
                parts.append(ListOffsetsRequestPartition(p, ts, epoch, 1, tags() if tags else None))
            elif version >= 1:
                p, ts = fixed(_REQ_PART_V1)
                parts.append(ListOffsetsRequestPartition(p, ts))
            else:
                p, ts, n = fixed(_REQ_PART_V0)
                parts.append(ListOffsetsRequestPartition(p, ts, -1, n))
        req.topics.append(ListOffsetsRequestTopic(name, parts, tags() if tags else None))
    if version >= FIRST_TIMEOUT_VERSION:
        req.timeout_ms = r.int32()
    if tags:
        req.tagged_fields = tags()
    if strict:
        r.expect_end()
    return req


def encode_request(req: ListOffsetsRequest, version: int) -> list[Chunk]:
    flex = VERSIONS.check(version)
    w = Writer()
    string, count, tags = pick(w, flex, "string", "array_len", "tagged_fields")
    if version >= 2:
        w.fixed(_REQ_HEAD_V2, req.replica_id, req.isolation_level)
    else:
        w.int32(req.replica_id)
    count(len(req.topics))
    for t in req.topics:
        string(t.name)
        count(len(t.partitions))
        for p in t.partitions:
            if version >= 4:
                w.fixed(_REQ_PART_V4, p.partition_index, p.current_leader_epoch, p.timestamp)
            elif version >= 1:
                w.fixed(_REQ_PART_V1, p.partition_index, p.timestamp)
            else:
                w.fixed(_REQ_PART_V0, p.partition_index, p.timestamp, p.max_num_offsets)
            if tags:
                tags(p.tagged_fields)
        if tags:
            tags(t.tagged_fields)
    if version >= FIRST_TIMEOUT_VERSION:
        w.int32(req.timeout_ms)
    if tags:
        tags(req.tagged_fields)
    return w.finish()


# ---- response ---------------------------------------------------------------------------------


def encode_response_sized(resp: ListOffsetsResponse, version: int) -> tuple[list[Chunk], int]:
    flex = VERSIONS.check(version)
    w = Writer()
    string, count, tags = pick(w, flex, "string", "array_len", "tagged_fields")
    if version >= 2:
        w.int32(resp.throttle_time_ms)
    count(len(resp.topics))
    for t in resp.topics:
        string(t.name)
        count(len(t.partitions))
        for p in t.partitions:
            if version >= 4:
                w.fixed(_RESP_PART_V4, p.partition_index, p.error_code, p.timestamp, p.offset, p.leader_epoch)
            elif version >= 1:
                w.fixed(_RESP_PART_V1, p.partition_index, p.error_code, p.timestamp, p.offset)
            else:
                w.fixed(_RESP_PART_V0, p.partition_index, p.error_code)
                w.array_len(len(p.old_style_offsets))
                w.int64_list(p.old_style_offsets)
            if tags:
                tags(p.tagged_fields)
        if tags:
            tags(t.tagged_fields)
    if tags:
        tags(resp.tagged_fields)
    size = w.size
    return w.finish(), size


def encode_response(resp: ListOffsetsResponse, version: int) -> list[Chunk]:
    return encode_response_sized(resp, version)[0]


def decode_response(body: bytes | memoryview, version: int) -> ListOffsetsResponse:
    flex = VERSIONS.check(version, DecodeError)
    r = Reader(body)
    string, count, tags = pick(r, flex, "string", "array_len", "tagged_fields")
    resp = ListOffsetsResponse([])
    if version >= 2:
        resp.throttle_time_ms = r.int32()
    fixed = r.fixed
    for _ in range(count()):
        name = string()
        parts = []
        for _ in range(count()):
            if version >= 4:
                p = ListOffsetsResponsePartition(*fixed(_RESP_PART_V4))
            elif version >= 1:
                p = ListOffsetsResponsePartition(*fixed(_RESP_PART_V1))
            else:
                p = ListOffsetsResponsePartition(*fixed(_RESP_PART_V0))
                p.old_style_offsets = r.int64_list(r.array_len())
            if tags:
                p.tagged_fields = tags()
            parts.append(p)
        resp.topics.append(ListOffsetsResponseTopic(name, parts, tags() if tags else None))
    if tags:
        resp.tagged_fields = tags()
    r.expect_end()
    return resp
