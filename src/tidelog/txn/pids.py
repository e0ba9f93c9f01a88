"""Producer id allocation: unique across restarts, in blocks reserved durably.

`<data dir>/producer-id-block` holds one decimal number: the first id not yet reserved. Ids are
handed out from a reserved block of `BLOCK` ids; when it runs out the next block is reserved
(file rewritten and fsynced) before any of its ids is given out. A restart starts a new block,
so ids of a half-used block are never reused. `issued(pid)` tells whether the broker could have
issued an id (Produce answers UNKNOWN_PRODUCER_ID otherwise).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

BLOCK = 1000
FILE = "producer-id-block"


class ProducerIds(Protocol):
    """Where producer ids come from: this allocator on a single node, blocks reserved in etcd in
    a cluster (cluster/pids.py)."""

    def next_id(self) -> int: ...

    def issued(self, producer_id: int) -> bool: ...


class ProducerIdAllocator:
    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE
        try:
            self._reserved_end = int(self.path.read_text().strip() or 0)
        except FileNotFoundError:
            self._reserved_end = 0
        self._next = self._reserved_end

    def _reserve(self) -> None:
        end = self._reserved_end + BLOCK
        tmp = self.path.with_name(FILE + ".tmp")
        with open(tmp, "w") as f:
            f.write(f"{end}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._reserved_end = end

    def next_id(self) -> int:
        if self._next >= self._reserved_end:
            self._next = max(self._next, self._reserved_end)
            self._reserve()
        pid = self._next
        self._next += 1
        return pid

    def issued(self, producer_id: int) -> bool:
        return 0 <= producer_id < self._reserved_end
