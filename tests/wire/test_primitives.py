"""Wire primitives: known byte layouts both ways, property round trips, and malformed input."""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.wire.primitives import (
    DecodeError,
    Reader,
    Writer,
    chunks_size,
    encode_tagged_fields,
    encode_uvarint,
    encode_varint,
    encode_varlong,
)

I8 = st.integers(-(2**7), 2**7 - 1)
I16 = st.integers(-(2**15), 2**15 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
U32 = st.integers(0, 2**32 - 1)
TEXT = st.text(max_size=40)
BLOB = st.binary(max_size=40)
TAGS = st.none() | st.dictionaries(st.integers(0, 300), st.binary(max_size=20), min_size=1, max_size=4)
UUIDS = st.none() | st.uuids().filter(lambda u: u.int != 0)


def encode(fn, value) -> bytes:
    w = Writer()
    getattr(w, fn)(value)
    return b"".join(w.finish())


def decode(fn, data: bytes):
    r = Reader(data)
    v = getattr(r, fn)()
    r.expect_end()
    return v


# Known layouts: (writer/reader method, value, bytes). Checked in both directions.
CASES = [
    ("int8", -1, b"\xff"),
    ("int16", 258, b"\x01\x02"),
    ("int32", -2, b"\xff\xff\xff\xfe"),
    ("int64", 1, b"\x00" * 7 + b"\x01"),
    ("uint32", 2**32 - 1, b"\xff\xff\xff\xff"),
    ("uvarint", 0, b"\x00"),
    ("uvarint", 127, b"\x7f"),
    ("uvarint", 128, b"\x80\x01"),
    ("uvarint", 300, b"\xac\x02"),
    ("uvarint", 2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    ("varint", 0, b"\x00"),
    ("varint", -1, b"\x01"),
    ("varint", 1, b"\x02"),
    ("varint", -64, b"\x7f"),
    ("varint", 64, b"\x80\x01"),
    ("varint", -(2**31), b"\xff\xff\xff\xff\x0f"),
    ("varlong", -(2**63), b"\xff" * 9 + b"\x01"),
    ("string", "ab", b"\x00\x02ab"),
    ("string", "", b"\x00\x00"),
    ("nullable_string", None, b"\xff\xff"),
    ("compact_string", "ab", b"\x03ab"),
    ("compact_string", "", b"\x01"),
    ("compact_nullable_string", None, b"\x00"),
    ("nullable_bytes", None, b"\xff\xff\xff\xff"),
    ("compact_nullable_bytes", None, b"\x00"),
    ("uuid", None, b"\x00" * 16),
    ("uuid", uuid.UUID(int=1), b"\x00" * 15 + b"\x01"),
    ("tagged_fields", None, b"\x00"),
    ("tagged_fields", {0: b"x", 5: b""}, b"\x02\x00\x01x\x05\x00"),
]


@pytest.mark.parametrize("fn,value,data", CASES)
def test_known_layouts_both_ways(fn, value, data):
    assert encode(fn, value) == data
    assert decode(fn, data) == value


@pytest.mark.parametrize(
    "fn,data",
    [
        ("bytes_", b"\x00\x00\x00\x02ab"),
        ("nullable_bytes", b"\x00\x00\x00\x00"),
        ("compact_bytes", b"\x03ab"),
        ("compact_nullable_bytes", b"\x01"),
    ],
)
def test_bytes_are_zero_copy(fn, data):
    r = Reader(data)
    v = getattr(r, fn)()
    assert isinstance(v, memoryview) and v.obj is data
    assert encode(fn, v) == data


@pytest.mark.parametrize(
    "fn,strategy",
    [
        ("int8", I8),
        ("int16", I16),
        ("int32", I32),
        ("int64", I64),
        ("uint32", U32),
        ("uvarint", U32),
        ("varint", I32),
        ("varlong", I64),
        ("string", TEXT),
        ("nullable_string", st.none() | TEXT),
        ("compact_string", TEXT),
        ("compact_nullable_string", st.none() | TEXT),
        ("bytes_", BLOB),
        ("nullable_bytes", st.none() | BLOB),
        ("compact_bytes", BLOB),
        ("compact_nullable_bytes", st.none() | BLOB),
        ("uuid", UUIDS),
        ("tagged_fields", TAGS),
    ],
)
def test_round_trip(fn, strategy):
    @given(strategy)
    def check(value):
        data = encode(fn, value)
        back = decode(fn, data)
        if isinstance(back, memoryview):
            back = back.tobytes()
        assert back == value
        # Every strict prefix is a truncation, never another exception.
        for cut in range(len(data)):
            with pytest.raises(DecodeError):
                decode(fn, data[:cut])

    check()


@given(st.integers(0, 2**64 - 1))
def test_uvarlong_round_trip(n):
    assert Reader(encode_uvarint(n)).uvarlong() == n


@given(I32)
def test_module_varint_matches_writer(n):
    assert encode_varint(n) == encode("varint", n)
    assert encode_varlong(n) == encode("varint", n)  # zigzag agrees on the 32-bit range


@given(st.lists(I32, max_size=20), st.lists(I64, max_size=20))
def test_arrays_round_trip(xs, ys):
    w = Writer()
    w.array_len(len(xs))
    w.int32_list(xs)
    w.compact_array_len(len(ys))
    w.int64_list(ys)
    w.nullable_array_len(None)
    w.compact_nullable_array_len(None)
    r = Reader(b"".join(w.finish()))
    assert r.array(Reader.int32) == xs
    assert r.compact_array(Reader.int64) == ys
    assert r.nullable_array(Reader.int32) is None
    assert r.compact_nullable_array(Reader.int32) is None
    r.expect_end()


@given(st.lists(st.binary(max_size=5000), max_size=6), st.binary(max_size=10))
def test_writer_keeps_chunks_by_reference(payloads, tail):
    w = Writer()
    for p in payloads:
        w.int32(len(p))
        w.chunk(p)
    w.raw(tail)
    size = w.size
    chunks = w.finish()
    assert size == chunks_size(chunks)
    big = [c for c in chunks if any(c is p for p in payloads)]
    assert len(big) == sum(1 for p in payloads if p)
    r = Reader(b"".join(chunks))
    assert [r.raw(r.int32()).tobytes() for _ in payloads] == payloads


@pytest.mark.parametrize(
    "fn,data",
    [
        ("string", b"\xff\xff"),  # null where not nullable
        ("compact_string", b"\x00"),
        ("bytes_", b"\xff\xff\xff\xff"),
        ("compact_bytes", b"\x00"),
        ("string", b"\x00\x05ab"),  # length past the end
        ("compact_nullable_bytes", b"\xff\xff\xff\xff\x0f"),
        ("string", b"\x00\x02\xff\xfe"),  # not UTF-8
        ("uvarint", b"\x80\x80\x80\x80\x80\x01"),  # six bytes
        ("varlong", b"\xff" * 10 + b"\x01"),
        ("tagged_fields", b"\x02\x05\x00\x01\x00"),  # tags out of order
        ("tagged_fields", b"\x02\x01\x00\x01\x00"),  # duplicate tag
        ("tagged_fields", b"\x01\x00\x05ab"),  # field past the end
        ("array_len", b"\xff\xff\xff\xff"),
        ("array_len", b"\x7f\xff\xff\xff"),  # count larger than what is left
        ("compact_array_len", b"\x00"),
        ("uuid", b"\x00" * 15),
    ],
)
def test_malformed_input_raises_decode_error(fn, data):
    with pytest.raises(DecodeError):
        decode(fn, data)


def test_trailing_bytes_are_an_error():
    r = Reader(b"\x00\x01\x02")
    r.int16()
    with pytest.raises(DecodeError, match="1 trailing"):
        r.expect_end()


@given(st.binary(max_size=64))
def test_garbage_only_ever_raises_decode_error(data):
    for fn in (
        "string",
        "compact_nullable_string",
        "bytes_",
        "tagged_fields",
        "uuid",
        "varlong",
        "compact_array_len",
        "int64",
    ):
        try:
            getattr(Reader(data), fn)()
        except DecodeError:
            pass


def test_encode_tagged_fields_helper():
    assert encode_tagged_fields(None) == b"\x00"
    assert encode_tagged_fields({}) == b"\x00"
    assert encode_tagged_fields({3: b"ab"}) == b"\x01\x03\x02ab"


def test_out_of_range_varints_refused():
    with pytest.raises(ValueError):
        encode_uvarint(-1)
    with pytest.raises(ValueError):
        encode_varint(2**31)
