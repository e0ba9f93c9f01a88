"""Every captured control-plane frame decodes, consumes every byte, and re-encodes identically."""

import base64
import dataclasses
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial import entity_writer

from tidelog.wire import control
from tidelog.wire.frame import FrameDecoder, FrameTooLarge, InvalidFrame
from tidelog.wire.header import parse_request_header, peek_key_version
from tidelog.wire.schemas import request_schema, response_schema

HOT_PATH = {0, 1, 2}


def frames(path):
    for line in path.read_text().splitlines():
        d = json.loads(line)
        yield d, base64.b64decode(d["frame_b64"])


def test_every_captured_control_frame_round_trips(captures_path):
    count = 0
    for d, frame in frames(captures_path):
        key, version, _ = peek_key_version(frame)
        if key in HOT_PATH:
            continue
        flexible = control.flexible(key, version)
        assert flexible is not None, f"no schema for {d['client']} api {key} v{version}"
        header, pos = parse_request_header(frame, flexible)
        assert header.api_key == d["api_key"] and header.api_version == d["api_version"]
        req = control.decode_request(key, version, frame, pos, strict=True)
        buf = io.BytesIO()
        entity_writer(request_schema(key, version))(buf, req)
        assert buf.getvalue() == frame[pos:], f"{d['client']} api {key} v{version} re-encodes differently"
        count += 1
    assert count > 600


def _sample(cls, depth: int = 0):
    """An instance of a schema class with a non-default value in every field (arrays of two)."""
    import datetime
    import uuid

    from kio.schema.errors import ErrorCode

    values = {
        "int8": 7,
        "int16": 300,
        "uint16": 300,
        "int32": 70_000,
        "uint32": 70_000,
        "int64": 5_000_000_000,
        "float64": 1.5,
        "bool": True,
        "string": "s\u00e9",
        "bytes": b"\x01\x02",
        "records": b"\x03",
        "uuid": uuid.UUID(int=7),
        "error_code": ErrorCode.unknown_topic_or_partition,
        "timedelta_i32": datetime.timedelta(milliseconds=1234),
        "timedelta_i64": datetime.timedelta(milliseconds=1234),
        "datetime_i64": datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC),
    }
    data = {}
    for name, kafka_type, is_array, entity, _default in control._plan(cls):
        if entity is not None:
            one = _sample(entity, depth + 1)
            data[name] = (one, one) if is_array else one
        else:
            v = values[kafka_type]
            data[name] = (v, v) if is_array else v
    return cls(**data)


@pytest.mark.parametrize("key,version", [(19, 0), (19, 1), (20, 0), (32, 0), (8, 0), (8, 1), (9, 0)])
def test_derived_old_versions_round_trip(key, version):
    """Schemas kio no longer ships are derived from its oldest by field edits: a request and a
    response with every field set re-encode to the same bytes and decode to equal objects, and
    the derived classes really lack the fields their version lacks."""
    from kio.serial import entity_reader

    req_cls, resp_cls = request_schema(key, version), response_schema(key, version)
    assert req_cls is not None and resp_cls is not None
    assert not req_cls.__flexible__
    base = req_cls.__derived_from__
    assert (
        {f.name for f in dataclasses.fields(req_cls)} != {f.name for f in dataclasses.fields(base)}
        or {f.name for f in dataclasses.fields(resp_cls)}
        != {f.name for f in dataclasses.fields(resp_cls.__derived_from__)}
        or version < base.__version__
    )  # same fields, older version number (e.g. a non-flexible copy)
    for cls in (req_cls, resp_cls):
        obj = _sample(cls)
        buf = io.BytesIO()
        entity_writer(cls)(buf, obj)
        data = buf.getvalue()
        back, size = entity_reader(cls)(data, 0)
        assert size == len(data) and back == obj, f"api {key} v{version} {cls.__name__}"
        again = io.BytesIO()
        entity_writer(cls)(again, back)
        assert again.getvalue() == data


def test_create_topics_v0_wire_layout():
    # CreateTopics v0 (kafka-python 0.10 era): topics[name, partitions, rf, assignments[], configs[]], timeout.
    body = (
        b"\x00\x00\x00\x01"
        + b"\x00\x01t"
        + b"\x00\x00\x00\x03"
        + b"\x00\x01"
        + b"\x00\x00\x00\x00"
        + b"\x00\x00\x00\x00"
        + b"\x00\x00\x13\x88"
    )
    frame = b"\x00\x13\x00\x00\x00\x00\x00\x07\x00\x01c" + body
    header, pos = parse_request_header(frame, False)
    req = control.decode_request(19, 0, frame, pos, strict=True)
    assert req.topics[0].name == "t" and req.topics[0].num_partitions == 3
    assert req.timeout.total_seconds() == 5
    out = control.encode_response(19, 0, {"topics": [{"name": "t", "error_code": 36, "error_message": "x"}]})
    assert out == b"\x00\x00\x00\x01\x00\x01t\x00\x24"


def test_metadata_response_every_version_encodes():
    data = {
        "throttle_time": 0,
        "brokers": [{"node_id": 1, "host": "h", "port": 9092}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": "t",
                "topic_id": None,
                "partitions": [
                    {"error_code": 0, "partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                ],
            }
        ],
    }
    sizes = {v: len(control.encode_response(3, v, data)) for v in range(0, 13)}
    assert sizes[0] < sizes[1] < sizes[12]


def test_frame_decoder_splits_and_limits():
    dec = FrameDecoder(100)
    assert dec.feed(b"\x00\x00\x00\x02ab\x00\x00") == [b"ab"]
    assert dec.feed(b"\x00\x01c") == [b"c"]
    with pytest.raises(FrameTooLarge):
        FrameDecoder(100).feed(b"\x00\x00\x01\x00")
    with pytest.raises(InvalidFrame):
        FrameDecoder(100).feed(b"\xff\xff\xff\xff")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=40), max_size=8))
def test_frame_decoder_any_chunking(payloads):
    stream = b"".join(len(p).to_bytes(4, "big") + p for p in payloads)
    dec = FrameDecoder(1 << 20)
    got = []
    i = 0
    while i < len(stream):
        got += dec.feed(stream[i : i + 7])
        i += 7
    assert got == payloads and dec.buffered == 0


@settings(max_examples=500, deadline=None)
@given(st.binary(min_size=8, max_size=200))
def test_control_decoder_never_raises_unexpected(data):
    key, version, _ = peek_key_version(data)
    flexible = control.flexible(key, version)
    if flexible is None:
        return
    try:
        _, pos = parse_request_header(data, flexible)
        control.decode_request(key, version, data, pos)
    except ValueError:
        pass
