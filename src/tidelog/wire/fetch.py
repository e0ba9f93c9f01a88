"""Fetch (api key 1) v0-v18 codec, sans-IO: request and response bodies (no size, no header).

Request layout (fields present from the version given; v12+ flexible: compact strings, arrays
and records, and a tagged-field section after every struct):

    replica_id              int32    v0-v14 (v15+: tag 1 replica_state {replica_id int32,
                                     replica_epoch int64}, decoded into the same two fields)
    max_wait_ms             int32
    min_bytes               int32
    max_bytes               int32    v3+
    isolation_level         int8     v4+
    session_id              int32    v7+
    session_epoch           int32    v7+
    topics[]                topic string (v0-v12) | topic_id uuid (v13+), partitions[]:
                              partition int32, current_leader_epoch int32 (v9+),
                              fetch_offset int64, last_fetched_epoch int32 (v12+),
                              log_start_offset int64 (v5+), partition_max_bytes int32
                              [tag 0 replica_directory_id uuid, v17+ (KIP-853);
                               tag 1 high_watermark int64, v18+ (KIP-1166)]
    forgotten_topics_data[] v7+: topic string (v7-v12) | topic_id uuid (v13+), partitions []int32
    rack_id                 string   v11+
    [tag 0 cluster_id nullable string, v12+]

Response layout:

    throttle_time_ms        int32    v1+
    error_code              int16    v7+
    session_id              int32    v7+
    responses[]             topic string (v0-v12) | topic_id uuid (v13+), partitions[]:
                              partition_index int32, error_code int16, high_watermark int64,
                              last_stable_offset int64 (v4+), log_start_offset int64 (v5+),
                              aborted_transactions[] nullable (v4+): producer_id int64,
                                first_offset int64,
                              preferred_read_replica int32 (v11+),
                              records nullable records
                              [tags 0-2 diverging_epoch, current_leader, snapshot_id: raw]
    [tag 0 node_endpoints v16+: raw]

The response encoder never copies record data: each partition's `records` is a sequence of
chunks (bytes or memoryview, e.g. pread results from segment files) that go into the output list
by reference after their size prefix. `records_size` is their total length when the caller
already knows it (otherwise it is summed). A topic id of all zeros reads as None.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .primitives import Chunk, DecodeError, HotVersions, Reader, Writer, pick

__all__ = [
    "MIN_VERSION",
    "MAX_VERSION",
    "FIRST_FLEXIBLE_VERSION",
    "FetchRequest",
    "FetchRequestTopic",
    "FetchRequestPartition",
    "FetchForgottenTopic",
    "FetchResponse",
    "FetchResponseTopic",
    "FetchResponsePartition",
    "FetchAbortedTransaction",
    "decode_request",
    "encode_request",
    "decode_response",
    "encode_response",
    "encode_response_sized",
]

API_KEY = 1
MIN_VERSION = 0
MAX_VERSION = 18
FIRST_FLEXIBLE_VERSION = 12
FIRST_TOPIC_ID_VERSION = 13
FIRST_REPLICA_STATE_VERSION = 15
FIRST_DIRECTORY_ID_VERSION = 17
FIRST_REQUEST_HW_VERSION = 18
NO_REQUEST_HW = 0x7FFF_FFFF_FFFF_FFFF  # v18's default: the follower does not send its high watermark

_CLUSTER_ID_TAG = 0
_REPLICA_STATE_TAG = 1
_REPLICA_STATE = struct.Struct(">iq")
_DIRECTORY_ID_TAG = 0  # in a request partition, v17+
_HW_TAG = 1  # in a request partition, v18+
_INT64 = struct.Struct(">q")

# Request: the fixed fields before `topics`, by version.
_REQ_HEAD_V0 = struct.Struct(">iii")  # replica_id, max_wait_ms, min_bytes
_REQ_HEAD_V3 = struct.Struct(">iiii")  # + max_bytes
_REQ_HEAD_V4 = struct.Struct(">iiiib")  # + isolation_level
_REQ_HEAD_V7 = struct.Struct(">iiiibii")  # + session_id, session_epoch
_REQ_HEAD_V15 = struct.Struct(">iiibii")  # replica_id moved to a tagged field
# Request partitions.
_REQ_PART_V0 = struct.Struct(">iqi")  # partition, fetch_offset, partition_max_bytes
_REQ_PART_V5 = struct.Struct(">iqqi")  # partition, fetch_offset, log_start_offset, max_bytes
_REQ_PART_V9 = struct.Struct(">iiqqi")  # partition, current_leader_epoch, fetch_offset, lso, max
_REQ_PART_V12 = struct.Struct(">iiqiqi")  # ..., fetch_offset, last_fetched_epoch, lso, max
# Response.
_RESP_HEAD_V7 = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_RESP_PART_V0 = struct.Struct(">ihq")  # partition_index, error_code, high_watermark
_RESP_PART_V4 = struct.Struct(">ihqq")  # + last_stable_offset
_RESP_PART_V5 = struct.Struct(">ihqqq")  # + log_start_offset
_ABORTED = struct.Struct(">qq")


@dataclass(slots=True)
class FetchRequestPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    tagged_fields: dict[int, bytes] | None = None  # unknown tags
    replica_directory_id: uuid.UUID | None = None  # v17+ tag 0: the follower's log directory
    high_watermark: int = NO_REQUEST_HW  # v18+ tag 1: the high watermark the follower knows


@dataclass(slots=True)
class FetchRequestTopic:
    topic: str  # "" in v13+, where topics are named by topic_id
    partitions: list[FetchRequestPartition]
    topic_id: uuid.UUID | None = None  # v13+
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class FetchForgottenTopic:
    topic: str
    partitions: list[int]
    topic_id: uuid.UUID | None = None
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class FetchRequest:
    max_wait_ms: int
    min_bytes: int
    topics: list[FetchRequestTopic]
    max_bytes: int = 0x7FFF_FFFF
    isolation_level: int = 0
    session_id: int = 0
    session_epoch: int = -1
    forgotten_topics_data: list[FetchForgottenTopic] = field(default_factory=list)
    rack_id: str = ""
    replica_id: int = -1
    replica_epoch: int = -1  # v15+ only (replica_state)
    cluster_id: str | None = None  # v12+ tag 0
    tagged_fields: dict[int, bytes] | None = None  # unknown top-level tags


@dataclass(slots=True)
class FetchAbortedTransaction:
    producer_id: int
    first_offset: int
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class FetchResponsePartition:
    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: list[FetchAbortedTransaction] | None = None
    preferred_read_replica: int = -1
    # Record data as chunks, sent by reference; None is a null records field, () an empty one.
    records: Sequence[Chunk] | None = ()
    # Total length of `records` when known (saves summing); not part of equality.
    records_size: int | None = field(default=None, compare=False)
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class FetchResponseTopic:
    topic: str  # "" in v13+
    partitions: list[FetchResponsePartition]
    topic_id: uuid.UUID | None = None
    tagged_fields: dict[int, bytes] | None = None


@dataclass(slots=True)
class FetchResponse:
    responses: list[FetchResponseTopic]
    throttle_time_ms: int = 0
    error_code: int = 0
    session_id: int = 0
    tagged_fields: dict[int, bytes] | None = None


VERSIONS = HotVersions("Fetch", MIN_VERSION, MAX_VERSION, FIRST_FLEXIBLE_VERSION)


# ---- request ----------------------------------------------------------------------------------


def _req_head(version: int) -> struct.Struct:
    if version >= 15:
        return _REQ_HEAD_V15
    if version >= 7:
        return _REQ_HEAD_V7
    if version >= 4:
        return _REQ_HEAD_V4
    if version >= 3:
        return _REQ_HEAD_V3
    return _REQ_HEAD_V0


def _req_part(version: int) -> struct.Struct:
    if version >= 12:
        return _REQ_PART_V12
    if version >= 9:
        return _REQ_PART_V9
    if version >= 5:
        return _REQ_PART_V5
    return _REQ_PART_V0


def decode_request(body: bytes | memoryview, version: int, strict: bool = False) -> FetchRequest:
    """Decode a request body. Like Kafka's parser, bytes left after the body are ignored unless
    `strict` (golden-vector tests use strict=True). Malformed input raises DecodeError."""
    flex = VERSIONS.check(version, DecodeError)
    r = Reader(body)
    string, count, tags = pick(r, flex, "string", "array_len", "tagged_fields")
    by_id = version >= FIRST_TOPIC_ID_VERSION

    head: tuple[Any, ...] = r.fixed(_req_head(version))
    if version < 15:
        replica_id, head = head[0], head[1:]
    else:
        replica_id = -1
    req = FetchRequest(head[0], head[1], [], replica_id=replica_id)
    if version >= 3:
        req.max_bytes = head[2]
    if version >= 4:
        req.isolation_level = head[3]
    if version >= 7:
        req.session_id, req.session_epoch = head[4], head[5]

    ps = _req_part(version)
    fixed = r.fixed
    topics = req.topics
    for _ in range(count()):
        if by_id:
            name, topic_id = "", r.uuid()
        else:
            name, topic_id = string(), None
        parts = []
        if version >= 12:
            for _ in range(count()):
                p, cle, fo, lfe, lso, mb = fixed(ps)
                assert tags is not None  # v12+ is flexible
                part = FetchRequestPartition(p, fo, mb, cle, lfe, lso, tags())
                if part.tagged_fields and version >= FIRST_DIRECTORY_ID_VERSION:
                    _take_partition_tags(part, part.tagged_fields, version)
                parts.append(part)
        elif version >= 9:
            for _ in range(count()):
                p, cle, fo, lso, mb = fixed(ps)
                parts.append(FetchRequestPartition(p, fo, mb, cle, -1, lso))
        elif version >= 5:
            for _ in range(count()):
                p, fo, lso, mb = fixed(ps)
                parts.append(FetchRequestPartition(p, fo, mb, -1, -1, lso))
        else:
            for _ in range(count()):
                p, fo, mb = fixed(ps)
                parts.append(FetchRequestPartition(p, fo, mb))
        topics.append(FetchRequestTopic(name, parts, topic_id, tags() if tags else None))

    if version >= 7:
        forgotten = req.forgotten_topics_data
        for _ in range(count()):
            if by_id:
                name, topic_id = "", r.uuid()
            else:
                name, topic_id = string(), None
            partitions = r.int32_list(count())
            forgotten.append(FetchForgottenTopic(name, partitions, topic_id, tags() if tags else None))
    if version >= 11:
        req.rack_id = string()
    if tags:
        extra = tags()
        if extra:
            _take_request_tags(req, extra, version)
            req.tagged_fields = extra or None
    if strict:
        r.expect_end()
    return req


def _take_request_tags(req: FetchRequest, extra: dict[int, bytes], version: int) -> None:
    raw = extra.pop(_CLUSTER_ID_TAG, None)
    if raw is not None:
        tr = Reader(raw)
        req.cluster_id = tr.compact_nullable_string()
        tr.expect_end()
    if version >= FIRST_REPLICA_STATE_VERSION:
        raw = extra.pop(_REPLICA_STATE_TAG, None)
        if raw is not None:
            tr = Reader(raw)
            req.replica_id, req.replica_epoch = tr.fixed(_REPLICA_STATE)
            tr.tagged_fields()
            tr.expect_end()


def _take_partition_tags(part: FetchRequestPartition, extra: dict[int, bytes], version: int) -> None:
    """v17+: the follower's directory id (tag 0), v18+: its high watermark (tag 1), out of the
    partition's tags (what is left are unknown ones)."""
    raw = extra.pop(_DIRECTORY_ID_TAG, None)
    if raw is not None:
        tr = Reader(raw)
        part.replica_directory_id = tr.uuid()
        tr.expect_end()
    if version >= FIRST_REQUEST_HW_VERSION:
        raw = extra.pop(_HW_TAG, None)
        if raw is not None:
            tr = Reader(raw)
            part.high_watermark = tr.int64()
            tr.expect_end()
    if not extra:
        part.tagged_fields = None


