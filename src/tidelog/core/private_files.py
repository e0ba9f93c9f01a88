"""Secrets at rest: `tidelog-scram.json` (salted SCRAM keys) and `tidelog-acls.json`.

Both are written atomically (a temporary file fsynced, then renamed over the old one) and are
readable by the broker's user only (0600) from the moment they exist: the temporary file is
created 0600 and its mode set again in case a stale one was left with another mode. Salted SCRAM
keys allow an offline dictionary attack, so a file found with wider permissions at start is
narrowed to 0600 with a warning.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("tidelog.security")

MODE = 0o600


def write_private_json(path: Path, data: object) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, MODE)
    try:
        os.fchmod(fd, MODE)
        with os.fdopen(fd, "w") as f:
            fd = -1
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
    finally:
        if fd >= 0:
            os.close(fd)
    os.replace(tmp, path)


def narrow_mode(path: Path) -> None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if mode & 0o077:
        log.warning("%s was readable by others (mode %o); now 0600", path, mode)
        os.chmod(path, MODE)
