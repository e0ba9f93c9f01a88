"""`EtcdStore`: the `Store` interface over etcd v3's JSON gateway (HTTP/1.1, asyncio streams).

etcd serves its gRPC API as JSON at `/v3/...` (keys and values base64, int64 as strings, zero
values omitted). Unary calls (range, put, deleterange, txn, lease grant/keepalive/revoke) go
over a small pool of kept-alive connections; a watch holds its own connection with a chunked
response of one JSON object per event batch, and resumes after a broken connection from the last
revision it delivered + 1. Every call is bounded by `timeout_s` and tries each endpoint in turn;
when none answers, StoreUnavailable.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from .store import Compare, KeyValue, LeaseExpired, Op, StoreUnavailable, TxnResult, WatchEvent, prefix_end

log = logging.getLogger("tidelog.cluster")

_TARGETS = {"value": "VALUE", "create": "CREATE", "mod": "MOD", "version": "VERSION"}
_FIELDS = {"value": "value", "create": "create_revision", "mod": "mod_revision", "version": "version"}
_RESULTS = {"==": "EQUAL", "!=": "NOT_EQUAL", "<": "LESS", ">": "GREATER"}


def _b64(b: bytes | str) -> str:
    return base64.b64encode(b.encode() if isinstance(b, str) else b).decode()


def _kv(d: dict[str, Any]) -> KeyValue:
    return KeyValue(base64.b64decode(d.get("key", "")).decode(), base64.b64decode(d.get("value", "")),
                    int(d.get("create_revision", 0)), int(d.get("mod_revision", 0)), int(d.get("version", 0)),
                    int(d.get("lease", 0)))


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status = await reader.readline()
    if not status:
        raise ConnectionError("connection closed")
    parts = status.decode("latin-1").split(" ", 2)
    code = int(parts[1])
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    return code, headers


async def _read_chunk(reader: asyncio.StreamReader) -> bytes:
    size_line = await reader.readline()
    if not size_line:
        raise ConnectionError("connection closed")
    size = int(size_line.split(b";")[0].strip(), 16)
    data = await reader.readexactly(size) if size else b""
    await reader.readline()  # CRLF after the chunk
    return data


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        out = bytearray()
        while True:
            chunk = await _read_chunk(reader)
            if not chunk:
                return bytes(out)
            out += chunk
    return await reader.read()


class EtcdStore:
    def __init__(self, endpoints: list[str], timeout_s: float = 5.0) -> None:
        self.endpoints = [e.removeprefix("http://").rstrip("/") for e in endpoints]
        if not self.endpoints:
            raise ValueError("no etcd endpoint")
        self.timeout_s = timeout_s
        self._current = 0
        self._idle: list[_Conn] = []
        self._closed = False

    # ---- transport ---------------------------------------------------------------------------
    async def _connect(self, endpoint: str) -> _Conn:
        host, _, port = endpoint.rpartition(":")
        reader, writer = await asyncio.open_connection(host or "127.0.0.1", int(port))
        return _Conn(reader, writer)

    def _request_bytes(self, endpoint: str, path: str, body: dict[str, Any]) -> bytes:
        data = json.dumps(body).encode()
        return (f"POST {path} HTTP/1.1\r\nHost: {endpoint}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n").encode() + data

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise StoreUnavailable("store closed")
        last: Exception | None = None
        for attempt in range(len(self.endpoints) + 1):
            endpoint = self.endpoints[self._current % len(self.endpoints)]
            conn = self._idle.pop() if self._idle and attempt == 0 else None
            try:
                if conn is None:
                    conn = await asyncio.wait_for(self._connect(endpoint), self.timeout_s)
                conn.writer.write(self._request_bytes(endpoint, path, body))
                code, headers, raw = await asyncio.wait_for(self._response(conn), self.timeout_s)
            except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
                last = e
                if conn is not None:
                    conn.close()
                if attempt > 0 or not isinstance(e, (ConnectionError, asyncio.IncompleteReadError)):
                    self._current += 1  # a stale pooled connection gets one free retry
                continue
            if headers.get("connection", "").lower() == "close":
                conn.close()
            elif len(self._idle) < 8:
                self._idle.append(conn)
            else:
                conn.close()
            doc = json.loads(raw) if raw else {}
            if code != 200:
                msg = doc.get("error") or doc.get("message") or raw[:200].decode("utf-8", "replace")
                if "lease not found" in str(msg):
                    raise LeaseExpired(str(msg))
                raise StoreUnavailable(f"etcd {path}: HTTP {code}: {msg}")
            return doc
        raise StoreUnavailable(f"etcd {', '.join(self.endpoints)} unreachable: {last!r}")

    async def _response(self, conn: _Conn) -> tuple[int, dict[str, str], bytes]:
        await conn.writer.drain()
        code, headers = await _read_head(conn.reader)
        return code, headers, await _read_body(conn.reader, headers)

    # ---- kv ---------------------------------------------------------------------------------
    async def get(self, key: str) -> KeyValue | None:
        doc = await self._call("/v3/kv/range", {"key": _b64(key)})
        kvs = doc.get("kvs") or []
        return _kv(kvs[0]) if kvs else None

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        doc = await self._call("/v3/kv/range", {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix))})
        return [_kv(d) for d in doc.get("kvs") or []], int(doc["header"]["revision"])

    async def put(self, key: str, value: bytes, lease: int = 0) -> int:
        body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        doc = await self._call("/v3/kv/put", body)
        return int(doc["header"]["revision"])

    async def delete(self, key: str) -> bool:
        doc = await self._call("/v3/kv/deleterange", {"key": _b64(key)})
        return int(doc.get("deleted", 0)) > 0

    @staticmethod
    def _op(op: Op) -> dict[str, Any]:
        if op.kind == "put":
            d: dict[str, Any] = {"key": _b64(op.key), "value": _b64(op.value)}
            if op.lease:
                d["lease"] = str(op.lease)
            return {"request_put": d}
        d = {"key": _b64(op.key)}
        if op.prefix:
            d["range_end"] = _b64(prefix_end(op.key))
        return {"request_delete_range": d} if op.kind == "delete" else {"request_range": d}

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> TxnResult:
        cmp = []
        for c in compares:
            v = _b64(c.value) if c.target == "value" and isinstance(c.value, bytes) else str(c.value)
            cmp.append({"key": _b64(c.key), "target": _TARGETS[c.target], "result": _RESULTS[c.op],
                        _FIELDS[c.target]: v})
        doc = await self._call("/v3/kv/txn", {"compare": cmp, "success": [self._op(o) for o in success],
                                               "failure": [self._op(o) for o in failure]})
        out = []
        for r in doc.get("responses") or []:
            rr = r.get("response_range")
            out.append([_kv(d) for d in (rr.get("kvs") or [])] if rr else [])
        return TxnResult(bool(doc.get("succeeded", False)), int(doc["header"]["revision"]), out)

    # ---- leases -----------------------------------------------------------------------------
    async def grant(self, ttl_s: int) -> int:
        doc = await self._call("/v3/lease/grant", {"TTL": str(ttl_s)})
        return int(doc["ID"])

    async def keepalive(self, lease: int) -> int:
        doc = await self._call("/v3/lease/keepalive", {"ID": str(lease)})
        ttl = int((doc.get("result") or doc).get("TTL", 0))
        if ttl <= 0:
            raise LeaseExpired(f"lease {lease:x} not found")
        return ttl

    async def revoke(self, lease: int) -> None:
        try:
            await self._call("/v3/lease/revoke", {"ID": str(lease)})
        except LeaseExpired:
            pass

    # ---- watch ------------------------------------------------------------------------------
    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[WatchEvent]:
        next_rev = start_revision
        failures = 0
        while not self._closed:
            endpoint = self.endpoints[self._current % len(self.endpoints)]
            conn: _Conn | None = None
            try:
                conn = await asyncio.wait_for(self._connect(endpoint), self.timeout_s)
                body = {"create_request": {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix)),
                                           "start_revision": str(next_rev)}}
                conn.writer.write(self._request_bytes(endpoint, "/v3/watch", body))
                await conn.writer.drain()
                code, headers = await asyncio.wait_for(_read_head(conn.reader), self.timeout_s)
                if code != 200:
                    raise ConnectionError(f"watch: HTTP {code}")
                buf = b""
                while True:
                    chunk = await _read_chunk(conn.reader)
                    if not chunk:
                        raise ConnectionError("watch stream ended")
                    buf += chunk
                    while b"\n" in buf or buf.strip().endswith(b"}"):
                        line, sep, rest = buf.partition(b"\n")
                        if not sep:
                            try:
                                doc = json.loads(buf)
                            except ValueError:
                                break
                            buf = b""
                        else:
                            buf = rest
                            if not line.strip():
                                continue
                            doc = json.loads(line)
                        result = doc.get("result") or {}
                        if doc.get("error"):
                            raise ConnectionError(str(doc["error"]))
                        if result.get("compact_revision") and int(result["compact_revision"]) > next_rev:
                            raise StoreUnavailable(f"watch revision {next_rev} compacted")
                        if result.get("canceled"):
                            raise ConnectionError(f"watch canceled: {result.get('cancel_reason')}")
                        failures = 0
                        for ev in result.get("events") or []:
                            kv = _kv(ev["kv"])
                            next_rev = max(next_rev, kv.mod_revision + 1)
                            yield WatchEvent("DELETE" if ev.get("type") == "DELETE" else "PUT", kv)
            except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
                failures += 1
                self._current += 1
                log.debug("etcd watch of %s broken (%s); resuming at %d", prefix, e, next_rev)
                await asyncio.sleep(min(0.1 * failures, 1.0))
            finally:
                if conn is not None:
                    conn.close()
        raise StoreUnavailable("store closed")

    async def close(self) -> None:
        self._closed = True
        for c in self._idle:
            c.close()
        self._idle.clear()
