"""An asyncio connection from one broker to another, speaking the Kafka protocol with tidelog's
own codecs: the replica fetcher's Fetch (hot-path codec) and OffsetForLeaderEpoch (kio).

One request at a time per connection; every call is bounded by a timeout and a failure closes
the connection (the caller reconnects)."""

from __future__ import annotations

import asyncio
import io
import struct
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kio.serial import entity_reader, entity_writer

from ..wire import control
from ..wire import fetch as fetch_codec
from ..wire.primitives import Reader
from ..wire.schemas import request_schema, response_schema

if TYPE_CHECKING:
    from .metadata import MetadataCache

_I32 = struct.Struct(">i")
FETCH_VERSION = 11  # replica_id in the body, current_leader_epoch, log_start_offset; not flexible
OFFSET_FOR_LEADER_EPOCH_VERSION = 3  # replica_id; not flexible


# How a broker opens a connection to another: TCP by default; the deterministic simulation
# (tests/sim) passes its own network.
Connector = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


async def tcp_connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(host, port)


class PeerError(Exception):
    pass


class Peer:
    def __init__(
        self, host: str, port: int, client_id: str, timeout_s: float = 30.0, connect: Connector = tcp_connect
    ) -> None:
        self.host, self.port = host, port
        self._connect = connect
        self.client_id = client_id.encode()
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation = 0

    async def _ensure(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None or self._writer.is_closing():
            try:
                self._reader, self._writer = await asyncio.wait_for(self._connect(self.host, self.port), 5.0)
            except (TimeoutError, OSError) as e:
                raise PeerError(f"cannot connect to {self.host}:{self.port}: {e}") from e
        assert self._reader is not None and self._writer is not None
        return self._reader, self._writer

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def _call(
        self, api_key: int, version: int, body: list[Any] | bytes, timeout_s: float, flexible: bool = False
    ) -> bytes:
        """One request; `flexible` versions use request header v2 / response header v1 (tagged
        fields after the client id / the correlation id)."""
        reader, writer = await self._ensure()
        self._correlation = (self._correlation + 1) & 0x7FFF_FFFF
        header = struct.pack(">hhih", api_key, version, self._correlation, len(self.client_id)) + self.client_id
        if flexible:
            header += b"\x00"  # no tagged fields
        parts = [header] + ([body] if isinstance(body, (bytes, bytearray)) else list(body))
        size = sum(len(p) for p in parts)
        try:
            writer.write(_I32.pack(size))
            for p in parts:
                writer.write(p)
            await writer.drain()
            # asyncio.timeout, not wait_for: no inner task, which (Python 3.11 with uvloop) could
            # outlive the fetcher's cancellation at shutdown and keep the process alive
            async with asyncio.timeout(timeout_s):
                head = await reader.readexactly(4)
                frame = await reader.readexactly(_I32.unpack(head)[0])
        except (TimeoutError, OSError, asyncio.IncompleteReadError) as e:
            self.close()
            raise PeerError(f"{self.host}:{self.port}: {type(e).__name__} {e}") from e
        except BaseException:
            # cancelled mid-request: the answer may still come, and would be read as the answer
            # to the next request on this connection - which is closed instead
            self.close()
            raise
        if _I32.unpack_from(frame, 0)[0] != self._correlation:
            self.close()
            raise PeerError("correlation id mismatch")
        if not flexible:
            return frame[4:]
        r = Reader(frame, 4)
        r.tagged_fields()
        return frame[r.pos :]

    async def fetch(self, req: fetch_codec.FetchRequest) -> fetch_codec.FetchResponse:
        body = fetch_codec.encode_request(req, FETCH_VERSION)
        data = await self._call(fetch_codec.API_KEY, FETCH_VERSION, body, self.timeout_s + req.max_wait_ms / 1000)
        return fetch_codec.decode_response(data, FETCH_VERSION)

    async def control(self, api_key: int, version: int, data: dict[str, Any]) -> Any:
        cls = request_schema(api_key, version)
        rcls = response_schema(api_key, version)
        if cls is None or rcls is None:
            raise PeerError(f"no schema for api {api_key} v{version}")
        buf = io.BytesIO()
        entity_writer(cls)(buf, control.build(cls, data))
        frame = await self._call(
            api_key, version, buf.getvalue(), self.timeout_s, bool(getattr(cls, "__flexible__", False))
        )
        value: Any
        value, _ = entity_reader(rcls)(frame, 0)
        return value

    async def offsets_for_leader_epoch(self, replica_id: int, parts: dict[str, list[tuple[int, int, int]]]) -> Any:
        """parts: topic -> [(partition, current_leader_epoch, leader_epoch)]."""
        return await self.control(
            23,
            OFFSET_FOR_LEADER_EPOCH_VERSION,
            {
                "replica_id": replica_id,
                "topics": [
                    {
                        "topic": t,
                        "partitions": [
                            {"partition": p, "current_leader_epoch": cur, "leader_epoch": ep} for p, cur, ep in ps
                        ],
                    }
                    for t, ps in parts.items()
                ],
            },
        )


class PeerPool:
    """One connection (and a lock: one request at a time) per broker, to its `listener` endpoint
    as the metadata cache knows it; reconnected when the broker's address changes."""

    def __init__(
        self, cache: MetadataCache, listener: str, client_id: str, timeout_s: float, connect: Connector = tcp_connect
    ) -> None:
        self.cache = cache
        self.connect = connect
        self.listener = listener
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._peers: dict[int, tuple[Peer, asyncio.Lock]] = {}

    def get(self, broker: int) -> tuple[Peer, asyncio.Lock] | None:
        ep = self.cache.endpoint(broker, self.listener)
        if ep is None:
            return None
        have = self._peers.get(broker)
        if have is None or (have[0].host, have[0].port) != (ep.host, ep.port):
            if have is not None:
                have[0].close()
            have = self._peers[broker] = (
                Peer(ep.host, ep.port, self.client_id, self.timeout_s, self.connect),
                asyncio.Lock(),
            )
        return have

    def close(self) -> None:
        for peer, _lock in self._peers.values():
            peer.close()
        self._peers.clear()
