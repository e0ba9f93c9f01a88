"""`replace_file`: the way the log's small text files (checkpoints, the leader epoch cache) are
written: to a temporary file beside the target, fsynced, then renamed over it, so a crash leaves
either the old or the new contents, never a torn mix."""

from __future__ import annotations

import os
from pathlib import Path


def replace_file(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
