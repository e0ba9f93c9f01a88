"""`replace_file`: the way small files (the log's checkpoints and leader epoch cache, the topic
registry) are written: to a temporary file beside the target, fsynced, then renamed over it, so a
crash leaves either the old or the new contents, never a torn mix."""

from __future__ import annotations

import os
from pathlib import Path


def replace_file(path: Path, data: str | bytes, sync_dir: bool = False) -> None:
    """`sync_dir` also fsyncs the directory, so the rename itself survives a power loss."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync_dir:
        fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """fsync a directory, so the renames and removals of its entries survive a power loss."""
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
