"""Zero-copy responses: stream a response whose chunks include `FileSlice`s with `os.sendfile`.

A Fetch response carries segment bytes as `FileSlice`s (file descriptor, position, length) in
its chunk list instead of bytes read into Python. `FileStream` writes the chunks in order to a
plain TCP transport: byte chunks through `transport.write`, file slices with `os.sendfile` from
the segment's descriptor straight to the socket once the transport's own buffer is empty. When
the socket is full it waits for writability on a duplicate of the socket's descriptor (the
event loop refuses a reader/writer on a descriptor a transport owns), and the file slice's
descriptor is duplicated too, so a segment deleted meanwhile stays readable until the stream
ends. Later responses on the connection wait until the stream is done (responses stay in
request order).

TLS transports cannot use sendfile: the connection turns file slices into bytes for them
(`materialize`).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..log.segment import FileSlice

__all__ = ["FileSlice", "FileStream", "has_file_chunks", "materialize"]


def has_file_chunks(chunks: Iterable[object]) -> bool:
    for c in chunks:
        if type(c) is FileSlice:
            return True
    return False


def materialize(chunks: list[Any]) -> list[Any]:
    """The same chunks with file slices read into bytes (the copy path)."""
    return [c.tobytes() if type(c) is FileSlice else c for c in chunks]


class FileStream:
    """Writes `chunks` to `transport` in order; when that could not be done at once (`start`
    returned False), calls `on_done(None)` at the end, or `on_done(exc)` on failure."""

    __slots__ = ("transport", "loop", "sock_fd", "chunks", "on_done", "_wfd", "_ffd", "_pos", "_left")

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        loop: asyncio.AbstractEventLoop,
        sock_fd: int,
        chunks: list[Any],
        on_done: Callable[[BaseException | None], None],
    ) -> None:
        self.transport = transport
        self.loop = loop
        self.sock_fd = sock_fd
        self.chunks = deque(chunks)
        self.on_done = on_done
        self._wfd: int | None = None  # duplicate of the socket fd we wait on for writability
        self._ffd: int | None = None  # duplicate of the current slice's file fd, once we had to wait
        self._pos = -1
        self._left = 0

    def start(self) -> bool:
        """True when everything was written at once (`on_done` is then not called); False when
        the rest follows as the socket drains. Raises OSError."""
        try:
            done = self._step()
        except OSError:
            self.close()
            raise
        if done:
            self.close()
        return done

    def _pump(self) -> None:
        try:
            if self._step():
                self._finish(None)
        except OSError as e:
            self._finish(e)

    def _step(self) -> bool:
        """Write as much as possible; True when every chunk is written."""
        chunks = self.chunks
        transport = self.transport
        while chunks:
            c = chunks[0]
            if type(c) is not FileSlice:
                transport.write(c)
                chunks.popleft()
                continue
            if self._pos < 0:
                self._pos, self._left = c.position, c.length
            if transport.get_write_buffer_size():
                self._wait(c)  # our earlier bytes must reach the socket before the file's
                return False
            fd = self._ffd if self._ffd is not None else c.fd
            out = self._wfd if self._wfd is not None else self.sock_fd
            while self._left > 0:
                try:
                    n = os.sendfile(out, fd, self._pos, self._left)
                except (BlockingIOError, InterruptedError):
                    self._wait(c)
                    return False
                if n == 0:
                    raise OSError(f"{c.path}: file ended {self._left} bytes early")
                self._pos += n
                self._left -= n
            chunks.popleft()
            self._pos = -1
            if self._ffd is not None:
                os.close(self._ffd)
                self._ffd = None
        return True

    def _wait(self, c: FileSlice) -> None:
        if self._ffd is None:
            self._ffd = os.dup(c.fd)
        if self._wfd is None:
            self._wfd = os.dup(self.sock_fd)
            self.loop.add_writer(self._wfd, self._pump)

    def _finish(self, exc: BaseException | None) -> None:
        self.close()
        self.on_done(exc)

    def close(self) -> None:
        """Stop (connection lost) and release the duplicated descriptors."""
        if self._wfd is not None:
            self.loop.remove_writer(self._wfd)
            os.close(self._wfd)
            self._wfd = None
        if self._ffd is not None:
            os.close(self._ffd)
            self._ffd = None
        self.chunks.clear()
