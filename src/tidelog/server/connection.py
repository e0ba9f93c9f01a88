"""One client connection: an asyncio Protocol over the sans-IO frame decoder and the router.

Responses leave in request order. A request answered synchronously is encoded at once; one
answered later (long-poll Fetch, a Produce waiting for a flush) holds its place in `_slots` and
everything behind it waits. All responses ready after one read go out in a single `writelines`.
Fetch responses carry segment bytes as `FileSlice`s, sent with os.sendfile (`sendfile.FileStream`)
on plain TCP; on TLS, or when the response must wait behind an unanswered request (the slice's
descriptor is only guaranteed valid now), they are read into bytes instead.
Bad input (oversized or malformed frames, unknown APIs/versions, undecodable bodies) closes the
connection with a log line; it never propagates to other connections.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import struct
from collections import deque
from dataclasses import dataclass
from inspect import isawaitable
from typing import TYPE_CHECKING, Any, cast

from ..wire.frame import FrameDecoder, FrameError
from ..wire.header import HeaderError, RequestHeader, parse_request_header, peek_key_version, response_header
from .router import NO_RESPONSE
from .sendfile import FileStream, has_file_chunks, materialize

if TYPE_CHECKING:
    from .broker import Broker
    from .router import Route

log = logging.getLogger("tidelog.server")
_I32 = struct.Struct(">i")
API_VERSIONS = 18
FETCH = 1
UNSUPPORTED_VERSION = 35


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    connection: KafkaConnection
    broker: Broker

    @property
    def api_version(self) -> int:
        return self.header.api_version


class _Slot:
    __slots__ = ("chunks", "done", "files")

    def __init__(self) -> None:
        self.chunks: list[Any] | None = None
        self.done = False
        self.files = False  # chunks include FileSlices (sent with sendfile)


class KafkaConnection(asyncio.Protocol):
    def __init__(self, broker: Broker, listener_name: str) -> None:
        self.broker = broker
        self.listener_name = listener_name
        self.router = broker.router
        self.decoder = FrameDecoder(broker.config["socket.request.max.bytes"])
        self.transport: asyncio.Transport | None = None
        self.peer = None
        self._slots: deque[_Slot] = deque()
        self._out: list[Any] = []
        self._closed = False
        self._paused_reading = False
        self._write_paused = False
        self._max_queued = broker.config["queued.max.requests"]
        self.tasks: dict[asyncio.Future[Any], None] = {}  # in order (a set's order would follow addresses)
        self._sock_fd = -1  # the socket's descriptor when sendfile can be used (plain TCP)
        self._stream: FileStream | None = None  # a response being sent with sendfile
        self._held: deque[bytes | bytearray] = deque()  # frames read but not dispatched (backpressure)
        # None unless this listener authenticates or an authorizer is configured (security.Session)
        self.security = broker.security.session(self)

    # ---- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream server's transport (uvloop's is not an asyncio.Transport subclass, but is one)
        self.transport = cast(asyncio.Transport, transport)
        self.peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            if transport.get_extra_info("sslcontext") is None:
                self._sock_fd = sock.fileno()
            rcvbuf = self.broker.config["socket.receive.buffer.bytes"]
            if rcvbuf > 0:  # room for whole pipelined Produce requests while this loop is busy
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
                except OSError:
                    pass
        if not self.broker.connection_opened(self):
            log.warning("refusing connection from %s: max.connections reached", self.peer)
            self._closed = True
            transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        for t in list(self.tasks):
            t.cancel()
        self.broker.connection_closed(self)

    def pause_writing(self) -> None:
        # The client is not reading: stop reading its requests so that memory stays bounded.
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            frames = self.decoder.feed(data)
        except FrameError as e:
            self.close_with(f"bad frame: {e}")
            return
        self._held.extend(frames)
        self._dispatch_held()

    def _backlogged(self) -> bool:
        """Too much owed to this client: stop taking its requests (they wait in `_held`, and
        reading pauses). Owed = queued.max.requests responses, a full transport buffer, or a
        sendfile response still going out with another answer already waiting behind it; so a
        client that never reads holds a bounded amount of broker memory."""
        return (
            self._write_paused
            or len(self._slots) >= self._max_queued
            or (self._stream is not None and bool(self._slots))
        )

    def _dispatch_held(self) -> None:
        held = self._held
        while held and not self._closed and not self._backlogged():
            self._dispatch(held.popleft())
        if self._closed:
            return
        self._flush()
        self._update_reading()

    # ---- dispatch ------------------------------------------------------------------------
    def _dispatch(self, frame: bytes | bytearray) -> None:
        security = self.security
        if security is not None and security.raw_frame(frame):
            return
        try:
            api_key, version, correlation_id = peek_key_version(frame)
        except HeaderError as e:
            self.close_with(f"bad request header: {e}")
            return
        route = self.router.get(api_key)
        if route is None or not route.supports(version):
            if api_key == API_VERSIONS:
                self._unsupported_api_versions(correlation_id)
                return
            self.close_with(f"unsupported api {api_key} v{version}")
            return
        flexible = route.is_flexible(version)
        try:
            header, offset = parse_request_header(frame, flexible)
            request = route.decode(frame, offset, version)
        except Exception as e:  # noqa: BLE001 - any decode failure closes this connection only
            self.close_with(f"cannot decode api {api_key} v{version}: {e} (frame starts {frame[:64].hex()})")
            return
        ctx = RequestContext(header, self, self.broker)
        try:
            pipeline = route.pipeline
            assert pipeline is not None  # the router seals every route before traffic
            result = pipeline(ctx, request) if security is None else security.handle(ctx, route, request)
        except Exception:
            log.exception("handler for api %d v%d failed; closing %s", api_key, version, self.peer)
            self.close_with("handler error")
            return
        if result is NO_RESPONSE:
            return
        slot = _Slot()
        self._slots.append(slot)
        if isawaitable(result):
            fut = asyncio.ensure_future(result)
            self.tasks[fut] = None
            fut.add_done_callback(functools.partial(self._completed, slot=slot, route=route, header=header))
        else:
            self._fill(slot, route, header, result)
            if slot.files:
                self._flush()

    def _fill(self, slot: _Slot, route: Route, header: RequestHeader, result: Any) -> None:
        try:
            body = route.encode(result, header.api_version)
        except Exception:  # a response that cannot be encoded closes this connection only
            log.exception(
                "cannot encode the answer to api %d v%d; closing %s", header.api_key, header.api_version, self.peer
            )
            self.close_with("response encoding error")
            slot.chunks, slot.done = [], True
            return
        head = response_header(header.correlation_id, header.api_key, route.is_flexible(header.api_version))
        if isinstance(body, (bytes, bytearray)):
            slot.chunks = [_I32.pack(len(head) + len(body)) + head, body]
        else:
            size = len(head) + sum(len(c) for c in body)
            slot.chunks = [_I32.pack(size) + head, *body]
            if header.api_key == FETCH and has_file_chunks(body):
                self._prepare_files(slot)
        slot.done = True

    def _prepare_files(self, slot: _Slot) -> None:
        # Zero-copy only when this response goes out now (the slices' descriptors are valid
        # during this callback); otherwise, or on TLS, read the slices into bytes.
        if self._sock_fd >= 0 and not self._closed:
            self._flush()  # earlier answers first (this slot is not done yet: the flush stops at it)
            if self._slots and self._slots[0] is slot and self._stream is None:
                slot.files = True
                return
        slot.chunks = materialize(slot.chunks)  # type: ignore[arg-type]  # set by _fill before files are prepared

    def _completed(self, fut: asyncio.Future[Any], slot: _Slot, route: Route, header: RequestHeader) -> None:
        self.tasks.pop(fut, None)
        if self._closed or fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            log.error("handler for api %d failed: %r", header.api_key, exc, exc_info=exc)
            self.close_with("handler error")
            return
        result = fut.result()
        try:
            if result is NO_RESPONSE:
                slot.chunks = []
                slot.done = True
            else:
                self._fill(slot, route, header, result)
        except Exception:
            log.exception("encoding the response to api %d failed", header.api_key)
            self.close_with("encode error")
            return
        self._flush()
        self._update_reading()

    def _unsupported_api_versions(self, correlation_id: int) -> None:
        # The v0 body with UNSUPPORTED_VERSION and our own range for ApiVersions, as clients expect.
        route = self.router.get(API_VERSIONS)
        assert route is not None
        body = struct.pack(">hihhh", UNSUPPORTED_VERSION, 1, API_VERSIONS, route.min_version, route.max_version)
        slot = _Slot()
        slot.chunks = [_I32.pack(4 + len(body)) + _I32.pack(correlation_id), body]
        slot.done = True
        self._slots.append(slot)

    def push_raw(self, data: bytes) -> None:
        """Queue a size-prefixed frame with no response header (SASL tokens after SaslHandshake v0)."""
        slot = _Slot()
        slot.chunks = [_I32.pack(len(data)) + data]
        slot.done = True
        self._slots.append(slot)

    # ---- output --------------------------------------------------------------------------
    def _flush(self) -> None:
        if self._stream is not None:
            return  # a sendfile response is being written; the rest follows it
        slots = self._slots
        while True:
            out: list[Any] = []
            while slots and slots[0].done and not slots[0].files:
                out.extend(slots.popleft().chunks)  # type: ignore[arg-type]  # a done slot has its chunks
            if self._closed or self.transport is None:
                return
            if out:
                self.transport.writelines(out)
            if not (slots and slots[0].done):
                return
            chunks = slots.popleft().chunks
            assert chunks is not None  # a done slot has its chunks
            stream = FileStream(self.transport, asyncio.get_running_loop(), self._sock_fd, chunks, self._stream_done)
            try:
                if stream.start():
                    continue  # written at once
            except OSError as e:
                self.close_with(f"sendfile failed: {e}")
                return
            self._stream = stream
            return

    def _stream_done(self, exc: BaseException | None) -> None:
        self._stream = None
        if exc is not None:
            self.close_with(f"sendfile failed: {exc}")
            return
        self._flush()
        self._update_reading()

    def _update_reading(self) -> None:
        if self.transport is None or self._closed:
            return
        if self._held and not self._backlogged():
            self._dispatch_held()  # calls back here once the held frames are dispatched
            return
        should_pause = bool(self._held) or self._backlogged()
        if should_pause and not self._paused_reading:
            self._paused_reading = True
            self.transport.pause_reading()
        elif not should_pause and self._paused_reading:
            self._paused_reading = False
            self.transport.resume_reading()

    def close_with(self, reason: str) -> None:
        if self._closed:
            return
        log.warning("closing connection from %s: %s", self.peer, reason)
        self._closed = True
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self.transport is not None:
            self._flush_done_only()
            self.transport.close()

    def _flush_done_only(self) -> None:
        # Answers already computed for earlier requests still go out before the close.
        out: list[Any] = []
        while self._slots and self._slots[0].done:
            out.extend(materialize(self._slots.popleft().chunks))  # type: ignore[arg-type]  # done: chunks set
        if out and self.transport is not None:
            self.transport.writelines(out)