def _partition_tags(p: FetchRequestPartition, version: int) -> dict[int, bytes] | None:
    tags = p.tagged_fields
    if version < FIRST_DIRECTORY_ID_VERSION:
        return tags
    known: dict[int, bytes] = {}
    if p.replica_directory_id is not None:
        known[_DIRECTORY_ID_TAG] = p.replica_directory_id.bytes
    if version >= FIRST_REQUEST_HW_VERSION and p.high_watermark != NO_REQUEST_HW:
        known[_HW_TAG] = _INT64.pack(p.high_watermark)
    if not known:
        return tags
    return {**tags, **known} if tags else known


def _request_tags(req: FetchRequest, version: int) -> dict[int, bytes] | None:
    tags = req.tagged_fields
    known: dict[int, bytes] = {}
    if req.cluster_id is not None:
        w = Writer()
        w.compact_string(req.cluster_id)
        known[_CLUSTER_ID_TAG] = bytes(w.buf)
    if version >= FIRST_REPLICA_STATE_VERSION and (req.replica_id != -1 or req.replica_epoch != -1):
        known[_REPLICA_STATE_TAG] = _REPLICA_STATE.pack(req.replica_id, req.replica_epoch) + b"\x00"
    if not known:
        return tags
    return {**tags, **known} if tags else known


