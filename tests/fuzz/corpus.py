"""The fuzzers' seed corpus and mutation operators.

Seeds are the request frames captured from the four real clients (`tests/data/client-requests.jsonl`,
a copy of `shared/captures`), without their size prefix. Mutations are the ones that find bugs in
length-prefixed binary formats: byte flips, "interesting" integers written over int16/int32 fields
(lengths, counts, versions), insertions, deletions, truncation, and splicing two frames together.
Both the hypothesis tests and the atheris harness (`fuzz/atheris_wire.py`) use these.
"""

from __future__ import annotations

import base64
import json
import random
import struct
from pathlib import Path

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "client-requests.jsonl"
INTERESTING_16 = (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, -0x8000, 0x100)
INTERESTING_32 = (0, 1, -1, 0x7FFFFFFF, -0x80000000, 0xFFFF, 0x10000, 0x7FFF, 1 << 24)


def load_seeds(path: Path = CAPTURES) -> list[bytes]:
    seen, out = set(), []
    for line in path.read_text().splitlines():
        frame = base64.b64decode(json.loads(line)["frame_b64"])
        if frame not in seen:
            seen.add(frame)
            out.append(frame)
    return out


def mutate(frame: bytes, rng: random.Random, other: bytes | None = None, rounds: int | None = None) -> bytes:
    """One mutated copy of `frame` (the api key and version are mutated too, sometimes)."""
    f = bytearray(frame)
    for _ in range(rounds if rounds is not None else rng.randint(1, 4)):
        op = rng.randrange(8)
        n = len(f)
        if n == 0:
            f += rng.randbytes(rng.randint(1, 16))
            continue
        pos = rng.randrange(n)
        if op == 0:
            f[pos] ^= 1 << rng.randrange(8)
        elif op == 1:
            f[pos] = rng.randrange(256)
        elif op == 2 and pos + 2 <= n:
            f[pos : pos + 2] = struct.pack(">h", rng.choice(INTERESTING_16) if rng.random() < 0.5 else 0x7FFF)
        elif op == 3 and pos + 4 <= n:
            v = rng.choice(INTERESTING_32)
            f[pos : pos + 4] = struct.pack(">i", v if v < 1 << 31 else v - (1 << 32))
        elif op == 4:
            f[pos:pos] = rng.randbytes(rng.randint(1, 32))
        elif op == 5:
            del f[pos : pos + rng.randint(1, 32)]
        elif op == 6:
            del f[pos:]
        elif op == 7 and other:
            cut = rng.randrange(len(other))
            f[pos:] = other[cut:]
    if rng.random() < 0.15 and len(f) >= 4:
        f[2:4] = struct.pack(">h", rng.randrange(-2, 20))  # another version of the same API
    return bytes(f)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def all_seeds() -> list[bytes]:
    """Captured frames plus a schema-built frame for every control-plane (api, version) with a
    schema (`schema_seeds`), so that every handler is reached, not only those clients used."""
    from schema_seeds import seed_frame

    out = load_seeds()
    for key in range(0, 80):
        if key in (0, 1, 2):
            continue
        for v in range(0, 20):
            f = seed_frame(key, v)
            if f is not None:
                out.append(f)
    return out
