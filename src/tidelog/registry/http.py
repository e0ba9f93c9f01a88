"""The registry's HTTP/1.1 listener: asyncio streams and a small, bounded parser.

Why here and not in `server/`: `server/` is the Kafka protocol's network layer (frames, the
router of API keys, the pipeline stages); the registry speaks another protocol, REST over
HTTP/1.1, with none of those parts, so its listener stays beside the operations it serves, and
the composition root (`server/broker.py`) builds it and starts and stops it with the broker. No
web framework: the requests are small JSON documents, and a parser of ~100 lines with hard
limits is less code than a dependency.

Contract: a request line and headers of at most `MAX_HEAD` bytes, a body of at most `max_body`
bytes given by Content-Length (chunked bodies are refused with 411), each arriving within
`IDLE_TIMEOUT_S`; at most `MAX_CONNECTIONS` connections at once; keep-alive unless the client
says `Connection: close` or speaks HTTP/1.0. Malformed input is answered with a 4xx and a log
line and closes the connection; nothing a client sends ends the listener. Every answer is JSON
(`application/vnd.schemaregistry.v1+json`), errors as `{"error_code", "message"}`. With
`authenticate` (basic authentication), a request without valid credentials gets 401; with
`access` too, the ACLs on subjects apply (`access`: 403 where they refuse, answers trimmed to
what the caller may see) and `/security/acls` is served; with `tls`, it is served over HTTPS only.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from . import api
from .access import AccessControl, Caller
from .errors import UNAUTHORIZED, UNKNOWN_LEADER, RegistryError
from .forward import Forwarder
from .service import Registry

log = logging.getLogger("tidelog.registry")

MAX_HEAD = 64 * 1024
IDLE_TIMEOUT_S = 60.0  # a connection with no request, or a request not complete, this long is closed
MAX_CONNECTIONS = 1024  # beyond it a new connection is answered 503 and closed
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
REASONS = {
    200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    408: "Request Timeout", 409: "Conflict", 411: "Length Required", 413: "Payload Too Large",
    422: "Unprocessable Entity", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
    503: "Service Unavailable",
}  # fmt: skip


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class RegistryServer:
    def __init__(
        self,
        registry: Registry,
        host: str,
        port: int,
        max_body: int = 8 * 1024 * 1024,
        authenticate: Callable[[str, str], bool] | None = None,
        forwarder: Forwarder | None = None,
        publish: Callable[[str], Awaitable[None]] | None = None,
        tls: ssl.SSLContext | None = None,
        access: AccessControl | None = None,
    ) -> None:
        """`authenticate(user, password)`: basic authentication (None: none asked); `forwarder`
        (cluster mode): where a write this broker may not make goes; `publish(url)`: told this
        listener's URL once it listens (cluster mode: so that the others can forward here); `tls`:
        serve HTTPS with this context; `access`: check the ACLs on subjects (only with
        `authenticate`: a principal is the authenticated user)."""
        if access is not None and authenticate is None:
            raise ValueError("ACLs on subjects need authentication")
        self.registry = registry
        self.host, self.port = host, port
        self.max_body = max_body
        self.authenticate = authenticate
        self.forwarder = forwarder
        self.publish = publish
        self.tls = tls
        self.access = access
        self.scheme = "https" if tls is not None else "http"
        self.answered: dict[tuple[str, int], int] = {}  # (method, status) -> requests answered
        self.server: asyncio.base_events.Server | None = None
        self.clients: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        """Read the registry's topic from its start, then listen."""
        self.registry.start()
        self.server = await asyncio.start_server(
            self._serve, self.host, self.port, limit=MAX_HEAD, reuse_address=True, ssl=self.tls
        )
        self.port = self.server.sockets[0].getsockname()[1]
        log.info("schema registry listening on %s://%s:%d", self.scheme, self.host, self.port)
        if self.publish is not None:
            await self.publish(f"{self.scheme}://{self.host}:{self.port}")

    async def stop(self) -> None:
        self.registry.stop()
        if self.server is not None:
            self.server.close()
            for w in list(self.clients):
                w.close()
            try:
                await asyncio.wait_for(self.server.wait_closed(), 2)
            except TimeoutError:
                pass

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if len(self.clients) >= MAX_CONNECTIONS:
            log.warning("schema registry: refusing %s: %d connections open", peer, len(self.clients))
            with contextlib.suppress(OSError):
                await self._send(writer, 503, {"error_code": 503, "message": "too many connections"}, False)
            writer.close()
            return
        self.clients.add(writer)
        try:
            while await self._one(reader, writer, peer):
                pass
        except (OSError, asyncio.IncompleteReadError):  # the peer went away (a TLS error included)
            pass
        finally:
            self.clients.discard(writer)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: object) -> bool:
        """Serve one request; whether the connection stays open for another."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IDLE_TIMEOUT_S)
        except TimeoutError:
            return False
        except asyncio.IncompleteReadError as e:
            if e.partial:
                log.warning("schema registry: %s closed mid-request", peer)
            return False
        except asyncio.LimitOverrunError:
            await self._send(writer, 431, {"error_code": 431, "message": "request head too large"}, False)
            log.warning("schema registry: %s sent a request head over %d bytes", peer, MAX_HEAD)
            return False
        try:
            method, target, keep, headers = _parse_head(head)
            body = await self._body(reader, writer, headers)
        except BadRequest as e:
            log.warning("schema registry: bad request from %s: %s", peer, e)
            await self._send(writer, e.status, {"error_code": e.status, "message": str(e)}, False)
            return False
        status, answer = await self._answer(method, target, headers, body, peer)
        self.answered[(method, status)] = self.answered.get((method, status), 0) + 1
        await self._send(writer, status, answer, keep)
        return keep

    async def _body(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: dict[str, str]) -> Any:
        """The JSON body (None when empty); a client that waits for `100 Continue` (curl, past
        1 KiB) is told to go on once the length is known acceptable."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            raise BadRequest(411, "chunked bodies are not supported: send Content-Length")
        raw = headers.get("content-length", "0").strip()
        if not raw.isdigit():
            raise BadRequest(400, f"bad Content-Length {raw!r}")
        length = int(raw)
        if length > self.max_body:
            raise BadRequest(413, f"body of {length} bytes is over the limit of {self.max_body}")
        if not length:
            return None
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            data = await asyncio.wait_for(reader.readexactly(length), IDLE_TIMEOUT_S)
        except TimeoutError as e:
            raise BadRequest(408, "the body did not arrive in time") from e
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise BadRequest(400, f"body is not JSON: {e}") from e

    async def _answer(
        self, method: str, target: str, headers: dict[str, str], body: Any, peer: object
    ) -> tuple[int, Any]:
        try:
            user = self._check_auth(headers)
            caller, acls = None, None
            if self.access is not None and user is not None:
                host = str(peer[0]) if isinstance(peer, tuple) and peer else ""
                caller, acls = Caller(self.access.authorizer, f"User:{user}", host), self.access.admin
            parts = urlsplit(target)
            query = dict(parse_qsl(parts.query))
            return await api.dispatch(self.registry, method, parts.path, query, body, caller, acls)
        except RegistryError as e:
            if e.code == UNKNOWN_LEADER and self.forwarder is not None:  # a write, or a read here without the log
                data = b"" if body is None else json.dumps(body).encode()
                answer = await self.forwarder.forward(method, target, headers, data)
                if answer is not None:
                    return answer[0], api._Raw(answer[1])
            return e.status, e.body()
        except Exception as e:  # one request's failure is its 500, never the listener's end
            log.exception("schema registry: %s %s failed", method, target)
            return 500, {"error_code": 50001, "message": f"Error in the backend data store: {e}"}

    def _check_auth(self, headers: dict[str, str]) -> str | None:
        """The authenticated user (None: no authentication asked); 401 without valid credentials."""
        if self.authenticate is None:
            return None
        scheme, _, token = headers.get("authorization", "").partition(" ")
        try:
            user, _, password = base64.b64decode(token, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            user, password = "", ""
        if scheme.lower() != "basic" or not user or not self.authenticate(user, password):
            raise RegistryError(UNAUTHORIZED, "Unauthorized", 401)
        return user

    async def _send(self, writer: asyncio.StreamWriter, status: int, answer: Any, keep: bool) -> None:
        data = (answer.text if isinstance(answer, api._Raw) else json.dumps(answer)).encode()
        head = [
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}",
            f"Content-Type: {CONTENT_TYPE}",
            f"Content-Length: {len(data)}",
            "Connection: keep-alive" if keep else "Connection: close",
        ]
        if status == 401:
            head.append('WWW-Authenticate: Basic realm="tidelog schema registry"')
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        await writer.drain()


def _parse_head(head: bytes) -> tuple[str, str, bool, dict[str, str]]:
    """(method, target, keep-alive, headers with lower-case names) of a request head."""
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError as e:
        raise BadRequest(400, "malformed request line") from e
    if not version.startswith("HTTP/1.") or not target.startswith("/"):
        raise BadRequest(400, f"unsupported request line {lines[0][:100]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest(400, f"malformed header line {line[:100]!r}")
        headers[name.lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return method, target, keep, headers
