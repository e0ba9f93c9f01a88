"""A small blocking Kafka protocol client for tidelog's own command-line tools.

It speaks to any broker over the same sans-IO codecs the server uses: ApiVersions first to pick,
for each API, the highest version both sides support, then one request at a time.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from ..wire import control
from ..wire.schemas import request_schema, response_schema

_I32 = struct.Struct(">i")


class ClientError(RuntimeError):
    pass


class KafkaClient:
    def __init__(self, bootstrap: str, client_id: str = "tidelog-cli", timeout: float = 30.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout)
        self.client_id = client_id
        self.correlation = 0
        self.versions: dict[int, tuple[int, int]] = {}
        resp = self.request(18, {"client_software_name": "tidelog", "client_software_version": "0.1"}, version=0)
        for k in resp.api_keys:
            self.versions[k.api_key] = (k.min_version, k.max_version)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def pick_version(self, api_key: int, highest: int) -> int:
        if api_key not in self.versions:
            raise ClientError(f"the broker does not support api {api_key}")
        lo, hi = self.versions[api_key]
        v = min(hi, highest)
        while v >= lo and request_schema(api_key, v) is None:
            v -= 1
        if v < lo:
            raise ClientError(f"no common version for api {api_key}")
        return v

    def request(self, api_key: int, data: dict, version: int | None = None, highest: int = 99):
        if version is None:
            version = self.pick_version(api_key, highest)
        cls = request_schema(api_key, version)
        if cls is None:
            raise ClientError(f"no schema for api {api_key} v{version}")
        import io

        from kio.serial import entity_writer

        body = io.BytesIO()
        entity_writer(cls)(body, control.build(cls, data))
        self.correlation += 1
        cid = self.client_id.encode()
        header = struct.pack(">hhih", api_key, version, self.correlation, len(cid)) + cid
        flexible = bool(getattr(cls, "__flexible__")) and api_key != 18 or (api_key == 18 and version >= 3)
        if flexible:
            header += b"\x00"
        payload = header + body.getvalue()
        self.sock.sendall(_I32.pack(len(payload)) + payload)
        size = _I32.unpack(self._recv(4))[0]
        frame = self._recv(size)
        corr = _I32.unpack_from(frame, 0)[0]
        if corr != self.correlation:
            raise ClientError(f"correlation id {corr} != {self.correlation}")
        offset = 4 + (1 if flexible and api_key != 18 else 0)
        from kio.serial import entity_reader

        response_cls = response_schema(api_key, version)
        if response_cls is None:
            raise ClientError(f"no response schema for api {api_key} v{version}")
        value: Any
        value, _ = entity_reader(response_cls)(frame, offset)
        return value

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ClientError("connection closed by broker")
            buf += chunk
        return bytes(buf)


def error_name(code: object) -> str:
    """A Kafka error code as its name (UNKNOWN_TOPIC_OR_PARTITION), or the number if unknown."""
    from kio.schema.errors import ErrorCode

    value = int(getattr(code, "value", code))  # type: ignore[call-overload]
    try:
        return ErrorCode(value).name.upper()
    except ValueError:
        return str(value)
