"""Produce, Fetch and ListOffsets: property round trips for every version of every message,
known response layouts both ways, and a cross-check against kio's independent schemas."""

import datetime
import io
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from tidelog.wire import fetch as F
from tidelog.wire import list_offsets as L
from tidelog.wire import produce as P
from tidelog.wire.primitives import DecodeError, chunks_size

I8 = st.integers(-(2**7), 2**7 - 1)
I16 = st.integers(-(2**15), 2**15 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(max_size=12)
NTEXT = st.none() | TEXT
UUIDS = st.none() | st.uuids().filter(lambda u: u.int != 0)
SMALL = {"max_size": 3}

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tags(flex: bool, first: int = 0):
    if not flex:
        return st.none()
    return st.none() | st.dictionaries(st.integers(first, 200), st.binary(max_size=8), min_size=1, max_size=2)


def when(cond: bool, strategy, default):
    return strategy if cond else st.just(default)


def join(chunks) -> bytes:
    return b"".join(bytes(c) for c in chunks)


# ---- strategies, one per message, by version ---------------------------------------------------


def produce_request(v: int):
    flex = v >= P.FIRST_FLEXIBLE_VERSION
    part = st.builds(P.ProduceRequestPartition, I32, st.none() | st.binary(max_size=64), tags(flex))
    by_id = v >= P.FIRST_TOPIC_ID_VERSION
    topic = st.builds(
        P.ProduceRequestTopic,
        st.just("") if by_id else TEXT,
        st.lists(part, **SMALL),
        tags(flex),
        when(by_id, UUIDS, None),
    )
    return st.builds(P.ProduceRequest, I16, I32, st.lists(topic, **SMALL), when(v >= 3, NTEXT, None), tags(flex))


def produce_response(v: int):
    flex = v >= P.FIRST_FLEXIBLE_VERSION
    err = st.builds(P.ProduceRecordError, I32, NTEXT, tags(flex))
    part = st.builds(
        P.ProduceResponsePartition,
        I32,
        I16,
        I64,
        when(v >= 2, I64, -1),
        when(v >= 5, I64, -1),
        when(v >= 8, st.lists(err, **SMALL), []),
        when(v >= 8, NTEXT, None),
        tags(flex),
    )
    by_id = v >= P.FIRST_TOPIC_ID_VERSION
    topic = st.builds(
        P.ProduceResponseTopic,
        st.just("") if by_id else TEXT,
        st.lists(part, **SMALL),
        tags(flex),
        when(by_id, UUIDS, None),
    )
    return st.builds(P.ProduceResponse, st.lists(topic, **SMALL), when(v >= 1, I32, 0), tags(flex))


def fetch_request(v: int):
    flex = v >= F.FIRST_FLEXIBLE_VERSION
    by_id = v >= F.FIRST_TOPIC_ID_VERSION
    part = st.builds(
        F.FetchRequestPartition,
        I32,
        I64,
        I32,
        when(v >= 9, I32, -1),
        when(v >= 12, I32, -1),
        when(v >= 5, I64, -1),
        # v17+: tags 0 (directory id) and 1 (v18: high watermark) are fields of their own
        tags(flex, first=2 if v >= F.FIRST_DIRECTORY_ID_VERSION else 0),
        when(v >= F.FIRST_DIRECTORY_ID_VERSION, UUIDS, None),
        when(v >= F.FIRST_REQUEST_HW_VERSION, I64, F.NO_REQUEST_HW),
    )
    topic = st.builds(
        F.FetchRequestTopic, when(not by_id, TEXT, ""), st.lists(part, **SMALL), when(by_id, UUIDS, None), tags(flex)
    )
    forgotten = st.builds(
        F.FetchForgottenTopic, when(not by_id, TEXT, ""), st.lists(I32, **SMALL), when(by_id, UUIDS, None), tags(flex)
    )
    return st.builds(
        F.FetchRequest,
        I32,
        I32,
        st.lists(topic, **SMALL),
        max_bytes=when(v >= 3, I32, 0x7FFF_FFFF),
        isolation_level=when(v >= 4, I8, 0),
        session_id=when(v >= 7, I32, 0),
        session_epoch=when(v >= 7, I32, -1),
        forgotten_topics_data=when(v >= 7, st.lists(forgotten, **SMALL), []),
        rack_id=when(v >= 11, TEXT, ""),
        replica_id=I32,
        replica_epoch=when(v >= 15, I64, -1),
        cluster_id=when(v >= 12, NTEXT, None),
        tagged_fields=tags(flex, first=2),
    )


def fetch_response(v: int):
    flex = v >= F.FIRST_FLEXIBLE_VERSION
    by_id = v >= F.FIRST_TOPIC_ID_VERSION
    aborted = st.builds(F.FetchAbortedTransaction, I64, I64, tags(flex))
    records = st.none() | st.lists(
        st.binary(min_size=1, max_size=40) | st.binary(max_size=40).map(memoryview), max_size=3
    )
    part = st.builds(
        F.FetchResponsePartition,
        I32,
        I16,
        I64,
        when(v >= 4, I64, -1),
        when(v >= 5, I64, -1),
        when(v >= 4, st.none() | st.lists(aborted, **SMALL), None),
        when(v >= 11, I32, -1),
        records,
        st.none(),
        tags(flex),
    )
    topic = st.builds(
        F.FetchResponseTopic, when(not by_id, TEXT, ""), st.lists(part, **SMALL), when(by_id, UUIDS, None), tags(flex)
    )
    return st.builds(
        F.FetchResponse,
        st.lists(topic, **SMALL),
        when(v >= 1, I32, 0),
        when(v >= 7, I16, 0),
        when(v >= 7, I32, 0),
        tags(flex),
    )


def list_offsets_request(v: int):
    flex = v >= L.FIRST_FLEXIBLE_VERSION
    part = st.builds(L.ListOffsetsRequestPartition, I32, I64, when(v >= 4, I32, -1), when(v == 0, I32, 1), tags(flex))
    topic = st.builds(L.ListOffsetsRequestTopic, TEXT, st.lists(part, **SMALL), tags(flex))
    return st.builds(
        L.ListOffsetsRequest,
        I32,
        st.lists(topic, **SMALL),
        when(v >= 2, I8, 0),
        tags(flex),
        when(v >= L.FIRST_TIMEOUT_VERSION, I32, 0),
    )


def list_offsets_response(v: int):
    flex = v >= L.FIRST_FLEXIBLE_VERSION
    part = st.builds(
        L.ListOffsetsResponsePartition,
        I32,
        I16,
        when(v >= 1, I64, -1),
        when(v >= 1, I64, -1),
        when(v >= 4, I32, -1),
        when(v == 0, st.lists(I64, **SMALL), []),
        tags(flex),
    )
    topic = st.builds(L.ListOffsetsResponseTopic, TEXT, st.lists(part, **SMALL), tags(flex))
    return st.builds(L.ListOffsetsResponse, st.lists(topic, **SMALL), when(v >= 2, I32, 0), tags(flex))


def flatten_records(resp: F.FetchResponse) -> F.FetchResponse:
    """Fetch responses compare equal up to how their records are split into chunks."""
    for t in resp.responses:
        for p in t.partitions:
            if p.records is not None:
                p.records = (join(p.records),) if chunks_size(p.records) else ()
    return resp


MESSAGES = [
    # (codec, "request"|"response", strategy, versions)
    (P, "request", produce_request),
    (P, "response", produce_response),
    (F, "request", fetch_request),
    (F, "response", fetch_response),
    (L, "request", list_offsets_request),
    (L, "response", list_offsets_response),
]
CASES = [
    pytest.param(codec, kind, strategy, v, id=f"{codec.__name__.rsplit('.', 1)[1]}-{kind}-v{v}")
    for codec, kind, strategy in MESSAGES
    for v in range(codec.MIN_VERSION, codec.MAX_VERSION + 1)
]


@pytest.mark.parametrize("codec,kind,strategy,version", CASES)
def test_round_trip(codec, kind, strategy, version):
    if kind == "request":
        encode, decode = codec.encode_request, codec.decode_request
    else:
        encode, decode = codec.encode_response_sized, codec.decode_response

    @PROPERTY
    @given(strategy(version))
    def check(msg):
        out = encode(msg, version)
        if kind == "response":
            out, size = out
            assert size == chunks_size(out)
        data = join(out)
        back = decode(memoryview(data), version)
        if codec is F and kind == "response":
            msg, back = flatten_records(msg), flatten_records(back)
        assert back == msg
        assert (
            join(codec.encode_request(back, version) if kind == "request" else codec.encode_response(back, version))
            == data
        )

    check()


# ---- the fetch response never copies record chunks ----------------------------------------------


def test_fetch_response_sends_record_chunks_by_reference():
    segment = bytes(range(256)) * 64
    chunks = [memoryview(segment)[i : i + 1000] for i in range(0, 5000, 1000)]
    resp = F.FetchResponse(
        [
            F.FetchResponseTopic(
                "t", [F.FetchResponsePartition(p, 0, 100, 100, 0, None, -1, chunks, 5000) for p in range(3)]
            )
        ]
    )
    for v in (4, 11, 12, 16):
        out, size = F.encode_response_sized(resp, v)
        assert size == chunks_size(out)
        by_ref = [c for c in out if any(c is k for k in chunks)]
        assert len(by_ref) == 15
        back = F.decode_response(join(out), v)
        assert [join(p.records) for p in back.responses[0].partitions] == [segment[:5000]] * 3


def test_fetch_response_null_and_empty_records():
    for v in (0, 12):
        resp = F.FetchResponse(
            [F.FetchResponseTopic("t", [F.FetchResponsePartition(0, records=None), F.FetchResponsePartition(1)])]
        )
        back = F.decode_response(join(F.encode_response(resp, v)), v)
        assert back.responses[0].partitions[0].records is None
        assert back.responses[0].partitions[1].records == ()


# ---- known response layouts, both ways ---------------------------------------------------------

LAYOUTS = [
    (
        P,
        0,
        P.ProduceResponse([P.ProduceResponseTopic("t", [P.ProduceResponsePartition(1, 0, 7)])]),
        b"\x00\x00\x00\x01"
        + b"\x00\x01t"
        + b"\x00\x00\x00\x01"
        + b"\x00\x00\x00\x01"
        + b"\x00\x00"
        + b"\x00" * 7
        + b"\x07",
    ),
    (
        P,
        9,
        P.ProduceResponse(
            [
                P.ProduceResponseTopic(
                    "t", [P.ProduceResponsePartition(1, 0, 7, -1, 0, [P.ProduceRecordError(0, "x")], None)]
                )
            ],
            5,
        ),
        b"\x02"
        + b"\x02t"
        + b"\x02"
        + b"\x00\x00\x00\x01"
        + b"\x00\x00"
        + b"\x00" * 7
        + b"\x07"
        + b"\xff" * 8
        + b"\x00" * 8
        + b"\x02"
        + b"\x00\x00\x00\x00"
        + b"\x02x"
        + b"\x00"
        + b"\x00"
        + b"\x00"
        + b"\x00"
        + b"\x00\x00\x00\x05"
        + b"\x00",
    ),
    (
        L,
        0,
        L.ListOffsetsResponse(
            [L.ListOffsetsResponseTopic("t", [L.ListOffsetsResponsePartition(0, 0, old_style_offsets=[42])])]
        ),
        b"\x00\x00\x00\x01"
        + b"\x00\x01t"
        + b"\x00\x00\x00\x01"
        + b"\x00\x00\x00\x00"
        + b"\x00\x00"
        + b"\x00\x00\x00\x01"
        + b"\x00" * 7
        + b"\x2a",
    ),
    (
        L,
        6,
        L.ListOffsetsResponse([L.ListOffsetsResponseTopic("t", [L.ListOffsetsResponsePartition(0, 0, -1, 3, 2)])]),
        b"\x00\x00\x00\x00"
        + b"\x02"
        + b"\x02t"
        + b"\x02"
        + b"\x00\x00\x00\x00"
        + b"\x00\x00"
        + b"\xff" * 8
        + b"\x00" * 7
        + b"\x03"
        + b"\x00\x00\x00\x02"
        + b"\x00"
        + b"\x00"
        + b"\x00",
    ),
    (
        F,
        4,
        F.FetchResponse(
            [
                F.FetchResponseTopic(
                    "t",
                    [
                        F.FetchResponsePartition(
                            0, 0, 9, 8, aborted_transactions=[F.FetchAbortedTransaction(5, 6)], records=[b"AB"]
                        )
                    ],
                )
            ]
        ),
        b"\x00\x00\x00\x00"
        + b"\x00\x00\x00\x01"
        + b"\x00\x01t"
        + b"\x00\x00\x00\x01"
        + b"\x00\x00\x00\x00"
        + b"\x00\x00"
        + b"\x00" * 7
        + b"\x09"
        + b"\x00" * 7
        + b"\x08"
        + b"\x00\x00\x00\x01"
        + b"\x00" * 7
        + b"\x05"
        + b"\x00" * 7
        + b"\x06"
        + b"\x00\x00\x00\x02AB",
    ),
    (
        F,
        13,
        F.FetchResponse(
            [F.FetchResponseTopic("", [F.FetchResponsePartition(0, 0, 9, 8, 0, None, -1, [b"AB"])], uuid.UUID(int=1))],
            0,
            0,
            7,
        ),
        b"\x00\x00\x00\x00"
        + b"\x00\x00"
        + b"\x00\x00\x00\x07"
        + b"\x02"
        + b"\x00" * 15
        + b"\x01"
        + b"\x02"
        + b"\x00\x00\x00\x00"
        + b"\x00\x00"
        + b"\x00" * 7
        + b"\x09"
        + b"\x00" * 7
        + b"\x08"
        + b"\x00" * 8
        + b"\x00"
        + b"\xff\xff\xff\xff"
        + b"\x03AB"
        + b"\x00"
        + b"\x00"
        + b"\x00",
    ),
]


@pytest.mark.parametrize("codec,version,resp,data", LAYOUTS, ids=lambda x: None)
def test_known_response_layouts(codec, version, resp, data):
    assert join(codec.encode_response(resp, version)) == data
    back = codec.decode_response(data, version)
    if codec is F:
        back, resp = flatten_records(back), flatten_records(resp)
    assert back == resp


# ---- cross-check against kio's schemas (Produce v3+, Fetch v4+, ListOffsets v1+) ----------------


def _kio_round_trip(cls, data: bytes) -> object:
    value, size = entity_reader(cls)(data, 0)
    assert size == len(data)
    buf = io.BytesIO()
    entity_writer(cls)(buf, value)
    assert buf.getvalue() == data, "kio re-encodes our bytes differently"
    return value


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
RENAMED = {
    "throttle_time_ms": "throttle_time",
    "timeout_ms": "timeout",
    "max_wait_ms": "max_wait",
    "log_append_time_ms": "log_append_time",
}


def same(ours, theirs, path="") -> None:
    """Every field of ours that kio's class also has (by protocol name) holds the same value."""
    if isinstance(ours, list):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            same(a, b, f"{path}[{i}]")
        return
    for name in ours.__dataclass_fields__:
        if name in ("tagged_fields", "records_size"):
            continue
        kname = RENAMED.get(name, name)
        if not hasattr(theirs, kname):
            continue
        a, b = getattr(ours, name), getattr(theirs, kname)
        if isinstance(b, datetime.timedelta):
            b = int(b / datetime.timedelta(milliseconds=1))
        elif isinstance(b, datetime.datetime):
            b = (b - EPOCH) // datetime.timedelta(milliseconds=1)
        elif b is None and name == "log_append_time_ms":
            b = -1
        if name == "records":
            assert (a is None) == (b is None), path + ".records"
            if a is not None:
                mine = bytes(a) if isinstance(a, (bytes, memoryview)) else join(a)
                assert mine == bytes(b), path + ".records"
        elif isinstance(a, list) and a and hasattr(a[0], "__dataclass_fields__"):
            same(a, list(b), f"{path}.{name}")
        elif isinstance(a, list):
            assert a == list(b), f"{path}.{name}"
        else:
            assert a == b, f"{path}.{name}: ours {a!r}, kio {b!r}"


KIO_CASES = [
    pytest.param(codec, kind, strategy, v, id=f"{codec.__name__.rsplit('.', 1)[1]}-{kind}-v{v}")
    for codec, kind, strategy in MESSAGES
    for v in range(codec.MIN_VERSION, codec.MAX_VERSION + 1)
    if (codec is P and v >= 3) or (codec is F and v >= 4) or (codec is L and v >= 1)
]


@pytest.mark.parametrize("codec,kind,strategy,version", KIO_CASES)
def test_kio_reads_what_we_write(codec, kind, strategy, version):
    load = load_request_schema if kind == "request" else load_response_schema
    cls = load(codec.API_KEY, version)
    encode = codec.encode_request if kind == "request" else codec.encode_response

    @settings(max_examples=15, deadline=None)
    @given(strategy(version))
    def check(msg):
        # kio models known tags (and keeps no unknown ones), error codes as an enum, and
        # log_append_time as a datetime.
        _for_kio(msg)
        if codec is P and kind == "response":
            for t in msg.responses:
                for p in t.partition_responses:
                    p.log_append_time_ms = -1 if p.log_append_time_ms < 0 else p.log_append_time_ms % 2**40
        if codec is F and kind == "request":
            if version < 15:
                msg.replica_epoch = -1
        data = join(encode(msg, version))
        theirs = _kio_round_trip(cls, data)
        same(msg, theirs)
        if codec is F and kind == "request" and version >= 15:
            assert (theirs.replica_state.replica_id, theirs.replica_state.replica_epoch) == (
                msg.replica_id,
                msg.replica_epoch,
            )

    check()


ERROR_CODES = sorted(ErrorCode)


def _for_kio(obj) -> None:
    if isinstance(obj, list):
        for x in obj:
            _for_kio(x)
        return
    if not hasattr(obj, "__dataclass_fields__"):
        return
    for name in obj.__dataclass_fields__:
        if name == "tagged_fields":
            obj.tagged_fields = None
        elif name == "error_code":
            obj.error_code = int(ERROR_CODES[obj.error_code % len(ERROR_CODES)])
        else:
            _for_kio(getattr(obj, name))


# ---- leniency and errors -----------------------------------------------------------------------


def test_trailing_bytes_ignored_unless_strict():
    req = L.ListOffsetsRequest(-1, [L.ListOffsetsRequestTopic("t", [L.ListOffsetsRequestPartition(0, -1)])])
    data = join(L.encode_request(req, 7)) + b"\x00\x00\x00"
    assert L.decode_request(data, 7) == req
    with pytest.raises(DecodeError):
        L.decode_request(data, 7, strict=True)


@pytest.mark.parametrize("codec", [P, F, L])
def test_unsupported_versions(codec):
    with pytest.raises(DecodeError):
        codec.decode_request(b"", codec.MAX_VERSION + 1)
    with pytest.raises(ValueError):
        codec.encode_response(None, codec.MIN_VERSION - 1)


@pytest.mark.parametrize("codec,kind,strategy,version", CASES[::3])
def test_garbage_raises_only_decode_error(codec, kind, strategy, version):
    decode = codec.decode_request if kind == "request" else codec.decode_response

    @settings(max_examples=30, deadline=None)
    @given(st.binary(max_size=80))
    def check(data):
        try:
            decode(data, version)
        except DecodeError:
            pass

    check()
