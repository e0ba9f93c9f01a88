"""Progress of an export run: a bar per topic on a terminal, plain lines otherwise, a summary table.

Each topic's write is one Spark job group whose tasks read the topic's segments (a few small
ones per task); a daemon thread
polls Spark's status tracker for the group's completed tasks twice a second. On a terminal the
topic's line is redrawn in place (`\\r`); elsewhere (a log file, CI) a line is logged when a
quarter more of the tasks is done, so logs stay short.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TextIO

log = logging.getLogger("tidelog.spark_export")

BAR_WIDTH = 30


@dataclass
class TopicSummary:
    topic: str
    partitions: int = 0
    segments: int = 0
    rows: int = 0
    latest_rows: int | None = None
    files_rewritten: int = 0
    gaps: list[tuple[int, int, int]] = field(default_factory=list)  # (partition, from, to)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {
            "partitions": self.partitions,
            "segments": self.segments,
            "rows": self.rows,
            "latest_rows": self.latest_rows,
            "files_rewritten": self.files_rewritten,
            "gaps": [list(g) for g in self.gaps],
            "seconds": round(self.seconds, 3),
        }


class Progress:
    def __init__(self, stream: TextIO | None = None, tty: bool | None = None, interval: float = 0.5) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = interval

    def topic(self, spark, topic: str, total_tasks: int) -> _TopicProgress:
        return _TopicProgress(self, spark, topic, total_tasks)

    def line(self, text: str) -> None:
        if self.tty:
            self.stream.write(text + "\n")
            self.stream.flush()
        else:
            log.info("%s", text)

    def summary(self, run_id: str, topics: list[TopicSummary], elapsed: float) -> str:
        rows = [("topic", "partitions", "segments", "rows", "latest", "rewritten", "gaps", "seconds")]
        for t in topics:
            rows.append(
                (
                    t.topic,
                    str(t.partitions),
                    str(t.segments),
                    f"{t.rows:,}",
                    "-" if t.latest_rows is None else f"{t.latest_rows:,}",
                    str(t.files_rewritten),
                    ", ".join(f"p{p}:[{a},{b})" for p, a, b in t.gaps) or "-",
                    f"{t.seconds:.1f}",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        lines = [
            f"export run {run_id}: {sum(t.rows for t in topics):,} rows in {elapsed:.1f}s",
            fmt(rows[0]),
            fmt(tuple("-" * w for w in widths)),
        ]
        lines += [fmt(r) for r in rows[1:]]
        text = "\n".join(lines)
        if self.tty:
            self.stream.write(text + "\n")
            self.stream.flush()
        else:
            for line in lines:
                log.info("%s", line)
        return text


class _TopicProgress:
    """Context manager around one topic's Spark work."""

    def __init__(self, parent: Progress, spark, topic: str, total: int) -> None:
        self.parent, self.spark, self.topic, self.total = parent, spark, topic, max(total, 1)
        self.group = f"tidelog-export-{topic}-{id(self)}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._logged_quarter = -1
        self.started = time.monotonic()

    def __enter__(self) -> _TopicProgress:
        self.spark.sparkContext.setJobGroup(self.group, f"export {self.topic}")
        self._draw(0)
        self._thread = threading.Thread(target=self._poll, name=f"progress-{self.topic}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        if exc[0] is None:
            self._draw(self.total, final=True)
        elif self.parent.tty:
            self.parent.stream.write("\n")

    def _done(self) -> int:
        tracker = self.spark.sparkContext.statusTracker()
        done = 0
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is not None and stage.numTasks == self.total:
                    done = max(done, stage.numCompletedTasks)
        return done

    def _poll(self) -> None:
        while not self._stop.wait(self.parent.interval):
            try:
                self._draw(min(self._done(), self.total))
            except Exception:  # noqa: BLE001 - the tracker is best effort; progress must never fail a run
                pass

    def _draw(self, done: int, final: bool = False) -> None:
        elapsed = time.monotonic() - self.started
        if self.parent.tty:
            filled = BAR_WIDTH * done // self.total
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            end = "\n" if final else ""
            self.parent.stream.write(f"\r{self.topic:<24} [{bar}] {done}/{self.total} tasks {elapsed:6.1f}s{end}")
            self.parent.stream.flush()
        else:
            quarter = 4 * done // self.total
            if quarter > self._logged_quarter:
                self._logged_quarter = quarter
                log.info("export %s: %d/%d tasks (%.1fs)", self.topic, done, self.total, elapsed)
