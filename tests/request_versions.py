"""Which protocol versions clients used: tidelog's `tidelog_requests_by_version_total{api,version}`
counters, read from a broker's metrics listener (`metrics.listener`). Tests that must prove a
client ran a protocol (transaction version 2: Produce v12+, EndTxn v5, no AddPartitionsToTxn)
compare two readings."""

from __future__ import annotations

import re
import urllib.request

_LINE = re.compile(r'^tidelog_requests_by_version_total\{api="([^"]+)",version="(\d+)"\} ([0-9.e+]+)$', re.M)


def versions_used(metrics_port: int) -> dict[tuple[str, int], int]:
    """(Kafka's API name, version) -> requests handled so far."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    return {(api, int(v)): int(float(n)) for api, v, n in _LINE.findall(text)}


def used_since(before: dict[tuple[str, int], int], after: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """The requests handled between two readings, per (api, version)."""
    return {k: n - before.get(k, 0) for k, n in after.items() if n > before.get(k, 0)}


def versions_of(used: dict[tuple[str, int], int], api: str) -> set[int]:
    return {v for (a, v) in used if a == api}
