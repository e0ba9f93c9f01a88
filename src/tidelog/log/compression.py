"""Record batch compression codecs: gzip, snappy, lz4, zstd (attribute bits 0-2).

| id | codec  | library            | notes                                                       |
|----|--------|--------------------|-------------------------------------------------------------|
| 0  | none   |                    |                                                             |
| 1  | gzip   | zlib               | any number of gzip members                                  |
| 2  | snappy | cramjam            | written in xerial framing (as the Java client does); read   |
|    |        |                    | both xerial framing and raw snappy (librdkafka may send it) |
| 3  | lz4    | lz4.frame          | LZ4 frame format                                            |
| 4  | zstd   | zstandard          | frames with or without content size                         |

xerial framing: magic `82 'SNAPPY' 00` (8 bytes), version int32 BE, compatible version int32 BE,
then blocks of (int32 BE compressed length, raw snappy block).
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from .errors import UNSUPPORTED_COMPRESSION_TYPE, CorruptRecordError, LogError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODECS_BY_NAME = {v: k for k, v in CODEC_NAMES.items()} | {"uncompressed": NONE}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")

_zstd_c = zstandard.ZstdCompressor(level=3)
_zstd_d = zstandard.ZstdDecompressor()


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        out: bytes = lz4.frame.compress(bytes(data))
        return out
    if codec == ZSTD:
        return _zstd_c.compress(data)
    raise LogError(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    try:
        if codec == NONE:
            return bytes(data)
        if codec == GZIP:
            return _gunzip(bytes(data))
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            plain: bytes = lz4.frame.decompress(bytes(data))
            return plain
        if codec == ZSTD:
            return _zstd_d.decompressobj().decompress(bytes(data))
    except LogError:
        raise
    except Exception as e:  # noqa: BLE001 - every codec library has its own exception types
        raise CorruptRecordError(f"cannot decompress {CODEC_NAMES.get(codec)} data: {e}") from None
    raise CorruptRecordError(f"unknown compression codec {codec}")


def _gunzip(data: bytes) -> bytes:
    out = []
    while data:
        d = zlib.decompressobj(47)  # gzip or zlib header, auto-detected
        out.append(d.decompress(data))
        if not d.eof:
            raise CorruptRecordError("truncated gzip stream")
        data = d.unused_data
    return b"".join(out)


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    mv = memoryview(data)
    parts = [_XERIAL_HEADER]
    for i in range(0, len(mv), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(mv[i : i + _XERIAL_BLOCK]))
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: bytes | memoryview) -> bytes:
    mv = memoryview(data)
    if bytes(mv[:8]) != XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(mv))
    pos, out, n = 16, [], len(mv)
    while pos < n:
        if pos + 4 > n:
            raise CorruptRecordError("truncated xerial snappy block length")
        (size,) = _I32.unpack_from(mv, pos)
        pos += 4
        if size < 0 or pos + size > n:
            raise CorruptRecordError("truncated xerial snappy block")
        out.append(bytes(cramjam.snappy.decompress_raw(mv[pos : pos + size])))
        pos += size
    return b"".join(out)