def encode_request(req: FetchRequest, version: int) -> list[Chunk]:
    flex = VERSIONS.check(version)
    w = Writer()
    string, count, tags = pick(w, flex, "string", "array_len", "tagged_fields")
    by_id = version >= FIRST_TOPIC_ID_VERSION

    head = (req.max_wait_ms, req.min_bytes, req.max_bytes, req.isolation_level, req.session_id, req.session_epoch)
    if version >= 15:
        w.fixed(_REQ_HEAD_V15, *head)
    else:
        hs = _req_head(version)
        w.fixed(hs, req.replica_id, *head[: len(hs.format) - 2])

    ps = _req_part(version)
    fixed = w.fixed
    count(len(req.topics))
    for t in req.topics:
        if by_id:
            w.uuid(t.topic_id)
        else:
            string(t.topic)
        count(len(t.partitions))
        for p in t.partitions:
            if version >= 12:
                fixed(
                    ps,
                    p.partition,
                    p.current_leader_epoch,
                    p.fetch_offset,
                    p.last_fetched_epoch,
                    p.log_start_offset,
                    p.partition_max_bytes,
                )
                assert tags is not None  # v12+ is flexible
                tags(_partition_tags(p, version))
            elif version >= 9:
                fixed(
                    ps, p.partition, p.current_leader_epoch, p.fetch_offset, p.log_start_offset, p.partition_max_bytes
                )
            elif version >= 5:
                fixed(ps, p.partition, p.fetch_offset, p.log_start_offset, p.partition_max_bytes)
            else:
                fixed(ps, p.partition, p.fetch_offset, p.partition_max_bytes)
        if tags:
            tags(t.tagged_fields)
    if version >= 7:
        count(len(req.forgotten_topics_data))
        for f in req.forgotten_topics_data:
            if by_id:
                w.uuid(f.topic_id)
            else:
                string(f.topic)
            count(len(f.partitions))
            w.int32_list(f.partitions)
            if tags:
                tags(f.tagged_fields)
    if version >= 11:
        string(req.rack_id)
    if tags:
        tags(_request_tags(req, version))
    return w.finish()


