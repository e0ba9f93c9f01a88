"""pytest imports test modules outside packages by their basename: two `test_x.py` in two such
folders break the whole run's collection ("import file mismatch"), which only `make test` sees
(the fast tier collects fewer folders). Each basename must be unique there."""

from __future__ import annotations

import collections
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_module_basenames_are_unique_outside_packages():
    seen: dict[str, list[str]] = collections.defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "__pycache__" in path.parts or (path.parent / "__init__.py").exists():
            continue
        seen[path.name].append(str(path.parent.relative_to(TESTS)))
    assert {n: ds for n, ds in seen.items() if len(ds) > 1} == {}
