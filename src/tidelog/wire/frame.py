"""Size-prefixed frame splitting, sans-IO.

Kafka frames are an int32 big-endian size followed by that many bytes (request header + body).
`FrameDecoder.feed(data)` returns the whole frames completed by `data`; a frame announced larger
than `max_frame_bytes` raises `FrameTooLarge` before any buffer for it is allocated, and a
negative size raises `InvalidFrame`. Frames are returned as writable `bytearray`s the caller
owns: a frame under `FrameDecoder.BIG_FRAME` bytes is copied once out of the bytes read; a larger
one is the buffer it was assembled in (no copy). Either way the caller may patch it in place (the
log assigns a Produce's offsets in the request frame, so a produced record set is copied once,
or not at all, between the socket and the page cache).
"""

from __future__ import annotations

import struct

__all__ = ["FrameDecoder", "FrameError", "FrameTooLarge", "InvalidFrame"]

_SIZE = struct.Struct(">i")


class FrameError(ValueError):
    """The byte stream cannot be split into frames; the connection must be closed."""


class FrameTooLarge(FrameError):
    pass


class InvalidFrame(FrameError):
    pass


class FrameDecoder:
    """Buffers a partial frame and waits, without copying, until `_need` bytes are there: a 1 MB
    frame arriving in 64 KiB reads costs one append per read and one copy out, not a copy of the
    whole buffer per read (which cost 5 ms per 1 MB frame).

    A frame of `BIG_FRAME` bytes or more is assembled in a `bytearray` of its exact size as its
    reads arrive and returned as that bytearray (no copy out): the caller owns it and may work
    in it in place (the log assigns a Produce's offsets there). Smaller frames are copied once
    into a `bytearray` of their own."""

    BIG_FRAME = 64 * 1024

    __slots__ = ("_buf", "_need", "_big", "_fill", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self._buf = bytearray()
        self._need = 4  # bytes the buffer must hold before the next frame completes
        self._big: bytearray | None = None  # a large frame being filled
        self._fill = 0
        self.max_frame_bytes = max_frame_bytes

    def limit(self, max_frame_bytes: int) -> None:
        """Frames longer than `max_frame_bytes` are refused from the next one on (SASL: a small
        limit before authentication, the listener's own after)."""
        self.max_frame_bytes = max_frame_bytes

    def feed(self, data: bytes) -> list[bytearray]:
        frames: list[bytearray] = []
        big = self._big
        if big is not None:
            fill = self._fill
            k = min(len(data), len(big) - fill)
            with memoryview(data) as src:
                big[fill : fill + k] = src[:k]
            fill += k
            if fill < len(big):
                self._fill = fill
                return frames
            self._big = None
            frames.append(big)
            if k == len(data):
                return frames
            data = data[k:]
        buf = self._buf
        if not buf:
            # Fast path: no leftovers; slice frames straight out of `data`.
            more, rest = self._split(data)
            frames += more
            if rest:
                self._keep(rest)
            return frames
        buf += data
        if len(buf) < self._need:
            return frames
        with memoryview(buf) as mv:
            more, rest = self._split(mv)
            rest = bytes(rest)
        frames += more
        self._buf = bytearray()
        self._need = 4
        if rest:
            self._keep(rest)
        return frames

    def _keep(self, rest: bytes | bytearray | memoryview) -> None:
        """Hold the start of an incomplete frame (`_split` has checked its size when present)."""
        if len(rest) >= 4:
            size = _SIZE.unpack_from(rest)[0]
            if size >= self.BIG_FRAME:
                big = bytearray(size)
                k = len(rest) - 4
                big[:k] = rest[4:]
                self._big, self._fill = big, k
                return
            self._need = 4 + size
        else:
            self._need = 4
        self._buf += rest

    def _split(self, data: bytes | memoryview) -> tuple[list[bytearray], bytes | memoryview]:
        frames: list[bytearray] = []
        pos = 0
        end = len(data)
        unpack = _SIZE.unpack_from
        limit = self.max_frame_bytes
        while end - pos >= 4:
            (size,) = unpack(data, pos)
            if size < 0:
                raise InvalidFrame(f"negative frame size {size}")
            if size > limit:
                raise FrameTooLarge(f"frame of {size} bytes exceeds socket.request.max.bytes={limit}")
            if end - pos - 4 < size:
                break
            frames.append(bytearray(data[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        return frames, data[pos:]

    @property
    def buffered(self) -> int:
        return len(self._buf) + (self._fill if self._big is not None else 0)