# ---- response ---------------------------------------------------------------------------------


def encode_response_sized(resp: FetchResponse, version: int) -> tuple[list[Chunk], int]:
    """The response body as chunks (record chunks by reference), and its total size in bytes."""
    flex = VERSIONS.check(version)
    w = Writer()
    string, count, ncount, tags = pick(w, flex, "string", "array_len", "nullable_array_len", "tagged_fields")
    by_id = version >= FIRST_TOPIC_ID_VERSION
    fixed = w.fixed
    int32 = w.int32
    chunk = w.chunk
    uvarint = w.uvarint

    if version >= 7:
        fixed(_RESP_HEAD_V7, resp.throttle_time_ms, resp.error_code, resp.session_id)
    elif version >= 1:
        int32(resp.throttle_time_ms)
    count(len(resp.responses))
    for t in resp.responses:
        if by_id:
            w.uuid(t.topic_id)
        else:
            string(t.topic)
        count(len(t.partitions))
        for p in t.partitions:
            if version >= 5:
                fixed(
                    _RESP_PART_V5,
                    p.partition_index,
                    p.error_code,
                    p.high_watermark,
                    p.last_stable_offset,
                    p.log_start_offset,
                )
            elif version >= 4:
                fixed(_RESP_PART_V4, p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset)
            else:
                fixed(_RESP_PART_V0, p.partition_index, p.error_code, p.high_watermark)
            if version >= 4:
                aborted = p.aborted_transactions
                if aborted is None:
                    ncount(None)
                else:
                    ncount(len(aborted))
                    for a in aborted:
                        fixed(_ABORTED, a.producer_id, a.first_offset)
                        if tags:
                            tags(a.tagged_fields)
            if version >= 11:
                int32(p.preferred_read_replica)
            records = p.records
            if records is None:
                if flex:
                    uvarint(0)
                else:
                    int32(-1)
            else:
                size = p.records_size
                if size is None:
                    size = sum(map(len, records))
                if flex:
                    uvarint(size + 1)
                else:
                    int32(size)
                for c in records:
                    chunk(c)
            if tags:
                tags(p.tagged_fields)
        if tags:
            tags(t.tagged_fields)
    if tags:
        tags(resp.tagged_fields)
    size = w.size
    return w.finish(), size


