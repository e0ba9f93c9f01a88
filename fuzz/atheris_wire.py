"""Coverage-guided fuzzing (atheris) of everything a request frame goes through before a handler:
frame splitting, request header, every routed API's body decoder. Seeded with real clients'
frames (tests/data/client-requests.jsonl). Optional and long; not part of CI.

    .venv/bin/pip install atheris
    .venv/bin/python fuzz/atheris_wire.py -atheris_runs=2000000 -rss_limit_mb=2048 [-max_total_time=600]

Anything but a clean return or an `Exception` from the decoders (an abort, a hang caught by
-timeout, RSS above -rss_limit_mb) is a finding; atheris writes the input to crash-*.
"""

import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from tidelog.core.config import load_config
    from tidelog.server.broker import Broker
    from tidelog.wire.frame import FrameDecoder, FrameError
    from tidelog.wire.header import parse_request_header, peek_key_version

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))
from corpus import load_seeds

ROUTER = Broker(load_config(None, [f"log.dirs={tempfile.mkdtemp(prefix='atheris-')}"])).router


def one_input(data: bytes) -> None:
    dec = FrameDecoder(1 << 20)
    try:
        frames = dec.feed(len(data).to_bytes(4, "big") + data)
    except FrameError:
        return
    for f in frames:
        try:
            k, v, _ = peek_key_version(f)
            route = ROUTER.get(k)
            if route is None or not route.supports(v):
                continue
            _h, off = parse_request_header(f, route.is_flexible(v))
            route.decode(f, off, v)
        except Exception:  # noqa: BLE001 - rejected frames close the connection; that's fine
            pass


def main() -> None:
    corpus = Path(tempfile.mkdtemp(prefix="atheris-corpus-"))
    for i, seed in enumerate(load_seeds()):
        (corpus / f"seed-{i}").write_bytes(seed)
    atheris.Setup([sys.argv[0], *sys.argv[1:], str(corpus)], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
