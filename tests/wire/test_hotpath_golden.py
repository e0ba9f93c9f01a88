"""Every captured Produce, Fetch and ListOffsets frame decodes, consumes every byte, and
re-encodes to exactly the bytes the client sent."""

import base64
import json
import struct

import pytest

from tidelog.wire import fetch, list_offsets, produce
from tidelog.wire.primitives import DecodeError, Reader

CODECS = {0: produce, 1: fetch, 2: list_offsets}


def skip_request_header(frame: bytes, flexible: bool) -> tuple[int, int, int]:
    """(api_key, api_version, body offset); header v1, or v2 with a tagged-field section."""
    r = Reader(frame)
    api_key, api_version, _correlation_id = r.fixed(struct.Struct(">hhi"))
    r.nullable_string()
    if flexible:
        r.tagged_fields()
    return api_key, api_version, r.pos


def hot_frames(path):
    for line in path.read_text().splitlines():
        d = json.loads(line)
        if d["api_key"] in CODECS:
            yield d, base64.b64decode(d["frame_b64"])


def test_every_captured_hot_path_frame_round_trips(captures_path):
    seen: dict[tuple[int, int], int] = {}
    for d, frame in hot_frames(captures_path):
        key, version = d["api_key"], d["api_version"]
        codec = CODECS[key]
        assert codec.MIN_VERSION <= version <= codec.MAX_VERSION, d["client"]
        k, v, pos = skip_request_header(frame, version >= codec.FIRST_FLEXIBLE_VERSION)
        assert (k, v) == (key, version)
        body = memoryview(frame)[pos:]
        req = codec.decode_request(body, version, strict=True)
        out = b"".join(codec.encode_request(req, version))
        assert out == bytes(body), f"{d['client']} api {key} v{version} re-encodes differently"
        seen[(key, version)] = seen.get((key, version), 0) + 1
    # Every version the four clients use: Produce 7-10, Fetch 11/12/16, ListOffsets 2/3/5/7.
    assert {(0, 7), (0, 9), (0, 10), (1, 11), (1, 12), (1, 16), (2, 2), (2, 5), (2, 7)} <= set(seen)
    assert sum(seen.values()) > 350


def test_captured_produce_records_are_zero_copy_slices(captures_path):
    for d, frame in hot_frames(captures_path):
        if d["api_key"] != 0:
            continue
        version = d["api_version"]
        _, _, pos = skip_request_header(frame, version >= produce.FIRST_FLEXIBLE_VERSION)
        req = produce.decode_request(memoryview(frame)[pos:], version)
        for t in req.topic_data:
            for p in t.partition_data:
                assert isinstance(p.records, memoryview) and p.records.obj is frame
                # A record batch v2: base offset, length, leader epoch, magic 2.
                assert len(p.records) >= 61 and p.records[16] == 2


def test_captured_fetch_fields_are_sensible(captures_path):
    versions = set()
    for d, frame in hot_frames(captures_path):
        if d["api_key"] != 1:
            continue
        version = d["api_version"]
        _, _, pos = skip_request_header(frame, version >= fetch.FIRST_FLEXIBLE_VERSION)
        req = fetch.decode_request(memoryview(frame)[pos:], version)
        assert req.replica_id == -1 and req.max_wait_ms >= 0
        for t in req.topics:
            assert (t.topic_id is not None) if version >= 13 else (t.topic != "")
            for p in t.partitions:
                assert p.fetch_offset >= 0 and p.partition_max_bytes > 0
        versions.add(version)
    assert 16 in versions


@pytest.mark.parametrize("key", sorted(CODECS))
def test_every_truncation_of_captured_frames_raises_decode_error(captures_path, key):
    codec = CODECS[key]
    done = set()
    for d, frame in hot_frames(captures_path):
        version = d["api_version"]
        if d["api_key"] != key or version in done:
            continue
        done.add(version)
        _, _, pos = skip_request_header(frame, version >= codec.FIRST_FLEXIBLE_VERSION)
        body = frame[pos:]
        for cut in range(len(body)):
            with pytest.raises(DecodeError):
                codec.decode_request(memoryview(body)[:cut], version, strict=True)
        with pytest.raises(DecodeError):
            codec.decode_request(body + b"\x00", version, strict=True)
    assert done
