"""The URL a broker's registry listens on, read from the broker's log: tests give the listener
port 0, so no port chosen in advance can be taken by another process before the broker binds it
(a restarted broker gets a new one: the last line counts)."""

from __future__ import annotations

import re
import time
from pathlib import Path

_LISTENING = re.compile(r"schema registry listening on (https?://[^\s]+)")


def registry_url(log_path: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        found = _LISTENING.findall(log_path.read_text(errors="replace")) if log_path.exists() else []
        if found:
            return found[-1]
        if time.monotonic() > deadline:
            raise TimeoutError(f"no registry listener in {log_path}")
        time.sleep(0.05)
