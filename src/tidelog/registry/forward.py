"""Cluster mode: a write that reaches a registry other than the primary is forwarded to the
primary's, as Confluent's and Karapace's followers do, so a client needs one URL; so is a read
that reaches a broker holding no replica of the registry's topic.

`Forwarder(locate)`: `locate()` answers the primary's registry URL (None: unknown, or this broker
is the primary). `forward(method, target, headers, body)` sends the request once over a fresh
connection (HTTP/1.1, `Connection: close`) with `X-Tidelog-Forwarded: 1` - a request carrying it
is never forwarded again, so two brokers that each think the other primary cannot loop - and
answers (status, body text), or None when the primary cannot be reached or answers
malformed HTTP (the caller answers with its own error). Bounded: a response head of `MAX_HEAD`
bytes, a body of `max_body`, `timeout_s` for the whole exchange.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

log = logging.getLogger("tidelog.registry")

FORWARDED = "x-tidelog-forwarded"
MAX_HEAD = 64 * 1024
PASSED_HEADERS = ("authorization", "content-type", "accept")


class Forwarder:
    def __init__(
        self,
        locate: Callable[[], Awaitable[str | None]],
        timeout_s: float = 10.0,
        max_body: int = 16 * 1024 * 1024,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """`tls`: the client context an https:// primary is reached with (its CAs)."""
        self.locate = locate
        self.tls = tls
        self.timeout_s = timeout_s
        self.max_body = max_body

    async def forward(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, str] | None:
        if FORWARDED in headers:
            return None
        url = await self.locate()
        if url is None:
            return None
        try:
            return await asyncio.wait_for(self._exchange(url, method, target, headers, body), self.timeout_s)
        except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
            log.warning("schema registry: forwarding %s %s to %s failed: %s", method, target, url, e)
            return None

    async def _exchange(
        self, url: str, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, str]:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        if parts.scheme == "https":
            context = self.tls if self.tls is not None else ssl.create_default_context()
            reader, writer = await asyncio.open_connection(
                host, port, limit=MAX_HEAD, ssl=context, server_hostname=host
            )
        else:
            reader, writer = await asyncio.open_connection(host, port, limit=MAX_HEAD)
        try:
            head = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close", f"{FORWARDED}: 1"]
            head += [f"{k}: {headers[k]}" for k in PASSED_HEADERS if k in headers]
            head.append(f"Content-Length: {len(body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
            await writer.drain()
            lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            length = next(
                (int(v) for k, _, v in (ln.partition(":") for ln in lines[1:]) if k.lower() == "content-length"), 0
            )
            if not 0 <= length <= self.max_body:
                raise ValueError(f"a body of {length} bytes")
            return status, (await reader.readexactly(length)).decode()
        finally:
            writer.close()
