"""Run as a script (by test_decoders.py): every captured control-plane frame with an int16, int32
or uvarint "count" forged at every byte of its body, decoded under a 4 GiB address-space limit.
A decoder that preallocates from the count makes the extension abort the process (exit -6); the
script prints the frame before decoding it, so the last line names the culprit."""

import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from corpus import load_seeds

from tidelog.wire import control
from tidelog.wire.header import parse_request_header, peek_key_version

PATCHES = (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f", b"\x7f\xff", b"\xff\xff\xff\x7f")


def main() -> int:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    done, cases = set(), 0
    for f in load_seeds():
        k, v, _ = peek_key_version(f)
        flex = control.flexible(k, v)
        if k in (0, 1, 2) or flex is None or (k, v) in done:
            continue
        done.add((k, v))
        _h, off = parse_request_header(f, flex)
        for pos in range(off, len(f)):
            for patch in PATCHES:
                g = f[:pos] + patch + f[pos + len(patch) :]
                print(f"api {k} v{v}: {g.hex()}", flush=True)
                try:
                    control.decode_request(k, v, g, off)
                except Exception:  # noqa: BLE001
                    pass
                cases += 1
    print(f"ok: {cases} forged frames over {len(done)} api versions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
