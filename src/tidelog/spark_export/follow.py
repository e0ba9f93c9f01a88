"""`tidelog export --follow`: one Spark session, an export run each time a segment closes.

The one-shot `tidelog export` pays for a JVM and a Spark session per run (about 10 s on a small
machine), so a table refreshed every few minutes is minutes behind. The follower starts the
session once and then loops:

1. every `poll_interval` seconds it lists the partitions' segment files (a directory listing per
   partition, no file read) and compares each partition's active segment base offset with the
   one it saw before its last run; when one moved (a segment closed), or a topic appeared, it
   runs `ExportJob` — the same run, manifest and exactly-once rules as the one-shot command;
2. after each run and each poll it measures each topic's **lag**: records behind (the partition's
   log end offset, active segment included, minus the manifest's `next_offset`) and seconds behind
   (now minus the first timestamp of the batch holding the oldest record not yet in the table; 0
   when none is missing), shown on the progress display and served as Prometheus metrics.

Freshness: a record reaches the table at most (the broker's `segment.ms`, or the time to fill
`segment.bytes`) + `poll_interval` + one run's duration after it was appended; an open
transaction holds its partition's export at its first offset until its marker is in a closed
segment, as in every run.

Stopping: SIGTERM or SIGINT (or `stop`) ends the loop after the run in progress; a run is never
cut in half by the follower, and a crash or kill -9 at any point is recovered by the next run like
any interrupted run (see `job`). Each run takes the warehouse's lock for its duration, so a
one-shot `tidelog export` started meanwhile is refused while a run is in progress, not between
runs.

Metrics (text format, `GET /metrics` on `metrics_port`; off when 0):
`tidelog_export_lag_records{topic}`, `tidelog_export_lag_seconds{topic}`,
`tidelog_export_rows_total{topic}`, `tidelog_export_runs_total`,
`tidelog_export_last_run_duration_seconds`, `tidelog_export_last_run_end_timestamp_seconds`.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tidelog.log import records as rb

from . import segments as seg
from .job import INTERNAL_TOPICS, ExportJob, ExportOptions
from .manifest import Manifest
from .progress import Progress

log = logging.getLogger("tidelog.spark_export")

LAG_LINE_EVERY = 10.0  # seconds between lag lines on the progress display while nothing runs


@dataclass(frozen=True, slots=True)
class TopicLag:
    topic: str
    records: int  # records appended to the log and not yet in the table (active segments included)
    seconds: float  # age of the oldest record not yet in the table; 0.0 when none is missing


def _log_end(segment: seg.SegmentFile) -> int:
    """The segment's next offset: scans from its last offset-index entry, not from its start."""
    end = segment.base_offset
    for _buf, _pos, f in seg.batches(segment.path, seg.start_position(segment, seg.NO_LIMIT, None)):
        end = f[rb.H_BASE_OFFSET] + f[rb.H_LAST_OFFSET_DELTA] + 1
    return end


def _first_timestamp_from(segments: list[seg.SegmentFile], offset: int) -> int | None:
    """The first timestamp of the batch that holds `offset` or the first batch after it."""
    for i, s in enumerate(segments):
        if i + 1 < len(segments) and segments[i + 1].base_offset <= offset:
            continue
        for _buf, _pos, f in seg.batches(s.path, seg.start_position(s, offset, None)):
            if f[rb.H_BASE_OFFSET] + f[rb.H_LAST_OFFSET_DELTA] >= offset:
                return int(f[rb.H_FIRST_TS])
    return None


def partition_lag(partition_dir: Path, next_offset: int, now_ms: int) -> tuple[int, float]:
    """(records, seconds) by which a partition's table rows trail its log; read-only."""
    segments = seg.list_segments(partition_dir)
    if not segments:
        return 0, 0.0
    start = max(next_offset, segments[0].base_offset)
    records = max(0, _log_end(segments[-1]) - start)
    if not records:
        return 0, 0.0
    ts = _first_timestamp_from(segments, start)
    return records, max(0.0, (now_ms - ts) / 1000) if ts is not None else 0.0


def topic_lags(log_dirs: Sequence[Path], topics: list[str], manifest: Manifest, now_ms: int) -> list[TopicLag]:
    out = []
    for topic in topics:
        state = manifest.topics.get(topic)
        records, seconds = 0, 0.0
        for p, pdir in seg.partition_dirs(log_dirs, topic).items():
            ps = state.partitions.get(p) if state else None
            r, s = partition_lag(pdir, ps.next_offset if ps else 0, now_ms)
            records, seconds = records + r, max(seconds, s)
        out.append(TopicLag(topic, records, seconds))
    return out


