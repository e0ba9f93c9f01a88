"""The registry's HTTP request-head parser: bounded, and nothing but BadRequest on bad input (no
sockets)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.registry.http import BadRequest, _parse_head


def test_a_request_head():
    method, target, keep, headers = _parse_head(
        b"POST /subjects/a%2Fb/versions?normalize=true HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"
    )
    assert (method, target, keep) == ("POST", "/subjects/a%2Fb/versions?normalize=true", True)
    assert headers == {"host": "x", "content-length": "2"}


def test_keep_alive_rules():
    assert _parse_head(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")[2] is False
    assert _parse_head(b"GET / HTTP/1.0\r\n\r\n")[2] is False
    assert _parse_head(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")[2] is True


@pytest.mark.parametrize(
    "head",
    [b"GET\r\n\r\n", b"GET / HTTP/2\r\n\r\n", b"GET nope HTTP/1.1\r\n\r\n", b"GET / HTTP/1.1\r\nno colon\r\n\r\n"],
)
def test_malformed_heads(head):
    with pytest.raises(BadRequest) as e:
        _parse_head(head)
    assert e.value.status == 400


@given(st.binary(max_size=300))
def test_any_bytes_parse_or_raise_bad_request(data):
    try:
        _parse_head(data + b"\r\n\r\n")
    except BadRequest:
        pass
