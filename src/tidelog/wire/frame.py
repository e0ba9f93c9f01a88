"""Size-prefixed frame splitting, sans-IO.

Kafka frames are an int32 big-endian size followed by that many bytes (request header + body).
`FrameDecoder.feed(data)` returns the whole frames completed by `data`; a frame announced larger
than `max_frame_bytes` raises `FrameTooLarge` before any buffer for it is allocated, and a
negative size raises `InvalidFrame`. Frames are returned as `bytes` objects the caller owns.
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
    __slots__ = ("_buf", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self._buf = bytearray()
        self.max_frame_bytes = max_frame_bytes

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        if not buf:
            # Fast path: no leftovers; slice frames straight out of `data`.
            frames, rest = self._split(data)
            if rest:
                buf += rest
            return frames
        buf += data
        frames, rest = self._split(bytes(buf))
        self._buf = bytearray(rest)
        return frames

    def _split(self, data: bytes) -> tuple[list[bytes], bytes]:
        frames: list[bytes] = []
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
            frames.append(data[pos + 4 : pos + 4 + size])
            pos += 4 + size
        return frames, data[pos:]

    @property
    def buffered(self) -> int:
        return len(self._buf)
