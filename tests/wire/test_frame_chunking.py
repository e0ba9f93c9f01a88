"""FrameDecoder gives the same frames however the byte stream is cut (partial-frame buffering)."""

import random
import struct

from tidelog.wire.frame import FrameDecoder


def test_any_chunking_gives_the_same_frames():
    rnd = random.Random(3)
    frames = [bytes(rnd.getrandbits(8) for _ in range(rnd.choice([0, 1, 3, 5, 100, 5000]))) for _ in range(200)]
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    for _trial in range(100):
        dec, out, i = FrameDecoder(1 << 20), [], 0
        while i < len(stream):
            n = rnd.choice([1, 2, 3, 4, 5, 7, 64, 1000, 9000])
            out += dec.feed(stream[i : i + n])
            i += n
        assert out == frames
        assert all(type(f) is bytearray for f in out)  # writable: Produce offsets are assigned in place
        assert dec.buffered == 0


def test_large_frame_in_small_reads_completes_once():
    body = bytes(range(256)) * 4096  # 1 MiB
    stream = struct.pack(">i", len(body)) + body + struct.pack(">i", 3) + b"abc"
    dec, out = FrameDecoder(2 << 20), []
    for i in range(0, len(stream), 65536):
        got = dec.feed(stream[i : i + 65536])
        out += got
    assert out == [body, b"abc"]


def test_big_frames_are_assembled_in_a_bytearray_of_their_size():
    big = bytes(range(256)) * 1024  # 256 KiB
    small = b"x" * 100
    stream = b"".join(struct.pack(">i", len(f)) + f for f in (small, big, small, big))
    for n in (1, 7, 4096, 65536, 300_000):
        dec, out = FrameDecoder(1 << 20), []
        for i in range(0, len(stream), n):
            out += dec.feed(stream[i : i + n])
        assert out == [small, big, small, big]
        # every frame writable: big ones filled in place, small ones copied out once
        assert [type(f) for f in out] == [bytearray, bytearray, bytearray, bytearray]
        assert dec.buffered == 0