def encode_response(resp: FetchResponse, version: int) -> list[Chunk]:
    return encode_response_sized(resp, version)[0]


def decode_response(body: bytes | memoryview, version: int) -> FetchResponse:
    """Records come back as a one-chunk tuple (a memoryview slice of `body`), or () or None."""
    flex = VERSIONS.check(version, DecodeError)
    r = Reader(body)
    string, count, ncount, nbytes, tags = pick(
        r, flex, "string", "array_len", "nullable_array_len", "nullable_bytes", "tagged_fields"
    )
    by_id = version >= FIRST_TOPIC_ID_VERSION
    resp = FetchResponse([])
    if version >= 7:
        resp.throttle_time_ms, resp.error_code, resp.session_id = r.fixed(_RESP_HEAD_V7)
    elif version >= 1:
        resp.throttle_time_ms = r.int32()
    ps = _RESP_PART_V5 if version >= 5 else _RESP_PART_V4 if version >= 4 else _RESP_PART_V0
    for _ in range(count()):
        if by_id:
            name, topic_id = "", r.uuid()
        else:
            name, topic_id = string(), None
        parts = []
        for _ in range(count()):
            p = FetchResponsePartition(*r.fixed(ps))
            if version >= 4:
                n = ncount()
                if n >= 0:
                    aborted = []
                    for _ in range(n):
                        pid, first = r.fixed(_ABORTED)
                        aborted.append(FetchAbortedTransaction(pid, first, tags() if tags else None))
                    p.aborted_transactions = aborted
            if version >= 11:
                p.preferred_read_replica = r.int32()
            records = nbytes()
            if records is None:
                p.records = None
            elif len(records):
                p.records = (records,)
                p.records_size = len(records)
            else:
                p.records_size = 0
            if tags:
                p.tagged_fields = tags()
            parts.append(p)
        resp.responses.append(FetchResponseTopic(name, parts, topic_id, tags() if tags else None))
    if tags:
        resp.tagged_fields = tags()
    r.expect_end()
    return resp