def closed_signature(log_dirs: Sequence[Path], topics: list[str]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> base offset of its active segment: it moves when a segment closes."""
    sig = {}
    for topic in topics:
        for p, pdir in seg.partition_dirs(log_dirs, topic).items():
            segments = seg.list_segments(pdir)
            if segments:
                sig[(topic, p)] = segments[-1].base_offset
    return sig


class FollowMetrics:
    """The follower's figures, read by the metrics endpoint's threads (a lock guards them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.lags: dict[str, TopicLag] = {}
        self.rows: dict[str, int] = {}
        self.runs = 0
        self.last_run_seconds = 0.0
        self.last_run_end = 0.0

    def record_run(self, rows: dict[str, int], seconds: float) -> None:
        with self._lock:
            for topic, n in rows.items():
                self.rows[topic] = self.rows.get(topic, 0) + n
            self.runs += 1
            self.last_run_seconds = seconds
            self.last_run_end = time.time()

    def record_lags(self, lags: list[TopicLag]) -> None:
        with self._lock:
            self.lags = {lag.topic: lag for lag in lags}

    def render(self) -> str:
        with self._lock:
            lags = sorted(self.lags.items())
            lines = [
                "# TYPE tidelog_export_lag_records gauge",
                *(f'tidelog_export_lag_records{{topic="{t}"}} {lag.records}' for t, lag in lags),
                "# TYPE tidelog_export_lag_seconds gauge",
                *(f'tidelog_export_lag_seconds{{topic="{t}"}} {lag.seconds:.3f}' for t, lag in lags),
                "# TYPE tidelog_export_rows_total counter",
                *(f'tidelog_export_rows_total{{topic="{t}"}} {n}' for t, n in sorted(self.rows.items())),
                "# TYPE tidelog_export_runs_total counter",
                f"tidelog_export_runs_total {self.runs}",
                "# TYPE tidelog_export_last_run_duration_seconds gauge",
                f"tidelog_export_last_run_duration_seconds {self.last_run_seconds:.3f}",
                "# TYPE tidelog_export_last_run_end_timestamp_seconds gauge",
                f"tidelog_export_last_run_end_timestamp_seconds {self.last_run_end:.3f}",
            ]
        return "\n".join(lines) + "\n"

    def serve(self, port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
        """Serves `GET /metrics` from a daemon thread; the caller shuts the server down."""
        metrics = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                body = metrics.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        server = ThreadingHTTPServer((host, port), Handler)
        threading.Thread(target=server.serve_forever, name="export-metrics", daemon=True).start()
        return server


class Follower:
    """Runs `ExportJob` whenever a segment closes until `stop` is set; see the module docstring."""

    def __init__(
        self,
        spark,
        options: ExportOptions,
        progress: Progress,
        metrics: FollowMetrics,
        stop: threading.Event,
        poll_interval: float = 1.0,
    ) -> None:
        self.spark = spark
        self.options = options
        self.progress = progress
        self.metrics = metrics
        self.stop = stop
        self.poll_interval = poll_interval
        self.log_dirs = [Path(d).resolve() for d in options.log_dirs]
        self.warehouse = Path(options.warehouse).resolve()

    def _topics(self) -> list[str]:
        if self.options.topics:
            return list(self.options.topics)
        return [t for t in seg.topics_on_disk(self.log_dirs) if t not in INTERNAL_TOPICS]

    def _run_once(self) -> None:
        t0 = time.monotonic()
        summaries = ExportJob(self.spark, self.options, self.progress).run()
        self.metrics.record_run({s.topic: s.rows for s in summaries}, time.monotonic() - t0)

    def _measure(self, topics: list[str]) -> list[TopicLag]:
        lags = topic_lags(self.log_dirs, topics, Manifest.load(self.warehouse), int(time.time() * 1000))
        self.metrics.record_lags(lags)
        return lags

    def _show(self, lags: list[TopicLag]) -> None:
        text = "; ".join(f"{lag.topic} {lag.records} records, {lag.seconds:.1f} s" for lag in lags)
        self.progress.line(f"lag behind the log: {text or 'no topic'}")

    def run(self) -> int:
        """Loops until `stop` is set; returns the number of runs."""
        seen: dict[tuple[str, int], int] | None = None
        shown = 0.0
        while not self.stop.is_set():
            topics = self._topics()
            now = closed_signature(self.log_dirs, topics)
            ran = now != seen
            if ran:
                self._run_once()  # a segment closing during the run moves `now` again: next poll runs
                seen = now
            lags = self._measure(topics)
            if ran or time.monotonic() - shown >= LAG_LINE_EVERY:
                self._show(lags)
                shown = time.monotonic()
            self.stop.wait(self.poll_interval)
        return self.metrics.runs


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set `stop`: the loop ends after the run in progress (main thread only)."""

    def handler(signum, _frame) -> None:
        log.info("export --follow: %s, stopping after the run in progress", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
