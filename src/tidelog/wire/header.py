"""Request and response headers, sans-IO.

Request header v1: api_key int16, api_version int16, correlation_id int32, client_id nullable
string (int16 length). v2 (flexible request versions) adds a tagged-field section. Response header
v0 is the correlation id alone; v1 (flexible responses) adds an empty tagged-field section.
ApiVersions is the exception: its response header is always v0 so that a client can read the
answer whatever version it asked for.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .primitives import DecodeError, read_uvarint

__all__ = ["RequestHeader", "HeaderError", "parse_request_header", "response_header"]

_KEY_VER_CORR = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
API_VERSIONS_KEY = 18


class HeaderError(ValueError):
    pass


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    flexible: bool = False


def peek_key_version(frame: bytes | bytearray) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a frame."""
    if len(frame) < 8:
        raise HeaderError("frame shorter than a request header")
    return _KEY_VER_CORR.unpack_from(frame, 0)


def _skip_uvarint(frame: bytes | bytearray, pos: int) -> tuple[int, int]:
    try:
        return read_uvarint(frame, pos)
    except DecodeError as e:
        raise HeaderError(f"{e} in request header") from None


def parse_request_header(frame: bytes | bytearray, flexible: bool) -> tuple[RequestHeader, int]:
    """Parse the header; returns it and the offset where the body starts."""
    api_key, api_version, correlation_id = peek_key_version(frame)
    pos = 8
    if len(frame) < pos + 2:
        raise HeaderError("truncated client_id")
    (n,) = _I16.unpack_from(frame, pos)
    pos += 2
    client_id: str | None
    if n < 0:
        client_id = None
    else:
        if len(frame) < pos + n:
            raise HeaderError("truncated client_id")
        try:
            client_id = frame[pos : pos + n].decode()
        except UnicodeDecodeError as e:
            raise HeaderError("client_id is not UTF-8") from e
        pos += n
    if flexible:
        count, pos = _skip_uvarint(frame, pos)
        for _ in range(count):
            _tag, pos = _skip_uvarint(frame, pos)
            size, pos = _skip_uvarint(frame, pos)
            pos += size
            if pos > len(frame):
                raise HeaderError("truncated tagged field in request header")
    return RequestHeader(api_key, api_version, correlation_id, client_id, flexible), pos


def response_header(correlation_id: int, api_key: int, flexible: bool) -> bytes:
    if flexible and api_key != API_VERSIONS_KEY:
        return _I32.pack(correlation_id) + b"\x00"
    return _I32.pack(correlation_id)
