"""`EtcdStore`: the `Store` interface over etcd v3's JSON gateway (HTTP/1.1, asyncio streams).

etcd serves its gRPC API as JSON at `/v3/...` (keys and values base64, int64 as strings, zero
values omitted). Unary calls (range, put, deleterange, txn, lease grant/keepalive/revoke) are
one request and one answer each; a watch holds its own connection with a chunked response of one
JSON object per event batch.

Failures. Connecting and being answered are each bounded by `timeout_s`. What happens next
depends on whether the call changes anything in etcd:

- Reads (range, a txn of compares and gets only) and lease keepalive are idempotent. They go
  over a small pool of kept-alive connections, and any transport failure (connection refused or
  closed, no answer in time, a garbled answer) is retried on the next endpoint: len(endpoints)+1
  attempts, plus one free retry for a pooled connection the peer had closed. When none answers,
  StoreUnavailable.
- Writes (put, deleterange, a txn with a put or a delete in either branch, lease grant, lease
  revoke) are never sent twice: a retried compare-and-swap would "fail" against its own first
  attempt, and the caller would believe it lost while etcd holds its write. Each write goes over
  a fresh connection (a pooled one that the peer closed meanwhile can fail after the request was
  written, and nothing then tells whether it was read). A failure before the request was written
  (connect refused or timed out) is retried on the next endpoint, and StoreUnavailable when none
  connects means nothing was changed. Once the request was written, no answer (timeout,
  connection closed, garbled answer) raises OutcomeUnknown naming the call and its keys: it may
  have been applied, and the caller reads back to learn whether.
- An HTTP error from etcd is an answer, never retried: "lease not found" raises LeaseExpired,
  anything else StoreUnavailable (nothing was changed) - except on a write, where a 5xx or an
  error of the timed-out family ("request timed out", "leader changed", "deadline exceeded")
  means the proposal may still commit: OutcomeUnknown. A 4xx refusal is definite.
- A watch resumes after a broken connection, on the next endpoint, from the last revision it
  delivered + 1, until the store is closed; StoreUnavailable when that revision was compacted.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from .store import (
    Compare,
    KeyValue,
    LeaseExpired,
    Op,
    OutcomeUnknown,
    StoreUnavailable,
    TxnResult,
    WatchEvent,
    prefix_end,
)

log = logging.getLogger("tidelog.cluster")

_TARGETS = {"value": "VALUE", "create": "CREATE", "mod": "MOD", "version": "VERSION"}
_FIELDS = {"value": "value", "create": "create_revision", "mod": "mod_revision", "version": "version"}
_RESULTS = {"==": "EQUAL", "!=": "NOT_EQUAL", "<": "LESS", ">": "GREATER"}
# etcd's errors for a proposal it could not confirm in time: it may still commit
_MAYBE_APPLIED = ("timed out", "timeout", "leader changed", "deadline exceeded")


def _b64(b: bytes | str) -> str:
    return base64.b64encode(b.encode() if isinstance(b, str) else b).decode()


def _kv(d: dict[str, Any]) -> KeyValue:
    return KeyValue(
        base64.b64decode(d.get("key", "")).decode(),
        base64.b64decode(d.get("value", "")),
        int(d.get("create_revision", 0)),
        int(d.get("mod_revision", 0)),
        int(d.get("version", 0)),
        int(d.get("lease", 0)),
    )


class _Conn:
    def __init__(self, endpoint: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.endpoint, self.reader, self.writer = endpoint, reader, writer

    def close(self) -> None:
        self.writer.close()


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status = await reader.readline()
    if not status:
        raise ConnectionError("connection closed")
    parts = status.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ValueError(f"not an HTTP status line: {status[:80]!r}")
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


def _answer(code: int, raw: bytes) -> dict[str, Any]:
    """The JSON object of an answer. A 200 without one is garbled (ValueError); an error's body
    may be anything, its text is kept under "error"."""
    try:
        doc = json.loads(raw)
    except ValueError:
        if code == 200:
            raise
        doc = None
    if isinstance(doc, dict):
        return doc
    if code == 200:
        raise ValueError(f"not a JSON object: {raw[:80]!r}")
    return {"error": raw[:200].decode("utf-8", "replace")}


def _what(op: Op) -> str:
    return f"{op.kind} {op.key}{'*' if op.prefix else ''}"


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
        return _Conn(endpoint, reader, writer)

    def _request_bytes(self, endpoint: str, path: str, body: dict[str, Any]) -> bytes:
        data = json.dumps(body).encode()
        return (
            f"POST {path} HTTP/1.1\r\nHost: {endpoint}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        ).encode() + data

    async def _call(self, path: str, body: dict[str, Any], write: str | None = None) -> dict[str, Any]:
        """One unary call and its answer. `write` marks a call that changes etcd and says what it
        writes (for OutcomeUnknown's message); None marks an idempotent one. Which failures are
        retried, and which raise what: the module docstring."""
        if self._closed:
            raise StoreUnavailable("store closed")
        last: Exception | None = None
        for attempt in range(len(self.endpoints) + 1):
            endpoint = self.endpoints[self._current % len(self.endpoints)]
            request = self._request_bytes(endpoint, path, body)
            # a write never reuses a pooled connection: if the peer closed it meanwhile, that shows
            # only after the request was written, and the write's outcome would be unknown
            conn = self._idle.pop() if self._idle and attempt == 0 and write is None else None
            sent = False
            try:
                if conn is None:
                    conn = await asyncio.wait_for(self._connect(endpoint), self.timeout_s)
                sent = True  # from here on, etcd may have read the request
                conn.writer.write(request)
                code, headers, doc = await asyncio.wait_for(self._response(conn), self.timeout_s)
            except (TimeoutError, OSError, ConnectionError, asyncio.IncompleteReadError, ValueError) as e:
                last = e
                if conn is not None:
                    conn.close()
                if write is not None and sent:
                    assert conn is not None
                    self._current += 1
                    raise OutcomeUnknown(
                        f"etcd {write}: sent to {conn.endpoint}, no answer ({e!r}); it may have been applied"
                    ) from e
                if attempt > 0 or not isinstance(e, (ConnectionError, asyncio.IncompleteReadError)):
                    self._current += 1  # a stale pooled connection gets one free retry
                continue
            except asyncio.CancelledError:
                if conn is not None:
                    conn.close()  # mid-request: its answer would be read as the next call's
                raise
            if headers.get("connection", "").lower() == "close":
                conn.close()
            elif len(self._idle) < 8:
                self._idle.append(conn)
            else:
                conn.close()
            if code != 200:
                msg = str(doc.get("error") or doc.get("message") or "")
                if "lease not found" in msg:
                    raise LeaseExpired(msg)
                if write is not None and (code >= 500 or any(m in msg.lower() for m in _MAYBE_APPLIED)):
                    raise OutcomeUnknown(
                        f"etcd {write}: HTTP {code} from {conn.endpoint}: {msg}; it may still be applied"
                    )
                raise StoreUnavailable(f"etcd {path}: HTTP {code}: {msg}")
            return doc
        raise StoreUnavailable(f"etcd {', '.join(self.endpoints)} unreachable: {last!r}")

    async def _response(self, conn: _Conn) -> tuple[int, dict[str, str], dict[str, Any]]:
        await conn.writer.drain()
        code, headers = await _read_head(conn.reader)
        return code, headers, _answer(code, await _read_body(conn.reader, headers))

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
        doc = await self._call("/v3/kv/put", body, write=f"put {key}")
        return int(doc["header"]["revision"])

    async def delete(self, key: str) -> bool:
        doc = await self._call("/v3/kv/deleterange", {"key": _b64(key)}, write=f"delete {key}")
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
            cmp.append(
                {"key": _b64(c.key), "target": _TARGETS[c.target], "result": _RESULTS[c.op], _FIELDS[c.target]: v}
            )
        writes = [_what(o) for o in (*success, *failure) if o.kind != "get"]
        doc = await self._call(
            "/v3/kv/txn",
            {"compare": cmp, "success": [self._op(o) for o in success], "failure": [self._op(o) for o in failure]},
            write=f"txn ({', '.join(writes)})" if writes else None,
        )
        out = []
        for r in doc.get("responses") or []:
            rr = r.get("response_range")
            out.append([_kv(d) for d in (rr.get("kvs") or [])] if rr else [])
        return TxnResult(bool(doc.get("succeeded", False)), int(doc["header"]["revision"]), out)

    # ---- leases -----------------------------------------------------------------------------
    async def grant(self, ttl_s: int) -> int:
        doc = await self._call("/v3/lease/grant", {"TTL": str(ttl_s)}, write=f"lease grant (TTL {ttl_s} s)")
        return int(doc["ID"])

    async def keepalive(self, lease: int) -> int:
        doc = await self._call("/v3/lease/keepalive", {"ID": str(lease)})
        ttl = int((doc.get("result") or doc).get("TTL", 0))
        if ttl <= 0:
            raise LeaseExpired(f"lease {lease:x} not found")
        return ttl

    async def revoke(self, lease: int) -> None:
        try:
            await self._call("/v3/lease/revoke", {"ID": str(lease)}, write=f"lease revoke {lease:x}")
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
                body = {
                    "create_request": {
                        "key": _b64(prefix),
                        "range_end": _b64(prefix_end(prefix)),
                        "start_revision": str(next_rev),
                    }
                }
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
            except (TimeoutError, OSError, ConnectionError, asyncio.IncompleteReadError, ValueError) as e:
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
