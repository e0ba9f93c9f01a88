"""In-process fuzzing of everything a request frame goes through before a handler sees it:
frame splitting (`FrameDecoder`, fed in random chunks), the request header, and every routed
API's body decoder (kio schemas for the control plane, tidelog's own Produce/Fetch/ListOffsets
codecs), seeded with real clients' frames and mutated by hypothesis.

Property: each frame is either decoded or rejected with an `Exception` (the connection turns that
into a closed connection); nothing escapes as BaseException, nothing loops, and decoding a frame
never allocates much more than the frame itself (a forged array count must not preallocate).

More examples: `TIDELOG_FUZZ_EXAMPLES=20000` (the default keeps this file under ~20 s).
"""

import os
import random
import tracemalloc

import pytest
from corpus import all_seeds, frame, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidelog.core.config import load_config
from tidelog.server.broker import Broker
from tidelog.wire.frame import FrameDecoder, FrameError
from tidelog.wire.header import parse_request_header, peek_key_version

SEEDS = all_seeds()
EXAMPLES = int(os.environ.get("TIDELOG_FUZZ_EXAMPLES", "600"))
MAX_FRAME = 1 << 20
# Decoding a frame of n bytes may allocate objects for what it holds; a forged count or length
# must not make it allocate more than this.
ALLOC_BUDGET = lambda n: 64 * n + (1 << 20)


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz-broker")
    broker = Broker(load_config(None, [f"log.dirs={d}"]))
    return broker.router


def decode(router, f: bytes):
    """What `KafkaConnection._dispatch` does before calling a handler. Returns the request or
    None when the connection would answer/close without decoding."""
    api_key, version, _corr = peek_key_version(f)
    route = router.get(api_key)
    if route is None or not route.supports(version):
        return None
    header, offset = parse_request_header(f, route.is_flexible(version))
    return route.decode(f, offset, version)


def check_one(router, f: bytes) -> None:
    tracemalloc.reset_peak()
    try:
        decode(router, f)
    except Exception:  # noqa: BLE001 - a rejected frame is the expected outcome
        pass
    _cur, peak = tracemalloc.get_traced_memory()
    assert peak < ALLOC_BUDGET(len(f)), f"decoding {len(f)} bytes allocated {peak} bytes: {f[:64].hex()}"


def test_every_seed_decodes(router):
    """The corpus itself is valid: every captured frame of a routed version decodes."""
    decoded = 0
    for f in SEEDS:
        api_key, version, _ = peek_key_version(f)
        route = router.get(api_key)
        if route is not None and route.supports(version):
            decode(router, f)
            decoded += 1
    assert decoded > 200


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
@given(st.integers(0, len(SEEDS) - 1), st.integers(0, len(SEEDS) - 1), st.randoms(use_true_random=False))
def test_mutated_frames_decode_or_raise(router, i, j, rnd):
    f = mutate(SEEDS[i], random.Random(rnd.random()), SEEDS[j])
    tracemalloc.start()
    try:
        check_one(router, f)
    finally:
        tracemalloc.stop()


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.integers(0, len(SEEDS) - 1), min_size=1, max_size=6),
    st.lists(st.integers(1, 64), min_size=1, max_size=8),
    st.randoms(use_true_random=False),
)
def test_frame_stream_split_anywhere(router, picks, cuts, rnd):
    """A stream of (sometimes mutated) frames fed in arbitrary chunks yields the same frames, or
    a FrameError for a negative or oversized size prefix."""
    rng = random.Random(rnd.random())
    payloads = [mutate(SEEDS[p], rng) if rng.random() < 0.5 else SEEDS[p] for p in picks]
    stream = b"".join(frame(p) for p in payloads)
    if rng.random() < 0.2:  # a forged size prefix somewhere
        pos = rng.randrange(len(stream))
        stream = (
            stream[:pos] + rng.choice([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x00\x20\x00\x00"]) + stream[pos:]
        )
    dec = FrameDecoder(MAX_FRAME)
    got, pos, k = [], 0, 0
    try:
        while pos < len(stream):
            n = cuts[k % len(cuts)]
            got += dec.feed(stream[pos : pos + n])
            pos += n
            k += 1
            assert dec.buffered <= MAX_FRAME + 4
    except FrameError:
        return
    joined = b"".join(frame(bytes(g)) for g in got)
    assert stream.startswith(joined)  # complete frames, in order, unchanged
    assert dec.buffered <= len(stream) - len(joined)  # and only the incomplete rest is held
    for g in got:
        try:
            decode(router, g)
        except Exception:  # noqa: BLE001
            pass


def test_hot_codecs_every_version_truncated_everywhere(router):
    """Every routed version of Produce/Fetch/ListOffsets seeds, cut at every byte: rejected
    cleanly or decoded (trailing bytes are tolerated, as in Kafka)."""
    hot = [f for f in SEEDS if peek_key_version(f)[0] in (0, 1, 2)]
    assert hot
    for f in hot[:40]:
        for cut in range(8, len(f), max(1, len(f) // 200)):
            try:
                decode(router, f[:cut])
            except Exception:  # noqa: BLE001
                pass


def test_forged_counts_never_abort_the_process():
    """kio's native reader preallocates from the count on the wire; a forged count used to abort
    the broker (SIGABRT). `control_guard` rejects such bodies first (regression test)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("forged_counts.py")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    last = proc.stdout.strip().splitlines()[-1:] or [""]
    assert proc.returncode == 0, f"exit {proc.returncode} decoding {last[0]}\n{proc.stderr[-2000:]}"
    assert last[0].startswith("ok:")
