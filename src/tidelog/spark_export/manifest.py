"""The export manifest: what has been exported, and the one run that may be in flight.

Stored as `<warehouse>/_tidelog/manifest.json`, rewritten atomically (temp file, fsync, rename,
fsync of the directory): a crash leaves the old or the new manifest, never a torn one.

    {"version": 1,
     "table_format": "parquet" | "delta" | "iceberg", # chosen by the first run, kept
     "serial": int,                                   # runs begun so far (Delta's txnVersion)
     "topics": {"<topic>": {"compacted": bool, "latest_location": str | null,
                            "formats": {"value" | "key": {"format": "registry",  # typed columns:
                                                         "arrow": {...},  # the union (arrow_types)
                                                         "schemas": [str],  # Avro versions seen
                                                         "type": str,  # Spark DDL of the union
                                                         "strategy": str, "subjects": [str]}},
                            "partitions": {"<n>": {"next_offset": int,      # all below: exported
                                                   "segments": [str],       # segment files consumed
                                                   "gaps": [[from, to]]}}}},  # lost to retention
     "pending": null | {"run_id": str, "serial": int, "phase": "staged" | "published",
                        "topics": {...as above...},
                        "replaced": [path]},          # files the run's small-file rewrite replaces
     "garbage": [path],                               # committed-away files still to delete
     "runs": [{"run_id", "finished", "topics": {"<topic>": {"rows", "segments", ...}}}]}

Protocol of a run (see `job`): (1) `begin` records the run as pending/staged with the state it
will commit; (2) files are written under the run's staging directory and moved into the tables
with names carrying the run id; (3) `mark_published`; (4) files replaced by the small-file
rewrite are deleted; (5) `commit` installs the pending state and clears `pending`. Recovery at
the next start: a run still `staged` is rolled back (its run-id files are deleted, nothing else
was touched); a run `published` is rolled forward (steps 4-5). Either way each record is in the
table exactly once. Delta tables (`delta`) use the same `begin`/`commit` pair; their pending run is
always completed (re-executed: a table whose txn version shows the run's commit is skipped), never
undone; so are Iceberg's (`iceberg_job`: a table whose snapshot summary shows the run id is skipped).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from tidelog.log.atomic import replace_file

MANIFEST_DIR = "_tidelog"
MANIFEST = "manifest.json"
KEEP_RUNS = 50


@dataclass
class PartitionState:
    next_offset: int = 0
    segments: list[str] = field(default_factory=list)
    gaps: list[list[int]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"next_offset": self.next_offset, "segments": list(self.segments), "gaps": [list(g) for g in self.gaps]}

    @classmethod
    def from_json(cls, d: dict) -> PartitionState:
        return cls(int(d["next_offset"]), list(d.get("segments", [])), [list(g) for g in d.get("gaps", [])])


@dataclass
class TopicState:
    partitions: dict[int, PartitionState] = field(default_factory=dict)
    compacted: bool = False
    latest_location: str | None = None
    # typed columns (`typed`): column -> {"format": "registry", "arrow": <union>, "type": <Spark DDL>,
    # ...} (`registry_schemas`); no entry: the column holds the record's bytes
    formats: dict[str, dict] = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {
            "compacted": self.compacted,
            "latest_location": self.latest_location,
            "partitions": {str(p): s.to_json() for p, s in sorted(self.partitions.items())},
        }
        if self.formats:
            out["formats"] = copy.deepcopy(self.formats)
        return out

    @classmethod
    def from_json(cls, d: dict) -> TopicState:
        return cls(
            {int(p): PartitionState.from_json(s) for p, s in d.get("partitions", {}).items()},
            bool(d.get("compacted", False)),
            d.get("latest_location"),
            copy.deepcopy(d.get("formats") or {}),
        )


@dataclass
class PendingRun:
    run_id: str
    phase: str  # "staged" | "published"
    topics: dict[str, TopicState]
    replaced: list[str] = field(default_factory=list)
    serial: int = 0

    def to_json(self) -> dict:
        return {
            "run_id": self.run_id,
            "serial": self.serial,
            "phase": self.phase,
            "replaced": list(self.replaced),
            "topics": {t: s.to_json() for t, s in self.topics.items()},
        }

    @classmethod
    def from_json(cls, d: dict) -> PendingRun:
        return cls(
            d["run_id"],
            d["phase"],
            {t: TopicState.from_json(s) for t, s in d["topics"].items()},
            list(d.get("replaced", [])),
            int(d.get("serial", 0)),
        )


FORMATS = ("parquet", "delta", "iceberg")


class TableFormatError(ValueError):
    """A table format the warehouse does not hold (or no such format)."""


class Manifest:
    def __init__(self, warehouse: str | Path) -> None:
        self.warehouse = Path(warehouse).resolve()
        self.topics: dict[str, TopicState] = {}
        self.pending: PendingRun | None = None
        self.garbage: list[str] = []
        self.runs: list[dict] = []
        self.table_format = "parquet"
        self.serial = 0

    @property
    def dir(self) -> Path:
        return self.warehouse / MANIFEST_DIR

    @property
    def path(self) -> Path:
        return self.dir / MANIFEST

    def staging_dir(self, run_id: str) -> Path:
        return self.dir / "staging" / run_id

    @classmethod
    def load(cls, warehouse: str | Path) -> Manifest:
        m = cls(warehouse)
        if m.path.exists():
            doc = json.loads(m.path.read_text())
            m.topics = {t: TopicState.from_json(s) for t, s in doc.get("topics", {}).items()}
            m.pending = PendingRun.from_json(doc["pending"]) if doc.get("pending") else None
            m.garbage = list(doc.get("garbage", []))
            m.runs = list(doc.get("runs", []))
            m.table_format = doc.get("table_format", "parquet")
            m.serial = int(doc.get("serial", 0))
        return m

    def to_json(self) -> dict:
        return {
            "version": 1,
            "table_format": self.table_format,
            "serial": self.serial,
            "topics": {t: s.to_json() for t, s in sorted(self.topics.items())},
            "pending": self.pending.to_json() if self.pending else None,
            "garbage": list(self.garbage),
            "runs": self.runs[-KEEP_RUNS:],
        }

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        replace_file(self.path, json.dumps(self.to_json(), indent=1).encode(), sync_dir=True)

    def resolve_format(self, wanted: str | None) -> str:
        """The table format of the next run: the one the warehouse holds (chosen by its first run),
        else `wanted`, else parquet; TableFormatError when `wanted` is another one."""
        if wanted not in (None,) + FORMATS:
            raise TableFormatError(f"unknown table format {wanted!r} (one of {', '.join(FORMATS)})")
        if self.topics or self.pending:
            if wanted and wanted != self.table_format:
                raise TableFormatError(
                    f"{self.warehouse} holds {self.table_format} tables; "
                    f"a run with --table-format {wanted} needs another warehouse"
                )
            return self.table_format
        return wanted or "parquet"

    def topic(self, name: str) -> TopicState:
        """The committed state of a topic (a fresh one when never exported)."""
        return copy.deepcopy(self.topics.get(name) or TopicState())

    def pending_offsets(self, topic: str) -> dict[int, tuple[int, int]]:
        """The pending run's [start, end) per partition of `topic`: from the committed state's
        next offset to the pending state's (what a table format completing the run re-delivers)."""
        assert self.pending is not None
        old = self.topics.get(topic) or TopicState()
        offsets = {}
        for n, ps in self.pending.topics[topic].partitions.items():
            lo = old.partitions[n].next_offset if n in old.partitions else 0
            if ps.next_offset > lo:
                offsets[n] = (lo, ps.next_offset)
        return offsets

    # -- the run protocol -------------------------------------------------------------------

    def begin(self, run_id: str, topics: dict[str, TopicState]) -> None:
        if self.pending is not None:
            raise RuntimeError(f"run {self.pending.run_id} is still pending; recover first")
        self.serial += 1
        self.pending = PendingRun(run_id, "staged", copy.deepcopy(topics), serial=self.serial)
        self.save()

    def record_formats(self, topic: str, formats: dict[str, dict]) -> None:
        """Record (and save) `formats`, the typed columns' entries the pending run's files of
        `topic` were written with, in its pending state: inferred JSON columns may have gained
        fields while the files were written (`direct.write_inferring`). A table commit of the
        files comes after it, so completing the run after a crash decodes with these."""
        assert self.pending is not None
        self.pending.topics[topic].formats = copy.deepcopy(formats)
        self.save()

    def mark_published(self, replaced: list[str]) -> None:
        assert self.pending is not None
        self.pending.phase = "published"
        self.pending.replaced = list(replaced)
        self.save()

    def commit(self, summary: dict) -> None:
        """Install the pending state; previous `_latest` versions it replaced become garbage."""
        assert self.pending is not None
        for name, state in self.pending.topics.items():
            old = self.topics.get(name)
            if old and old.latest_location and old.latest_location != state.latest_location:
                self.garbage.append(old.latest_location)
            self.topics[name] = state
        self.runs.append({"run_id": self.pending.run_id, "finished": time.time(), **summary})
        self.pending = None
        self.save()

    def abandon(self) -> None:
        self.pending = None
        self.save()
